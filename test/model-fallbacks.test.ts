import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

/**
 * Model fallbacks: the request's `models`, the catalog's `fallbacks`, and the context-window
 * fallback — across providers of different formats (OpenAI upstream first, Anthropic next).
 */
describe('model fallbacks', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let api: ReturnType<typeof client>;
  const price = { prompt: 1, completion: 2 };
  const reply = { text: 'served', usage: { prompt_tokens: 20, completion_tokens: 6 } };
  const failOpenAi = { status: 500, error: { message: 'boom' }, match: { path: /^\/openai\// } };
  const longPrompt = 'word '.repeat(200); // ~250 tokens by the 4-characters estimate

  beforeAll(async () => {
    const up = await startUpstreams([
      {
        id: 'test/gpt-fb',
        fallbacks: ['test/claude'],
        endpoints: [{ provider: 'openai', upstream_model: 'gpt-fb', pricing: price }],
      },
      {
        id: 'test/tiny',
        context_fallback: 'test/claude',
        endpoints: [{ provider: 'openai', upstream_model: 'gpt-tiny', context_length: 50, pricing: price }],
      },
      {
        id: 'test/pricey',
        endpoints: [
          {
            provider: 'anthropic',
            upstream_model: 'claude-pricey',
            pricing: { prompt: 1, completion: 2_000 },
          },
        ],
      },
      {
        id: 'test/tiny-alone',
        endpoints: [{ provider: 'openai', upstream_model: 'gpt-tiny', context_length: 50, pricing: price }],
      },
    ]);
    mock = up.mock;
    gw = await startTestGateway('sqlite', { env: up.env });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
    api = client(gw.url, gw.apiKey);
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => mock.reset());

  const chat = (over: object) => ({ messages: [{ role: 'user', content: 'hi' }], ...over });
  const upstreams = () => mock.requests.map((r) => `${r.path.split('/')[1]}:${r.model}`);

  it('serves from the next model of `models` when the first one’s provider fails, and says so', async () => {
    mock.enqueue(failOpenAi, { reply, match: { path: /^\/anthropic\// } });
    const res = await api('POST', '/chat/completions', chat({ model: 'test/gpt', models: ['test/claude'] }));
    expect(res.status).toBe(200);
    expect(res.body.model).toBe('test/claude');
    expect(res.body.provider).toBe('anthropic');
    expect(res.body.choices[0].message.content).toBe('served');
    expect(res.headers.get('x-gatehouse-route')).toBe('translated');
    // The second model's own upstream id reached its provider (Anthropic's wire, not OpenAI's).
    expect(upstreams()).toEqual(['openai:gpt-x', 'anthropic:claude-x']);
    expect(mock.requests[1]?.format).toBe('anthropic-messages');
    expect(res.body.gateway_metadata).toMatchObject({
      attempt: 2,
      models_tried: ['test/gpt', 'test/claude'],
    });
    expect(res.body.gateway_metadata.summary).toMatch(
      /test\/claude served by anthropic.*in place of test\/gpt/,
    );

    const gen = await api('GET', `/generation?id=${res.body.id}`);
    expect(gen.body.data).toMatchObject({
      requested_model: 'test/gpt',
      model: 'test/claude',
      upstream_model: 'claude-x',
      attempts: 2,
    });
    // Every attempt, with the model and provider tried and how it ended.
    expect(
      gen.body.data.provider_responses.map((p: any) => [p.model_permaslug, p.provider_name, p.status]),
    ).toEqual([
      ['test/gpt', 'openai', 500],
      ['test/claude', 'anthropic', 200],
    ]);
  });

  it('takes the first of `models` as the primary when `model` is absent', async () => {
    mock.enqueue({ reply });
    const res = await api('POST', '/chat/completions', chat({ models: ['test/claude', 'test/gpt'] }));
    expect(res.status).toBe(200);
    expect(res.body.model).toBe('test/claude');
    expect(upstreams()).toEqual(['anthropic:claude-x']);
  });

  it('falls back across models on a stream before its first byte', async () => {
    mock.enqueue(failOpenAi, { reply, match: { path: /^\/anthropic\// } });
    const res = await fetch(`${gw.url}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(chat({ model: 'test/gpt', models: ['test/claude'], stream: true })),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gatehouse-provider')).toBe('anthropic');
    const chunks = (await res.text())
      .split('\n\n')
      .filter((f) => f.startsWith('data: {'))
      .map((f) => JSON.parse(f.slice(6)));
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toBe('served');
    expect(chunks.every((c) => c.model === 'test/claude')).toBe(true);
    expect(upstreams()).toEqual(['openai:gpt-x', 'anthropic:claude-x']);
  });

  it('falls back on /messages and /responses, naming the model that served', async () => {
    mock.enqueue(failOpenAi, { reply, match: { path: /^\/anthropic\// } });
    const msg = await api('POST', '/messages', {
      model: 'test/gpt',
      models: ['test/claude'],
      max_tokens: 64,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(msg.status).toBe(200);
    expect(msg.headers.get('x-gatehouse-provider')).toBe('anthropic');
    expect(msg.headers.get('x-gatehouse-route')).toBe('passthrough');
    expect(msg.headers.get('x-gatehouse-model')).toBe('test/claude');
    expect(upstreams()).toEqual(['openai:gpt-x', 'anthropic:claude-x']);
    // The list is the gateway's: no provider receives it, passed through or translated.
    expect(mock.requests.map((r) => r.body.models)).toEqual([undefined, undefined]);

    mock.reset();
    mock.enqueue(failOpenAi, { reply, match: { path: /^\/anthropic\// } });
    const resp = await api('POST', '/responses', { model: 'test/gpt', models: ['test/claude'], input: 'hi' });
    expect(resp.status).toBe(200);
    expect(resp.body.model).toBe('test/claude');
    expect(resp.headers.get('x-gatehouse-provider')).toBe('anthropic');
    expect(upstreams()).toEqual(['openai:gpt-x', 'anthropic:claude-x']);
  });

  it('names the model that served in translated /messages and /responses streams', async () => {
    const sse = async (path: string, body: object) => {
      const res = await fetch(`${gw.url}/api/v1${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ ...body, stream: true }),
      });
      expect(res.status).toBe(200);
      return (await res.text())
        .split('\n\n')
        .map((f) => f.split('\n').find((l) => l.startsWith('data: {')))
        .filter((l): l is string => l !== undefined)
        .map((l) => JSON.parse(l.slice(6)));
    };
    const failAnthropic = {
      status: 503,
      error: { message: 'overloaded' },
      match: { path: /^\/anthropic\// },
    };
    // /messages: the primary on its own format's provider fails; the next model is translated.
    mock.enqueue(failAnthropic, { reply, match: { path: /^\/openai\// } });
    const events = await sse('/messages', {
      models: ['test/claude', 'test/gpt'],
      max_tokens: 64,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(events.find((e) => e.type === 'message_start')?.message.model).toBe('test/gpt');
    expect(upstreams()).toEqual(['anthropic:claude-x', 'openai:gpt-x']);

    mock.reset();
    mock.enqueue(failOpenAi, { reply, match: { path: /^\/anthropic\// } });
    const responses = await sse('/responses', { model: 'test/gpt', models: ['test/claude'], input: 'hi' });
    expect(responses.find((e) => e.type === 'response.completed')?.response.model).toBe('test/claude');
    expect(upstreams()).toEqual(['openai:gpt-x', 'anthropic:claude-x']);
  });

  it('does not move to the next model on a failure that is the request’s own', async () => {
    mock.enqueue({ status: 400, error: { message: 'bad field' }, match: { path: /^\/openai\// } });
    const res = await api('POST', '/chat/completions', chat({ model: 'test/gpt', models: ['test/claude'] }));
    expect(res.status).toBe(400);
    expect(upstreams()).toEqual(['openai:gpt-x']);
  });

  it('skips a model the key’s guardrail disallows, and refuses with 403 when none is allowed', async () => {
    const mgmt = client(gw.url, gw.managementKey);
    const key = await mgmt('POST', '/keys', { name: 'fallback-guarded' });
    const g = await mgmt('POST', '/guardrails', { name: 'no gpt', ignored_models: ['test/gpt'] });
    await mgmt('POST', `/guardrails/${g.body.data.id}/assignments/keys`, {
      key_hashes: [key.body.data.hash],
    });
    const guarded = client(gw.url, key.body.key);

    mock.enqueue({ reply });
    const res = await guarded(
      'POST',
      '/chat/completions',
      chat({ model: 'test/gpt', models: ['test/claude'] }),
    );
    expect(res.status).toBe(200);
    expect(res.body.model).toBe('test/claude');
    expect(upstreams()).toEqual(['anthropic:claude-x']);
    expect(res.body.gateway_metadata.models_skipped).toEqual([
      { model: 'test/gpt', reason: expect.stringMatching(/no gpt/) },
    ]);

    mock.reset();
    const none = await guarded('POST', '/chat/completions', chat({ models: ['test/gpt'] }));
    expect(none.status).toBe(403);
    expect(none.body.error.message).toMatch(/test\/gpt.*no gpt/);
    expect(mock.requests).toHaveLength(0);
  });

  it('reserves against the key’s limit at the dearest model of the list', async () => {
    // max_tokens 100 reserves ~$0.0002 on test/gpt, ~$0.20 on test/pricey; the key may spend $0.30.
    const mgmt = client(gw.url, gw.managementKey);
    const key = await mgmt('POST', '/keys', { name: 'fallback-limited', limit: 0.3 });
    const limited = client(gw.url, key.body.key);
    const ask = (over: object) => limited('POST', '/chat/completions', chat({ max_tokens: 100, ...over }));
    mock.enqueue(
      { reply, delayMs: 800, match: { path: /^\/anthropic\// } },
      { reply, match: { path: /^\/openai\// } },
    );
    // A slow call on test/pricey holds $0.20 of the key's $0.30 while it runs.
    const slow = ask({ model: 'test/pricey' });
    await new Promise((r) => setTimeout(r, 200));
    // test/gpt alone still fits; with test/pricey as its fallback it would not ($0.20 more).
    expect((await ask({ model: 'test/gpt' })).status).toBe(200);
    const listed = await ask({ model: 'test/gpt', models: ['test/pricey'] });
    expect(listed.status).toBe(403);
    expect(listed.body.error.message).toMatch(/limit/i);
    expect((await slow).status).toBe(200);
    expect(upstreams()).toEqual(['anthropic:claude-pricey', 'openai:gpt-x']);
  });

  it('refuses a malformed `models` with a 400', async () => {
    for (const models of ['test/gpt', [], [3], ['']]) {
      const res = await api('POST', '/chat/completions', chat({ model: 'test/gpt', models }));
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(/models: must be a non-empty list of model ids/);
    }
    const unknown = await api(
      'POST',
      '/chat/completions',
      chat({ model: 'test/gpt', models: ['nobody/none'] }),
    );
    expect(unknown.status).toBe(404);
    expect(mock.requests).toHaveLength(0);
  });

  it('uses the catalog’s `fallbacks` when the request gives no models', async () => {
    mock.enqueue(failOpenAi, { reply, match: { path: /^\/anthropic\// } });
    const res = await api('POST', '/chat/completions', chat({ model: 'test/gpt-fb' }));
    expect(res.status).toBe(200);
    expect(res.body.model).toBe('test/claude');
    expect(upstreams()).toEqual(['openai:gpt-fb', 'anthropic:claude-x']);
  });

  it('sends a prompt longer than the model’s context to its context_fallback', async () => {
    mock.enqueue({ reply });
    const res = await api('POST', '/chat/completions', {
      model: 'test/tiny',
      messages: [{ role: 'user', content: longPrompt }],
    });
    expect(res.status).toBe(200);
    expect(res.body.model).toBe('test/claude');
    expect(upstreams()).toEqual(['anthropic:claude-x']);
    expect(res.body.gateway_metadata.models_skipped[0]).toMatchObject({ model: 'test/tiny' });

    // A short prompt stays on the model.
    mock.reset();
    mock.enqueue({ reply });
    const short = await api('POST', '/chat/completions', chat({ model: 'test/tiny' }));
    // Served on a lane (the provider's own body): the header names the catalog model.
    expect(short.headers.get('x-gatehouse-model')).toBe('test/tiny');
    expect(upstreams()).toEqual(['openai:gpt-tiny']);
  });

  it('goes to the next model of `models` whose context fits, else answers 400 context_length_exceeded', async () => {
    mock.enqueue({ reply });
    const res = await api('POST', '/chat/completions', {
      model: 'test/tiny-alone',
      models: ['test/gpt'],
      messages: [{ role: 'user', content: longPrompt }],
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gatehouse-model')).toBe('test/gpt');
    expect(upstreams()).toEqual(['openai:gpt-x']);

    mock.reset();
    const refused = await api('POST', '/chat/completions', {
      model: 'test/tiny-alone',
      messages: [{ role: 'user', content: longPrompt }],
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe(400);
    expect(refused.body.error.message).toMatch(/context_length_exceeded.*50 tokens/);
    expect(refused.body.error.metadata).toMatchObject({
      code: 'context_length_exceeded',
      context_length: 50,
    });
    expect(mock.requests).toHaveLength(0);
  });
});
