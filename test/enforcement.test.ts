import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { newId } from '../src/lib/ids.js';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';
import { type MockUpstream, wireView } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

const chat = (model: string, content = 'hello', extra: object = {}) => ({
  model,
  messages: [{ role: 'user', content }],
  ...extra,
});

describe('enforcement on every inference call', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let mgmt: ReturnType<typeof client>;
  beforeAll(async () => {
    const up = await startUpstreams();
    mock = up.mock;
    gw = await startTestGateway('sqlite', { env: { ...up.env, GATEHOUSE_RATE_LIMIT_REQUESTS: '1000' } });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
    mgmt = client(gw.url, gw.managementKey);
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => mock.reset());

  /** A fresh API key with one guardrail assigned to it. */
  async function keyWithGuardrail(guardrail: object) {
    const key = await mgmt('POST', '/keys', { name: `k-${Math.random()}` });
    const g = await mgmt('POST', '/guardrails', { name: 'policy under test', ...guardrail });
    expect(g.status).toBe(201);
    await mgmt('POST', `/guardrails/${g.body.data.id}/assignments/keys`, {
      key_hashes: [key.body.data.hash],
    });
    return {
      call: client(gw.url, key.body.key),
      hash: key.body.data.hash as string,
      guardrailId: g.body.data.id as string,
    };
  }

  it('refuses models outside allowed_models, naming the guardrail, and serves allowed ones', async () => {
    const { call } = await keyWithGuardrail({ allowed_models: ['gatehouse/echo'] });
    const refused = await call('POST', '/chat/completions', chat('test/gpt'));
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toMatch(/test\/gpt.*policy under test/);
    expect(mock.requests).toHaveLength(0);
    expect((await call('POST', '/chat/completions', chat('gatehouse/echo'))).status).toBe(200);
  });

  it('refuses ignored models', async () => {
    const { call } = await keyWithGuardrail({ ignored_models: ['test/gpt'] });
    expect((await call('POST', '/chat/completions', chat('test/gpt'))).status).toBe(403);
  });

  it('routes around ignored providers and refuses when none is left', async () => {
    const { call } = await keyWithGuardrail({ ignored_providers: ['openai'] });
    const res = await call('POST', '/chat/completions', chat('test/multi'));
    expect(res.status).toBe(200);
    expect(res.body.provider).toBe('groq');
    const none = await call('POST', '/chat/completions', chat('test/gpt'));
    expect(none.status).toBe(403);
    expect(none.body.error.message).toMatch(/openai/);
  });

  it('keeps calls on allowed providers only', async () => {
    const { call } = await keyWithGuardrail({ allowed_providers: ['groq'] });
    expect((await call('POST', '/chat/completions', chat('test/multi'))).body.provider).toBe('groq');
    expect((await call('POST', '/chat/completions', chat('test/claude'))).status).toBe(403);
  });

  it('routes only to zero-data-retention endpoints under enforce_zdr', async () => {
    const { call } = await keyWithGuardrail({ enforce_zdr: true });
    expect((await call('POST', '/chat/completions', chat('test/multi'))).body.provider).toBe('groq');
    const res = await call('POST', '/chat/completions', chat('test/claude'));
    expect(res.status).toBe(403);
    expect(res.body.error.message).toMatch(/ZDR|zero/i);
  });

  it('blocks, redacts and flags with content filters, reporting safeguard_results', async () => {
    const blocking = await keyWithGuardrail({
      content_filter_builtins: [{ slug: 'email', action: 'block' }],
    });
    const blocked = await blocking.call(
      'POST',
      '/chat/completions',
      chat('test/gpt', 'write to ada@example.com'),
    );
    expect(blocked.status).toBe(403);
    expect(blocked.body.error.message).toMatch(/content filter/i);
    expect(mock.requests).toHaveLength(0);

    const redacting = await keyWithGuardrail({
      content_filter_builtins: [{ slug: 'credit-card', action: 'redact' }],
      content_filters: [{ pattern: 'project\\s+falcon', action: 'flag', label: 'codename' }],
    });
    const res = await redacting.call(
      'POST',
      '/chat/completions',
      chat('test/gpt', 'card 4111 1111 1111 1111 for project falcon'),
    );
    expect(res.status).toBe(200);
    const sent = wireView(mock.requests[0]!)
      .turns.map((t) => t.text)
      .join(' ');
    expect(sent).not.toContain('4111');
    expect(sent).toMatch(/REDACTED/);
    expect(sent).toContain('project falcon');
    const statuses = res.body.safeguard_results.map((r: any) => r.status.type).sort();
    expect(statuses).toEqual(['flagged', 'redacted']);
    expect(JSON.stringify(res.body.safeguard_results)).not.toContain('4111');
  });

  it('refuses once a guardrail budget is spent in its window; spend of an earlier window does not count', async () => {
    const { call, hash } = await keyWithGuardrail({ limit_usd: 0.00005, reset_interval: 'daily' });
    // Yesterday's spend (well over the limit) belongs to another window.
    const ws = await gw.services.workspaces.resolve({ organizationId: gw.organizationId });
    await gw.services.db
      .insertInto('usage_events')
      .values({
        id: newId(),
        organization_id: gw.organizationId,
        workspace_id: ws.id,
        key_hash: hash,
        user_id: null,
        model: 'test/gpt',
        provider: 'openai',
        cost_usd: 5,
        is_byok: 0,
        created_at: new Date(Date.now() - 86_400_000 * 2).toISOString(),
      })
      .execute();
    mock.enqueue({ reply: { text: 'ok', usage: { prompt_tokens: 20, completion_tokens: 10 } }, times: 3 });
    // Each call costs (20 + 10×2)/1e6 = $0.00004: the first fits, the second crosses, the third is refused.
    expect((await call('POST', '/chat/completions', chat('test/gpt'))).status).toBe(200);
    expect((await call('POST', '/chat/completions', chat('test/gpt'))).status).toBe(200);
    const refused = await call('POST', '/chat/completions', chat('test/gpt'));
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toMatch(/policy under test/);
    expect(refused.body.error.message).toMatch(/budget|limit/i);
  });

  it("refuses once the key's own limit is spent, and again accepts when the limit is raised", async () => {
    const key = await mgmt('POST', '/keys', { name: 'limited', limit: 0.00003 });
    const call = client(gw.url, key.body.key);
    mock.enqueue({ reply: { text: 'ok', usage: { prompt_tokens: 20, completion_tokens: 10 } }, times: 3 });
    expect((await call('POST', '/chat/completions', chat('test/gpt'))).status).toBe(200);
    const refused = await call('POST', '/chat/completions', chat('test/gpt'));
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toMatch(/limit/i);
    const info = await call('GET', '/key');
    expect(info.body.data.usage).toBeCloseTo(0.00004, 12);
    expect(info.body.data.limit_remaining).toBe(0);
    await mgmt('PATCH', `/keys/${key.body.data.hash}`, { limit: 1 });
    expect((await call('POST', '/chat/completions', chat('test/gpt'))).status).toBe(200);
  });

  it('refuses disabled and expired keys at the door (401)', async () => {
    const key = await mgmt('POST', '/keys', { name: 'to disable' });
    await mgmt('PATCH', `/keys/${key.body.data.hash}`, { disabled: true });
    expect(
      (await client(gw.url, key.body.key)('POST', '/chat/completions', chat('gatehouse/echo'))).status,
    ).toBe(401);
  });

  it('bills exactly: generations, key counters and GET /credits agree', async () => {
    await gw.services.accountant.flush();
    const gens = await gw.services.db
      .selectFrom('generations')
      .select(['cost_usd', 'key_hash', 'is_byok'])
      .execute();
    const events = await gw.services.db
      .selectFrom('usage_events')
      .select(['cost_usd'])
      .where('created_at', '>', new Date(Date.now() - 86_400_000).toISOString())
      .execute();
    const sumGens = gens.reduce((s, g) => s + g.cost_usd, 0);
    const sumEvents = events.reduce((s, e) => s + e.cost_usd, 0);
    expect(sumGens).toBeGreaterThan(0);
    expect(sumEvents).toBeCloseTo(sumGens, 12);
    const credits = await mgmt('GET', '/credits');
    expect(credits.body.data.total_usage).toBeCloseTo(sumGens + 5, 10); // + the seeded past spend
  });
});

describe('per-key rate limit', () => {
  it('answers 429 with Retry-After past the configured requests per window', async () => {
    const gw = await startTestGateway('sqlite', {
      env: { GATEHOUSE_RATE_LIMIT_REQUESTS: '3', GATEHOUSE_RATE_LIMIT_WINDOW: '60' },
    });
    try {
      await adminClient(gw.url)('POST', '/admin/credits', {
        organization_id: gw.organizationId,
        amount_usd: 1,
      });
      const call = client(gw.url, gw.apiKey);
      for (let i = 0; i < 3; i++)
        expect((await call('POST', '/chat/completions', chat('gatehouse/echo'))).status).toBe(200);
      const res = await call('POST', '/chat/completions', chat('gatehouse/echo'));
      expect(res.status).toBe(429);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(res.body.error.message).toMatch(/rate limit/i);
    } finally {
      await gw.stop();
    }
  });
});
