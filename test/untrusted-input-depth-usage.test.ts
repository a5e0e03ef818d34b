import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TestGateway } from './support/gateway.js';
import { client } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { gatewayWithUpstreams } from './support/upstreams.js';

/** A JSON value nested `depth` levels deep, as text (JSON.stringify would recurse itself). */
const nested = (depth: number, leaf = '1') => '{"a":'.repeat(depth) + leaf + '}'.repeat(depth);

describe('never a 500 from tenant input or a provider numbers', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ gw, mock, stop } = await gatewayWithUpstreams({ GATEHOUSE_RATE_LIMIT_REQUESTS: '1000' }));
  });
  afterAll(async () => stop?.());
  beforeEach(() => mock.reset());

  /** The generation row as written (after the accounting flush). */
  async function stored(id: string) {
    expect(id).toBeTruthy();
    await gw.services.accountant.flush();
    return gw.services.db
      .selectFrom('generations')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
  }

  const raw = (path: string, text: string, headers: Record<string, string> = {}) =>
    fetch(`${gw.url}/api/v1${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json', ...headers },
      body: text,
    });

  it('refuses a body nested 100,000 deep with a 400 in the caller format on every inference endpoint', async () => {
    const deepSchema = nested(100_000);
    const bodies: [string, string][] = [
      [
        '/chat/completions',
        `{"model":"test/gpt","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":${deepSchema}}}]}`,
      ],
      [
        '/messages',
        `{"model":"test/claude","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":${deepSchema}}]}`,
      ],
      [
        '/responses',
        `{"model":"test/gpt","input":"hi","tools":[{"type":"function","name":"f","parameters":${deepSchema}}]}`,
      ],
    ];
    for (const [path, text] of bodies) {
      const res = await raw(path, text);
      const body = (await res.json()) as any;
      expect(res.status, path).toBe(400);
      expect(body.error.message, path).toMatch(/nested deeper than 128/);
      if (path === '/messages') expect(body.type).toBe('error');
    }
    expect(mock.requests).toHaveLength(0);
  });

  it('accepts a body nested within the limit', async () => {
    const res = await raw(
      '/chat/completions',
      `{"model":"test/gpt","messages":[{"role":"user","content":"hi"}],"metadata_probe":${nested(100)}}`,
    );
    expect(res.status).not.toBe(500);
    expect(res.status).not.toBe(400);
  });

  it('bills a provider reporting negative usage as estimated, keeps the record and flags it', async () => {
    const call = client(gw.url, gw.apiKey);
    for (const [path, body] of [
      ['/chat/completions', { model: 'test/gpt', messages: [{ role: 'user', content: 'hello there' }] }],
      [
        '/messages',
        { model: 'test/claude', max_tokens: 50, messages: [{ role: 'user', content: 'hello there' }] },
      ],
    ] as const) {
      mock.enqueue({ reply: { text: 'fine', usage: { prompt_tokens: -500, completion_tokens: -7 } } });
      const res = await call('POST', path, body);
      expect(res.status, path).toBe(200);
      const row = await stored(res.headers.get('x-gatehouse-generation-id') as string);
      expect(row.status).toBe('success');
      expect(row.prompt_tokens).toBeGreaterThanOrEqual(0); // estimated from the prompt's text
      expect(row.completion_tokens).toBeGreaterThanOrEqual(0);
      expect(row.cost_usd).toBeGreaterThanOrEqual(0);
      expect(row.usage_estimated).toBe(1);
      // (Anthropic's reader already floors the prompt's sum at 0; the completion is flagged.)
      expect(row.error_message).toMatch(/^usage_invalid: (prompt_tokens=-500, )?completion_tokens=-7$/);
      // The caller reads the flag too: the generation says its usage was estimated.
      expect((await call('GET', `/generation?id=${row.id}`)).body.data.usage_estimated).toBe(true);
    }
  });

  it('bills a stream whose provider reports negative usage, keeping its record', async () => {
    mock.enqueue({ reply: { text: 'streamed', usage: { prompt_tokens: 3, completion_tokens: -9 } } });
    const res = await raw(
      '/chat/completions',
      JSON.stringify({ model: 'test/gpt', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    );
    expect(res.status).toBe(200);
    await res.text();
    const row = await stored(res.headers.get('x-gatehouse-generation-id') as string);
    expect(row.status).toBe('success');
    expect(row.prompt_tokens).toBe(3);
    expect(row.completion_tokens).toBeGreaterThan(0);
    expect(row.error_message).toBe('usage_invalid: completion_tokens=-9');
  });
});
