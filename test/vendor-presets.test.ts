/**
 * Vendor presets end to end: a provider configured by `kind` and its vendor's key variable alone
 * (base URL pointed at the mock upstream) lists the models the vendor's `GET /models` lists, sends
 * the vendor key, and leaves out the fields the vendor refuses — on the pass-through lane (Chat
 * Completions, streamed or not) and on a translated call — listing them in
 * `x-gatehouse-dropped-fields` instead of letting the vendor answer 400. Real gateway, real sockets.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client, makeOrganization } from './support/http.js';
import { type MockUpstream, startMockUpstream } from './support/mock-upstream.js';

const HEADER = 'x-gatehouse-dropped-fields';
const GROQ_KEY = 'gsk-vendor-preset-key-000000';
const PPLX_KEY = 'pplx-vendor-preset-key-00000';
const OR_KEY = 'sk-or-vendor-preset-key-0000';
const BYOK_KEY = 'gsk-organization-own-key-0000';

let gw: TestGateway;
let mock: MockUpstream;
let call: ReturnType<typeof client>;

beforeAll(async () => {
  mock = await startMockUpstream();
  mock.models = ['llama-mock'];
  const file = join(mkdtempSync(join(tmpdir(), 'gatehouse-presets-')), 'gatehouse.json');
  writeFileSync(
    file,
    JSON.stringify({
      providers: [
        // One line each: the key comes from GROQ_API_KEY, everything else from the preset.
        { slug: 'groq', kind: 'groq', base_url: `${mock.url}/groq/v1` },
        { slug: 'perplexity', kind: 'perplexity', base_url: `${mock.url}/pplx`, api_key: PPLX_KEY },
        { slug: 'openrouter', kind: 'openrouter', base_url: `${mock.url}/or/v1`, api_key: OR_KEY },
        { slug: 'ollama', kind: 'ollama', base_url: `${mock.url}/ollama/v1` },
      ],
      models: [
        { id: 'pplx/sonar', endpoints: [{ provider: 'perplexity', upstream_model: 'sonar', pricing: {} }] },
      ],
    }),
  );
  gw = await startTestGateway('sqlite', {
    env: { GATEHOUSE_CONFIG: file, GROQ_API_KEY: GROQ_KEY, GATEHOUSE_RATE_LIMIT_REQUESTS: '1000' },
  });
  await adminClient(gw.url)('POST', '/admin/credits', { organization_id: gw.organizationId, amount_usd: 10 });
  call = client(gw.url, gw.apiKey);
  // Discovery runs at start in the background; a reload asks the servers again and waits.
  const reloaded = await adminClient(gw.url)('POST', '/admin/catalog/reload');
  expect(reloaded.status, reloaded.text).toBe(200);
});
afterAll(async () => {
  await gw?.stop();
  await mock?.close();
});
beforeEach(() => mock.reset());

/** The body a Groq-refused field set rides on (plus fields Groq takes, which must pass as sent). */
const refusedByGroq = {
  model: 'groq/llama-mock',
  messages: [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Hi', name: 'ann' },
  ],
  logprobs: true,
  top_logprobs: 2,
  logit_bias: { '50256': -100 },
  n: 1,
  temperature: 0.3,
  seed: 7,
};
const DROPPED = ['logprobs', 'top_logprobs', 'logit_bias', 'messages[].name'];

