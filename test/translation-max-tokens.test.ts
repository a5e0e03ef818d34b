/**
 * Anthropic requires `max_tokens`; an OpenAI-format caller that names no limit expects none. A
 * call translated to Anthropic without a limit gets the model's maximum output as the catalog
 * knows it for the endpoint (its `max_completion_tokens`), 4096 only when that is unknown; the
 * caller's own limit is sent as it is. Real gateway, real sockets, the mock upstream recording
 * what reached Anthropic.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

const MAX = 64000;

let gw: TestGateway;
let mock: MockUpstream;
let call: ReturnType<typeof client>;
beforeAll(async () => {
  const up = await startUpstreams([
    {
      id: 'max/claude',
      endpoints: [
        {
          provider: 'anthropic',
          upstream_model: 'claude-max',
          pricing: { prompt: 3, completion: 15 },
          max_completion_tokens: MAX,
        },
      ],
    },
  ]);
  mock = up.mock;
  gw = await startTestGateway('sqlite', { env: { ...up.env, GATEHOUSE_RATE_LIMIT_REQUESTS: '1000' } });
  await adminClient(gw.url)('POST', '/admin/credits', {
    organization_id: gw.organizationId,
    amount_usd: 100,
  });
  call = client(gw.url, gw.apiKey);
});
afterAll(async () => {
  await gw?.stop();
  await mock?.close();
});
beforeEach(() => mock.reset());

/** The body of the one request that reached Anthropic's /messages. */
function sentToAnthropic(): any {
  expect(mock.requests).toHaveLength(1);
  expect(mock.requests[0]?.path).toMatch(/\/anthropic\/v1\/messages$/);
  return mock.requests[0]?.body;
}

describe("a translated call without a limit gets the model's maximum output", () => {
  it("/chat/completions without max_tokens: the catalog's maximum, streamed or not", async () => {
    const res = await call('POST', '/chat/completions', {
      model: 'max/claude',
      messages: [{ role: 'user', content: 'Write a long document.' }],
    });
    expect(res.status).toBe(200);
    expect(sentToAnthropic().max_tokens).toBe(MAX);

    mock.reset();
    const streamed = await fetch(`${gw.url}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'max/claude',
        messages: [{ role: 'user', content: 'Hi' }],
        stream: true,
      }),
    });
    expect(streamed.status).toBe(200);
    await streamed.text();
    expect(sentToAnthropic()).toMatchObject({ max_tokens: MAX, stream: true });
  });

  it('/responses without max_output_tokens: the same maximum; with it, the caller’s', async () => {
    const res = await call('POST', '/responses', { model: 'max/claude', input: 'Edit this file.' });
    expect(res.status).toBe(200);
    expect(sentToAnthropic().max_tokens).toBe(MAX);

    mock.reset();
    const capped = await call('POST', '/responses', {
      model: 'max/claude',
      input: 'Edit this file.',
      max_output_tokens: 900,
    });
    expect(capped.status).toBe(200);
    expect(sentToAnthropic().max_tokens).toBe(900);
  });

  it('with thinking and no limit: the maximum, the budget below it', async () => {
    const res = await call('POST', '/chat/completions', {
      model: 'max/claude',
      messages: [{ role: 'user', content: 'Think, then answer.' }],
      reasoning_effort: 'high',
    });
    expect(res.status).toBe(200);
    expect(sentToAnthropic()).toMatchObject({
      max_tokens: MAX,
      thinking: { type: 'enabled', budget_tokens: 16384 },
    });
  });

  it("the caller's max_tokens is sent as it is; a model whose maximum is unknown gets 4096", async () => {
    const capped = await call('POST', '/chat/completions', {
      model: 'max/claude',
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 300,
    });
    expect(capped.status).toBe(200);
    expect(sentToAnthropic().max_tokens).toBe(300);

    // test/claude declares no max_completion_tokens.
    mock.reset();
    const unknown = await call('POST', '/chat/completions', {
      model: 'test/claude',
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(unknown.status).toBe(200);
    expect(sentToAnthropic().max_tokens).toBe(4096);
  });
});
