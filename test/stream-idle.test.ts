/**
 * GATEHOUSE_STREAM_IDLE_TIMEOUT_MS against GATEHOUSE_UPSTREAM_TIMEOUT_MS: once a stream started,
 * a silence longer than the idle timeout cuts it (well before the attempt deadline), and a stream
 * that keeps sending within it runs as long as it takes, however long the idle timeout.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

// Ten times the pauses of the stream that must complete: a loaded machine's event-loop delays do
// not make those look idle.
const IDLE_MS = 1_000;
/** Far above the silences below: only the idle timeout may cut these streams. */
const DEADLINE_MS = 10_000;
const TEXT = Array.from({ length: 24 }, (_, i) => `word${i}`).join(' ');

describe('stream idle timeout', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  beforeAll(async () => {
    const up = await startUpstreams();
    mock = up.mock;
    gw = await startTestGateway('sqlite', {
      env: {
        ...up.env,
        GATEHOUSE_UPSTREAM_TIMEOUT_MS: String(DEADLINE_MS),
        GATEHOUSE_STREAM_IDLE_TIMEOUT_MS: String(IDLE_MS),
      },
    });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => mock.reset());

  /** A streamed chat completion: its data events (JSON) and whether it ended with [DONE]. */
  async function stream(model: string) {
    const res = await fetch(`${gw.url}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'count for me' }] }),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    const events = text
      .split('\n\n')
      .filter((e) => e.startsWith('data: ') && e !== 'data: [DONE]')
      .map((e) => JSON.parse(e.slice(6)));
    const content = events.map((e) => e.choices?.[0]?.delta?.content ?? '').join('');
    return { events, content, done: text.trim().endsWith('data: [DONE]') };
  }

  // A lane (OpenAI to OpenAI) and a translation (to Anthropic): both adapters get the idle timeout.
  describe.each(['test/gpt', 'test/claude'])('%s', (model) => {
    it('cuts a stream silent longer than the idle timeout, shorter than the deadline, and runs it once', async () => {
      mock.enqueue({ reply: { text: TEXT }, eventDelayMs: 3 * IDLE_MS });
      const { events, done } = await stream(model);
      const last = events.at(-1);
      expect(last.error).toMatchObject({ code: 502, message: expect.stringMatching(/timed out/) });
      expect(last.choices[0].finish_reason).toBe('error');
      expect(done).toBe(true);
      // Cut once started: not run again elsewhere (nor on the same provider).
      expect(mock.requests).toHaveLength(1);
    });

    it('completes a stream that pauses less than the idle timeout, however long it takes in all', async () => {
      mock.enqueue({ reply: { text: TEXT }, eventDelayMs: 100 });
      const t0 = Date.now();
      const { events, content, done } = await stream(model);
      // The mock waited 100 ms between each of its events: longer in all than the idle timeout.
      expect(Date.now() - t0).toBeGreaterThan(IDLE_MS);
      expect(content).toBe(TEXT);
      expect(events.some((e) => e.error)).toBe(false);
      expect(events.some((e) => e.choices?.[0]?.finish_reason === 'stop')).toBe(true);
      expect(done).toBe(true);
    });
  });
});