describe('vendor presets', () => {
  it("list the models the vendor's GET /models lists, asked with the vendor key", async () => {
    const reloaded = await adminClient(gw.url)('POST', '/admin/catalog/reload');
    expect(reloaded.body.data.servers).toEqual(
      expect.arrayContaining([
        { provider: 'groq', models: 1 },
        { provider: 'ollama', models: 1 },
      ]),
    );
    const asked = mock.requests.find((r) => r.path === '/groq/v1/models');
    expect(asked?.path).toBe('/groq/v1/models');
    expect(asked?.headers.authorization).toBe(`Bearer ${GROQ_KEY}`);
    const models = await call('GET', '/models?q=llama-mock');
    expect(models.body.data.map((m: { id: string }) => m.id)).toEqual(
      expect.arrayContaining(['groq/llama-mock', 'ollama/llama-mock']),
    );
    const providers = await call('GET', '/providers');
    expect(providers.body.data.map((p: { slug: string; kind: string }) => [p.slug, p.kind])).toEqual(
      expect.arrayContaining([
        ['groq', 'groq'],
        ['ollama', 'ollama'],
      ]),
    );
    // A local server is asked without a key.
    expect(mock.requests.find((r) => r.path === '/ollama/v1/models')?.headers.authorization).toBeUndefined();
  });

  it('lane: refused fields never reach the vendor and are listed; the rest passes as sent, with the vendor key', async () => {
    const res = await call('POST', '/chat/completions', refusedByGroq);
    expect(res.status, res.text).toBe(200);
    const [req] = mock.requests;
    expect(req?.path).toBe('/groq/v1/chat/completions');
    expect(req?.headers.authorization).toBe(`Bearer ${GROQ_KEY}`);
    for (const f of ['logprobs', 'top_logprobs', 'logit_bias']) expect(req?.body).not.toHaveProperty(f);
    expect(req?.body).toMatchObject({ model: 'llama-mock', n: 1, temperature: 0.3, seed: 7 });
    expect(req?.body.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
    ]);
    expect(res.headers.get(HEADER)).toBe(DROPPED.join(','));
    expect(res.body.gateway_metadata).toMatchObject({ dropped_fields: DROPPED });
    // A body with nothing refused goes out untouched, and nothing is reported.
    const plain = await call('POST', '/chat/completions', {
      model: 'groq/llama-mock',
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(plain.status).toBe(200);
    expect(plain.headers.get(HEADER)).toBeNull();
  });

  it('lane, streamed: the same fields are left out and listed in the header', async () => {
    const res = await fetch(`${gw.url}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...refusedByGroq, stream: true }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get(HEADER)).toBe(DROPPED.join(','));
    expect(await res.text()).toContain('[DONE]');
    const [req] = mock.requests;
    expect(req?.stream).toBe(true);
    expect(req?.body).not.toHaveProperty('logprobs');
    expect(req?.body.messages[1]).toEqual({ role: 'user', content: 'Hi' });
  });

  it('translated call (Anthropic Messages → Perplexity): tools the vendor refuses are left out and listed', async () => {
    const res = await call('POST', '/messages', {
      model: 'pplx/sonar',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Latest news?' }],
      tools: [{ name: 'lookup', description: 'Look up', input_schema: { type: 'object' } }],
    });
    expect(res.status, res.text).toBe(200);
    const [req] = mock.requests;
    expect(req?.path).toBe('/pplx/chat/completions');
    expect(req?.headers.authorization).toBe(`Bearer ${PPLX_KEY}`);
    expect(req?.body).not.toHaveProperty('tools');
    expect(req?.body).not.toHaveProperty('tool_choice');
    expect(res.headers.get(HEADER)).toBe('tools');
  });

  it('provider.require_parameters: a vendor that refuses a needed field is skipped, not sent a cut request', async () => {
    const res = await call('POST', '/chat/completions', {
      model: 'pplx/sonar',
      messages: [{ role: 'user', content: 'Latest news?' }],
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
      provider: { require_parameters: true },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain('perplexity: does not support tools');
    expect(mock.requests.filter((r) => r.method === 'POST')).toHaveLength(0);
    const endpoints = await call('GET', '/models/pplx/sonar/endpoints');
    expect(endpoints.body.data.endpoints[0].supported_parameters).not.toContain('tools');
  });

  it("lane: OpenRouter's reasoning in the history reaches only OpenRouter; another vendor gets the conversation without it, listed", async () => {
    const reasoning_details = [
      { type: 'reasoning.text', text: 'Thinking about it.', signature: 'sig', format: 'x' },
    ];
    const history = (model: string) => ({
      model,
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello.', reasoning: 'Thinking about it.', reasoning_details },
        { role: 'user', content: 'And now?' },
      ],
    });
    mock.enqueue({ reply: { text: 'ok' } }, { reply: { text: 'ok' } });
    const groq = await call('POST', '/chat/completions', history('groq/llama-mock'));
    expect(groq.status, groq.text).toBe(200);
    expect(groq.headers.get(HEADER)).toBe('messages[].reasoning,messages[].reasoning_details');
    expect(mock.requests[0]?.body.messages).toEqual([
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello.' },
      { role: 'user', content: 'And now?' },
    ]);
    const or = await call('POST', '/chat/completions', history('openrouter/llama-mock'));
    expect(or.status, or.text).toBe(200);
    expect(or.headers.get(HEADER)).toBeNull();
    expect(mock.requests[1]?.body.messages).toEqual(history('x').messages);
  });

  it("BYOK: a hosted vendor takes an organization's own key; a local server never does", async () => {
    const org = await makeOrganization(gw.url, 'Own keys');
    const mgmt = client(gw.url, org.managementKey);
    expect((await mgmt('POST', '/byok', { provider: 'openrouter', key: 'sk-or-own' })).status).toBe(201);
    const local = await mgmt('POST', '/byok', { provider: 'ollama', key: 'anything' });
    expect(local.status).toBe(400);
    expect(local.body.error.message).toBe('This gateway does not accept BYOK credentials for that provider');
    const own = await mgmt('POST', '/byok', { provider: 'groq', key: BYOK_KEY });
    expect(own.status, own.text).toBe(201);
    const res = await client(gw.url, org.apiKey)('POST', '/chat/completions', {
      model: 'groq/llama-mock',
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.usage).toMatchObject({ is_byok: true, cost: 0 });
    expect(mock.requests.at(-1)?.headers.authorization).toBe(`Bearer ${BYOK_KEY}`);
  });
});
