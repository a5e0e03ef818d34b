import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

/**
 * A stream silent while the model thinks carries `: GATEHOUSE PROCESSING` comments
 * (GATEHOUSE_STREAM_KEEPALIVE_MS), so that a proxy's idle timeout does not cut it: each between
 * two whole events, on a translated stream and on a lane's relayed one, and unseen by the
 * official clients, which read the answer and its usage as without them.
 */

const COMMENT = ': GATEHOUSE PROCESSING';
const reply = {
  text: 'after a long thought, the answer',
  usage: { prompt_tokens: 12, completion_tokens: 7 },
};
/** The upstream thinks for a second mid-answer, after its first text delta (Anthropic's 4th event). */
const paused = { reply, pause: { afterEvents: 4, ms: 1000 } };
const messages = [{ role: 'user' as const, content: 'think about it' }];

describe('keep-alive comments on a silent stream', () => {
  let mock: MockUpstream;
  let gw: TestGateway;
  let off: TestGateway;

  beforeAll(async () => {
    const up = await startUpstreams();
    mock = up.mock;
    gw = await startTestGateway('sqlite', { env: { ...up.env, GATEHOUSE_STREAM_KEEPALIVE_MS: '200' } });
    off = await startTestGateway('sqlite', { env: { ...up.env, GATEHOUSE_STREAM_KEEPALIVE_MS: '0' } });
  });
  afterAll(async () => {
    await gw?.stop();
    await off?.stop();
    await mock?.close();
  });
  beforeEach(() => {
    mock.reset();
    mock.enqueue(paused);
  });

  /** A streamed call's raw body, and how it was served. */
  async function stream(g: TestGateway, path: '/chat/completions' | '/messages') {
    const res = await fetch(`${g.url}/api/v1${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${g.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'test/claude', max_tokens: 64, stream: true, messages }),
    });
    expect(res.status).toBe(200);
    return { route: res.headers.get('x-gatehouse-route'), body: await res.text() };
  }

  /**
   * The body's blocks (split on the blank lines), each the comment or one whole event, and the
   * text of the events' deltas (a chat chunk's content, a /messages text delta).
   */
  function blocks(body: string) {
    expect(body.endsWith('\n\n')).toBe(true);
    const all = body.slice(0, -2).split('\n\n');
    let text = '';
    for (const block of all) {
      if (block === COMMENT) continue;
      const m = /^(?:event: ([\w.]+)\n)?data: (.*)$/.exec(block);
      expect(m, block).not.toBeNull();
      const [, name, data] = m as RegExpExecArray;
      if (data === '[DONE]') continue;
      const json = JSON.parse(data as string);
      if (name) expect(json.type).toBe(name);
      text += json.choices?.[0]?.delta?.content ?? json.delta?.text ?? '';
    }
    return { all, text };
  }

  it.each([
    ['/chat/completions', 'translated'],
    ['/messages', 'passthrough'],
  ] as const)('%s (%s): comments while the upstream is silent, each between whole events', async (path, route) => {
    const served = await stream(gw, path);
    expect(served.route).toBe(route);
    const { all, text } = blocks(served.body);
    expect(all.filter((b) => b === COMMENT).length).toBeGreaterThanOrEqual(1);
    // The answer is all there: the comments took nothing from it.
    expect(text).toBe(reply.text);
    expect(mock.requests).toHaveLength(1);
  });

  it.each([
    '/chat/completions',
    '/messages',
  ] as const)('%s: none when GATEHOUSE_STREAM_KEEPALIVE_MS=0', async (path) => {
    const served = await stream(off, path);
    const { all, text } = blocks(served.body);
    expect(all).not.toContain(COMMENT);
    expect(text).toBe(reply.text);
    expect(served.body).not.toContain(': GATEHOUSE');
  });

  it('the openai client reads the paused chat stream to its end, text and usage', async () => {
    const openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
    const s = openai.chat.completions.stream({
      model: 'test/claude',
      messages,
      stream_options: { include_usage: true },
    });
    const final = await s.finalChatCompletion();
    expect(final.choices[0]?.message.content).toBe(reply.text);
    expect(final.choices[0]?.finish_reason).toBe('stop');
    expect(final.usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 7 });
  });

  it('the Anthropic client reads the paused messages stream to its end, text and usage', async () => {
    const anthropic = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: gw.apiKey, maxRetries: 0 });
    const types: string[] = [];
    const s = anthropic.messages.stream({ model: 'test/claude', max_tokens: 64, messages });
    s.on('streamEvent', (e) => types.push(e.type));
    const final = await s.finalMessage();
    expect(final.content).toEqual([expect.objectContaining({ type: 'text', text: reply.text })]);
    expect(final.stop_reason).toBe('end_turn');
    expect(final.usage).toMatchObject({ input_tokens: 12, output_tokens: 7 });
    expect(types.at(-1)).toBe('message_stop');
  });
});
