/**
 * Anthropic requires `max_tokens`; an OpenAI-format caller that names no limit expects none. A
 * call translated to Anthropic without a limit gets the model's maximum output as the catalog
 * knows it for the endpoint (its `max_completion_tokens`), 4096 only when that is unknown; the
 * caller's own limit is sent as it is. The maximum of an Anthropic provider's models is learned
 * from its Models API (`GET /v1/models`) when the catalog does not state it. Real gateway, real
 * sockets, the mock upstream recording what reached Anthropic.
 */
import { Writable } from 'node:stream';
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

/** A gateway whose Anthropic provider's Models API (the mock's) lists `limits` — in two pages. */
async function gatewayLearning(opts: { listingFails?: boolean } = {}) {
  const up = await startUpstreams(
    [
      {
        id: 'learn/claude',
        endpoints: [{ provider: 'anthropic', upstream_model: 'claude-learn', pricing: {} }],
      },
    ],
    { anthropicLimits: true },
  );
  up.mock.models = ['claude-other-20250101', 'claude-learn-20250929', 'claude-unlisted-20250303'];
  up.mock.modelLimits = {
    'claude-other-20250101': { max_tokens: 8192 },
    'claude-learn-20250929': { max_tokens: 64000, max_input_tokens: 1_000_000 },
    'claude-unlisted-20250303': { max_tokens: 32000 },
  };
  up.mock.modelsPageSize = 2;
  if (opts.listingFails) up.mock.enqueue({ match: { format: 'anthropic-models' }, status: 500, times: 1000 });
  const logLines: string[] = [];
  const logStream = new Writable({
    write(chunk, _enc, done) {
      logLines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  const g = await startTestGateway('sqlite', {
    env: { ...up.env, GATEHOUSE_RATE_LIMIT_REQUESTS: '1000' },
    logStream,
  });
  await adminClient(g.url)('POST', '/admin/credits', { organization_id: g.organizationId, amount_usd: 100 });
  // The provider is asked in the background from start: wait for its answer (or refusal).
  const asked = () => up.mock.requests.filter((r) => r.format === 'anthropic-models').length;
  for (let i = 0; i < 1000 && asked() < (opts.listingFails ? 1 : 2); i++)
    await new Promise((r) => setTimeout(r, 10));
  const call = client(g.url, g.apiKey);
  if (!opts.listingFails)
    for (let i = 0; i < 1000; i++) {
      const m = await call('GET', '/models?q=learn/claude');
      if (m.body.data?.[0]?.top_provider?.max_completion_tokens) break;
      await new Promise((r) => setTimeout(r, 10));
    }
  up.mock.reset();
  const stop = async () => {
    await g.stop();
    await up.mock.close();
  };
  return { gw: g, mock: up.mock, call, logLines, stop };
}

describe("the maximum learned from Anthropic's Models API", () => {
  let learning: Awaited<ReturnType<typeof gatewayLearning>>;
  beforeAll(async () => {
    learning = await gatewayLearning();
  });
  afterAll(() => learning?.stop());
  beforeEach(() => learning.mock.reset());

  const sent = (): any => {
    expect(learning.mock.requests).toHaveLength(1);
    expect(learning.mock.requests[0]?.path).toMatch(/\/anthropic\/v1\/messages$/);
    return learning.mock.requests[0]?.body;
  };

  it('a catalog model the listing names by its dated id: /chat/completions without max_tokens asks for it', async () => {
    const res = await learning.call('POST', '/chat/completions', {
      model: 'learn/claude',
      messages: [{ role: 'user', content: 'Write a long document.' }],
    });
    expect(res.status, res.text).toBe(200);
    expect(sent().max_tokens).toBe(64000);
  });

  it('/models shows the learned output limit and, where it was assumed, the context length', async () => {
    const res = await learning.call('GET', '/models?q=learn/claude');
    expect(res.status).toBe(200);
    expect(res.body.data[0]).toMatchObject({
      id: 'learn/claude',
      context_length: 1_000_000,
      top_provider: { max_completion_tokens: 64000, context_length: 1_000_000 },
    });
  });

  it('an id the catalog does not list, passed through to Anthropic, gets its learned maximum', async () => {
    const res = await learning.call('POST', '/chat/completions', {
      model: 'claude-unlisted-20250303',
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(res.status, res.text).toBe(200);
    expect(sent()).toMatchObject({ model: 'claude-unlisted-20250303', max_tokens: 32000 });
  });

  it('the key the provider is asked with appears in no log line', () => {
    expect(learning.logLines.length).toBeGreaterThan(0);
    expect(learning.logLines.join('\n')).not.toContain('sk-operator-anthropic-00');
  });
});

describe('a Models API that fails at start', () => {
  it('leaves the gateway serving, with 4096 sent, and is logged without the key', async () => {
    const failing = await gatewayLearning({ listingFails: true });
    try {
      const res = await failing.call('POST', '/chat/completions', {
        model: 'learn/claude',
        messages: [{ role: 'user', content: 'Hi' }],
      });
      expect(res.status, res.text).toBe(200);
      expect(failing.mock.requests.filter((r) => r.format === 'anthropic-messages')).toHaveLength(1);
      expect(failing.mock.requests.find((r) => r.format === 'anthropic-messages')?.body.max_tokens).toBe(
        4096,
      );
      const warned = failing.logLines.filter((l) => l.includes('model discovery failed'));
      expect(warned.length).toBeGreaterThan(0);
      expect(JSON.parse(warned[0] as string)).toMatchObject({
        provider: 'anthropic',
        error: 'GET /v1/models answered 500',
      });
      expect(failing.logLines.join('\n')).not.toContain('sk-operator-anthropic-00');
    } finally {
      await failing.stop();
    }
  });
});
