import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';
import { type MockUpstream, wireView } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

const reply = { text: 'from upstream', usage: { prompt_tokens: 20, completion_tokens: 6 } };

/** A gateway on the mock upstreams (credits added) for the enclosing describe block. */
function gatewayFor(env: Record<string, string> = {}) {
  const ctx = {} as { gw: TestGateway; mock: MockUpstream };
  beforeAll(async () => {
    const up = await startUpstreams();
    ctx.mock = up.mock;
    ctx.gw = await startTestGateway('sqlite', { env: { ...up.env, ...env } });
    await adminClient(ctx.gw.url)('POST', '/admin/credits', {
      organization_id: ctx.gw.organizationId,
      amount_usd: 100,
    });
  });
  afterAll(async () => {
    await ctx.gw?.stop();
    await ctx.mock?.close();
  });
  return ctx;
}

describe('model ids the catalog does not list', () => {
  const ctx = gatewayFor();
  let gw: TestGateway;
  let mock: MockUpstream;
  let openai: OpenAI;
  let anthropic: Anthropic;
  beforeAll(() => {
    ({ gw, mock } = ctx);
    openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: gw.apiKey, maxRetries: 0 });
  });
  beforeEach(() => mock.reset());

  const generation = async (id: string) => {
    await gw.services.accountant.flush();
    return (await client(gw.url, gw.apiKey)('GET', `/generation?id=${id}`)).body.data;
  };

  it('passes a dated native id to its vendor provider and prices it from the model data', async () => {
    mock.enqueue({ reply });
    const msg = await anthropic.messages.create({
      model: 'claude-haiku-4-5-20251001',
      max_tokens: 32,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(msg.content[0]).toMatchObject({ type: 'text', text: 'from upstream' });
    const sent = mock.requests[0]!;
    expect(sent.path).toMatch(/\/anthropic\/v1\/messages$/);
    expect(wireView(sent).model).toBe('claude-haiku-4-5-20251001');
    await gw.services.accountant.flush();
    const row = await gw.services.db
      .selectFrom('generations')
      .selectAll()
      .where('requested_model', '=', 'claude-haiku-4-5-20251001')
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      model: 'anthropic/claude-haiku-4-5-20251001',
      provider: 'anthropic',
      upstream_model: 'claude-haiku-4-5-20251001',
      pricing_unknown: 0,
    });
    // $1 / $5 per million tokens
    expect(row.cost_usd).toBeCloseTo((20 * 1 + 6 * 5) / 1e6, 12);
  });

  it('serves an unpriced id at cost 0, flagged in the answer, the generation and the metrics', async () => {
    mock.enqueue({ reply });
    const res: any = await openai.chat.completions.create({
      model: 'openai/gpt-next-preview',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(res.choices[0].message.content).toBe('from upstream');
    expect(wireView(mock.requests[0]!).model).toBe('gpt-next-preview');
    expect(res.usage.cost).toBe(0);
    expect(res.gateway_metadata.pricing_unknown).toBe(true);
    expect(await generation(res.id)).toMatchObject({ pricing_unknown: true, total_cost: 0 });
    const metrics = await (await fetch(`${gw.metricsUrl}/metrics`)).text();
    expect(metrics).toMatch(/gatehouse_unpriced_calls_total\{decision="allowed"\} 1/);
  });

  it('still answers 404 for an id no configured provider serves', async () => {
    const res = await client(gw.url, gw.apiKey)('POST', '/chat/completions', {
      model: 'mistral/mistral-next',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(res.status).toBe(404);
    expect(mock.requests).toHaveLength(0);
  });
});

describe('guardrail model lists with wildcards', () => {
  const ctx = gatewayFor();

  it('apply to unlisted ids passed through, and malformed entries are refused on write', async () => {
    const { gw, mock } = ctx;
    const mgmt = client(gw.url, gw.managementKey);
    const bad = await mgmt('POST', '/guardrails', { name: 'bad', allowed_models: ['anthropic/ *'] });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('allowed_models');
    const g = await mgmt('POST', '/guardrails', { name: 'anthropic only', allowed_models: ['anthropic/*'] });
    expect(g.status, g.text).toBe(201);
    const caller = await gw.services.keys.authenticate(gw.apiKey);
    const assigned = await mgmt('POST', `/guardrails/${g.body.data.id}/assignments/keys`, {
      key_hashes: [caller?.keyHash],
    });
    expect(assigned.status).toBe(200);

    const call = client(gw.url, gw.apiKey);
    const ask = (model: string) =>
      call('POST', '/chat/completions', { model, messages: [{ role: 'user', content: 'hi' }] });
    expect((await ask('claude-next')).status).toBe(200);
    expect(wireView(mock.requests[0]!).model).toBe('claude-next');
    const refused = await ask('gpt-next');
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toContain('anthropic only');
    expect(mock.requests).toHaveLength(1);
  });
});

describe('GATEHOUSE_UNPRICED_MODELS=deny', () => {
  const ctx = gatewayFor({ GATEHOUSE_UNPRICED_MODELS: 'deny' });

  it('refuses unpriced ids with a 403 naming the variable, and serves priced ones', async () => {
    const { gw, mock } = ctx;
    const call = client(gw.url, gw.apiKey);
    const refused = await call('POST', '/chat/completions', {
      model: 'gpt-next-preview',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toContain('GATEHOUSE_UNPRICED_MODELS');
    expect(mock.requests).toHaveLength(0);
    const served = await call('POST', '/chat/completions', {
      model: 'gpt-4o-mini-2024-07-18',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(served.status).toBe(200);
    expect(wireView(mock.requests[0]!).model).toBe('gpt-4o-mini-2024-07-18');
  });
});
