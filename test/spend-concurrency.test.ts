import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { WIRES } from '../src/inference/wires/index.js';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

/**
 * Spend limits under concurrency: 40 calls at once, each costing $0.20, against $1 limits. Every
 * call reserves its worst case ($0.20 here: max_tokens 100 at $2,000 per million output tokens)
 * before it goes upstream, so the recorded spend stays within the limit plus one reservation.
 */

const CALLS = 40;
const RESERVATION = 0.2 + 1e-6; // 100 output tokens + the prompt's estimate (a token at $1/M)
const costly = {
  id: 'test/costly',
  endpoints: [{ provider: 'openai', upstream_model: 'costly-x', pricing: { prompt: 1, completion: 2000 } }],
};
const body = { model: 'test/costly', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] };

describe('spend limits hold under concurrency (SQLite, one node)', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let mgmt: ReturnType<typeof client>;
  beforeAll(async () => {
    const up = await startUpstreams([costly]);
    mock = up.mock;
    gw = await startTestGateway('sqlite', {
      env: { ...up.env, GATEHOUSE_RATE_LIMIT_REQUESTS: '10000', GATEHOUSE_CREDITS: 'enforce' },
    });
    mgmt = client(gw.url, gw.managementKey);
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => {
    mock.reset();
    // Slow answers, so the 40 calls overlap; each reports usage worth $0.200001.
    mock.enqueue({
      times: CALLS,
      delayMs: 400,
      reply: { text: 'ok', usage: { prompt_tokens: 1, completion_tokens: 100 } },
    });
  });

  const credit = (organization_id: string, amount_usd: number) =>
    adminClient(gw.url)('POST', '/admin/credits', { organization_id, amount_usd });

  /** Fires the calls at once; returns their statuses and the spend recorded for the key. */
  async function burst(key: string, hash: string, extra: object = {}) {
    const call = client(gw.url, key, { timeoutMs: 20_000 });
    const res = await Promise.all(
      Array.from({ length: CALLS }, () => call('POST', '/chat/completions', { ...body, ...extra })),
    );
    return { res, ...(await spentBy(hash, res)) };
  }

  /** What the database recorded for the key, once every queued row is written. */
  async function spentBy(hash: string, res: { status: number }[] = []) {
    await gw.services.accountant.flush();
    const row = await gw.services.db
      .selectFrom('usage_events')
      .select(sql<number>`coalesce(sum(cost_usd), 0)`.as('spent'))
      .where('key_hash', '=', hash)
      .executeTakeFirstOrThrow();
    return { spent: Number(row.spent), served: res.filter((r) => r.status === 200).length };
  }

  it("keeps a key's $1 limit: spend ≤ limit + one reservation, the others refused with 403", async () => {
    await credit(gw.organizationId, 100);
    const key = await mgmt('POST', '/keys', { name: 'limited', limit: 1 });
    const { res, spent, served } = await burst(key.body.key, key.body.data.hash);
    expect(spent, `key limit $1: recorded $${spent.toFixed(6)}`).toBeLessThanOrEqual(1 + RESERVATION);
    expect(served).toBeGreaterThanOrEqual(4);
    const refused = res.filter((r) => r.status !== 200);
    expect(refused.length).toBe(CALLS - served);
    for (const r of refused) {
      expect(r.status).toBe(403);
      expect(r.body.error.message).toMatch(/API key limit reached/);
    }
    expect(
      refused.some((r) => /reserved by calls in flight.*worst-case cost/.test(r.body.error.message)),
    ).toBe(true);
  });

  it("keeps a guardrail's $1 budget under the same burst", async () => {
    const key = await mgmt('POST', '/keys', { name: 'budgeted' });
    const g = await mgmt('POST', '/guardrails', {
      name: 'one dollar',
      limit_usd: 1,
      reset_interval: 'daily',
    });
    await mgmt('POST', `/guardrails/${g.body.data.id}/assignments/keys`, {
      key_hashes: [key.body.data.hash],
    });
    const { res, spent, served } = await burst(key.body.key, key.body.data.hash);
    expect(spent, `budget $1: recorded $${spent.toFixed(6)}`).toBeLessThanOrEqual(1 + RESERVATION);
    expect(served).toBeGreaterThanOrEqual(4);
    for (const r of res.filter((x) => x.status !== 200)) {
      expect(r.status).toBe(403);
      expect(r.body.error.message).toMatch(/Budget of guardrail "one dollar"/);
    }
  });

  it("keeps the organization's $1 of credits: the others refused with 402", async () => {
    const org = await adminClient(gw.url)('POST', '/admin/organizations', { name: `credits-${Date.now()}` });
    expect(org.status).toBe(201);
    const orgId = org.body.data.id;
    const made = await adminClient(gw.url)('POST', '/admin/keys', { organization_id: orgId, name: 'k' });
    expect(made.status).toBe(201);
    await credit(orgId, 1);
    const hash = made.body.data.hash;
    const { res, spent, served } = await burst(made.body.key, hash);
    expect(spent, `credits $1: recorded $${spent.toFixed(6)}`).toBeLessThanOrEqual(1 + RESERVATION);
    expect(served).toBeGreaterThanOrEqual(4);
    for (const r of res.filter((x) => x.status !== 200)) {
      expect(r.status).toBe(402);
      expect(r.body.error.message).toMatch(/Insufficient credits/);
    }
  });

  it('streams reserve too: a key limit holds against 40 streams at once', async () => {
    const key = await mgmt('POST', '/keys', { name: 'streaming', limit: 1 });
    const { res, spent, served } = await burst(key.body.key, key.body.data.hash, { stream: true });
    expect(spent, `streams, key limit $1: recorded $${spent.toFixed(6)}`).toBeLessThanOrEqual(
      1 + RESERVATION,
    );
    expect(served).toBeGreaterThanOrEqual(4);
    for (const r of res.filter((x) => x.status !== 200)) expect(r.status).toBe(403);
  });

  it('batch requests reserve too: 40 requests run at once hold the key limit', async () => {
    const key = await mgmt('POST', '/keys', { name: 'batching', limit: 1 });
    const call = client(gw.url, key.body.key);
    const created = await call('POST', '/batches', {
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      requests: Array.from({ length: CALLS }, (_, i) => ({ custom_id: `r-${i}`, body })),
    });
    expect(created.status, created.text).toBe(202);
    let batch: any;
    for (let i = 0; i < 400; i++) {
      batch = (await call('GET', `/batches/${created.body.id}`)).body;
      if (['completed', 'failed'].includes(batch.status)) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(batch.status).toBe('completed');
    const { spent } = await spentBy(key.body.data.hash);
    expect(spent, `batch, key limit $1: recorded $${spent.toFixed(6)}`).toBeLessThanOrEqual(1 + RESERVATION);
    expect(batch.request_counts.completed).toBeGreaterThanOrEqual(4);
    expect(batch.request_counts.completed + batch.request_counts.failed).toBe(CALLS);
  });

  it('releases the reservation of a stream its caller left before reading it', async () => {
    await credit(gw.organizationId, 100);
    const key = await mgmt('POST', '/keys', { name: 'unread stream', limit: 0.3 });
    const caller = await gw.services.keys.authenticate(key.body.key);
    const abort = new AbortController();
    const call = {
      caller: caller as NonNullable<typeof caller>,
      wire: WIRES.chat,
      body: { ...body, stream: true },
      model: body.model,
      stream: true,
      headers: {},
      prefs: {},
      echoUpstream: false,
      signal: abort.signal,
    };
    await gw.services.engine.stream(call); // accepted upstream; its frames are never read
    abort.abort(new Error('client went away'));
    // Its $0.20 reservation is gone: another call that needs $0.20 of the $0.30 fits.
    mock.reset();
    mock.enqueue({ reply: { text: 'ok', usage: { prompt_tokens: 1, completion_tokens: 100 } } });
    expect((await client(gw.url, key.body.key)('POST', '/chat/completions', body)).status).toBe(200);
  });

  it('releases the reservation of a failed call', async () => {
    const key = await mgmt('POST', '/keys', { name: 'failing', limit: 0.3 });
    const call = client(gw.url, key.body.key);
    mock.reset();
    mock.enqueue({ status: 400, error: { message: 'bad' } });
    expect((await call('POST', '/chat/completions', body)).status).toBe(400);
    // The failed call spent nothing and holds nothing: a call that fits the limit alone still passes.
    mock.enqueue({ reply: { text: 'ok', usage: { prompt_tokens: 1, completion_tokens: 100 } } });
    expect((await call('POST', '/chat/completions', body)).status).toBe(200);
  });
});
