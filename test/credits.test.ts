import { OpenRouter } from '@openrouter/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/lib/ids.js';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client, makeOrganization } from './support/http.js';

describe.each(databases)('credits (%s)', (db) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(db);
  });
  afterAll(() => gw?.stop());

  const sdkFor = (key: string) =>
    new OpenRouter({ serverURL: `${gw.url}/api/v1`, apiKey: key, retryConfig: { strategy: 'none' } });

  it('sums ledger grants into total_credits and recorded spend into total_usage, per organization', async () => {
    const sdk = sdkFor(gw.managementKey);
    expect((await sdk.credits.getCredits()).data).toEqual({ totalCredits: 0, totalUsage: 0 });

    const admin = adminClient(gw.url);
    const g1 = await admin('POST', '/admin/credits', { organization_id: gw.organizationId, amount_usd: 25 });
    expect(g1.status).toBe(201);
    expect(g1.body.data).toMatchObject({
      organization_id: gw.organizationId,
      amount_usd: 25,
      kind: 'purchase',
    });
    await admin('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 5.5,
      note: 'bonus',
    });

    // Spend as the inference engine records it: one usage event per call.
    const ws = await gw.services.workspaces.resolve({ organizationId: gw.organizationId });
    const { sha256Hex } = await import('../src/lib/crypto.js');
    for (const [cost, byok] of [
      [0.25, 0],
      [1.5, 1],
    ] as const) {
      await gw.services.db
        .insertInto('usage_events')
        .values({
          id: newId(),
          organization_id: gw.organizationId,
          workspace_id: ws.id,
          key_hash: sha256Hex(gw.apiKey),
          user_id: null,
          model: 'm',
          provider: 'p',
          cost_usd: cost,
          is_byok: byok,
          created_at: new Date().toISOString(),
        })
        .execute();
    }
    // BYOK spend uses no credits (the provider bills the organization): not in total_usage, nor the balance.
    expect((await sdk.credits.getCredits()).data).toEqual({ totalCredits: 30.5, totalUsage: 0.25 });
    gw.services.spend.reset();
    expect(await gw.services.spend.balance(gw.organizationId)).toBeCloseTo(30.25, 9);

    // The key counters are the same sums, split by BYOK.
    const current = await sdkFor(gw.apiKey).apiKeys.getCurrentKeyMetadata();
    expect(current.data).toMatchObject({
      usage: 0.25,
      usageDaily: 0.25,
      byokUsage: 1.5,
      byokUsageMonthly: 1.5,
    });

    // Another organization sees only its own ledger.
    const other = await makeOrganization(gw.url, `Credits ${db}`);
    expect((await sdkFor(other.managementKey).credits.getCredits()).data).toEqual({
      totalCredits: 0,
      totalUsage: 0,
    });
  });

  it('refuses non-management keys, missing credentials and bad grants', async () => {
    expect((await client(gw.url, gw.apiKey)('GET', '/credits')).body).toEqual({
      error: { code: 403, message: 'Only management keys can perform this operation' },
    });
    expect((await client(gw.url)('GET', '/credits')).status).toBe(401);
    const admin = adminClient(gw.url);
    expect(
      (await admin('POST', '/admin/credits', { organization_id: gw.organizationId, amount_usd: -1 })).status,
    ).toBe(400);
    expect((await admin('POST', '/admin/credits', { organization_id: newId(), amount_usd: 1 })).status).toBe(
      400,
    );
  });

  it('answers 410 on the removed crypto-charge endpoint, whatever is sent', async () => {
    for (const call of [client(gw.url), client(gw.url, gw.managementKey), client(gw.url, gw.apiKey)]) {
      const res = await call('POST', '/credits/crypto-charge', { amount: 10 });
      expect(res.status).toBe(410);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.body).toEqual({ error: { code: 410, message: expect.stringMatching(/removed/) } });
    }
  });

  it('keeps the ledger across a restart', async () => {
    const before = (await client(gw.url, gw.managementKey)('GET', '/credits')).body;
    gw = await gw.restart();
    expect((await client(gw.url, gw.managementKey)('GET', '/credits')).body).toEqual(before);
  });
});

describe('the first call on a fresh install', () => {
  const first = (gw: TestGateway) =>
    client(gw.url, gw.apiKey)('POST', '/chat/completions', {
      model: 'gatehouse/echo',
      messages: [{ role: 'user', content: 'first call' }],
    });

  it('succeeds with the default settings: no credits needed, the call still priced and recorded', async () => {
    const gw = await startTestGateway('sqlite');
    try {
      const res = await first(gw);
      expect(res.status, res.text).toBe(200);
      expect(res.body.choices[0].message.content).toBe('first call');
      expect(res.body.usage.cost).toBeGreaterThan(0);
      await gw.services.accountant.flush();
      const totals = (await client(gw.url, gw.managementKey)('GET', '/credits')).body.data;
      expect(totals.total_credits).toBe(0);
      expect(totals.total_usage).toBeCloseTo(res.body.usage.cost, 12);
    } finally {
      await gw.stop();
    }
  });

  it('with GATEHOUSE_CREDITS=enforce is a 402 naming the command and the request that add credits', async () => {
    const gw = await startTestGateway('sqlite', { env: { GATEHOUSE_CREDITS: 'enforce' } });
    try {
      const refused = await first(gw);
      expect(refused.status).toBe(402);
      const message: string = refused.body.error.message;
      expect(message).toContain(`gatehouse credits add --org ${gw.organizationId} --amount <USD>`);
      // The request it names, sent as written (with an amount), lets the same call through.
      const named = /`POST \/api\/v1(\/admin\/credits)` (\{.*?\})/.exec(message);
      expect(named, message).not.toBeNull();
      const [, path, body] = named as RegExpExecArray;
      const grant = await adminClient(gw.url)('POST', path as string, (body as string).replace('<USD>', '5'));
      expect(grant.status).toBe(201);
      expect((await first(gw)).status).toBe(200);
    } finally {
      await gw.stop();
    }
  });
});
