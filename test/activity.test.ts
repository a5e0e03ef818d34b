import { createHash, randomUUID } from 'node:crypto';
import { OpenRouter } from '@openrouter/sdk';
import { BadRequestResponseError } from '@openrouter/sdk/models/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RELATIVE_ERROR } from '../src/activity/latency-buckets.js';
import type { GenerationsTable } from '../src/db/schema.js';
import { insertGenerations } from '../src/routing/accounting.js';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { client, makeOrganization } from './support/http.js';

/**
 * The analytics of recorded generations: OpenRouter's GET /activity, POST /analytics/query and
 * GET /analytics/meta called with the official SDK (its response validation on), and the
 * console's GET /analytics/series — sums, error counts and latency percentiles per bucket.
 */

const DAY = 86_400_000;
const hashOf = (key: string) => createHash('sha256').update(key).digest('hex');
const today = Date.parse(`${new Date().toISOString().slice(0, 10)}T00:00:00.000Z`);
const day = (n: number) => new Date(today - n * DAY).toISOString().slice(0, 10);
/** A latency percentile read from the hourly rollup: within its histogram's bound of `ms`. */
const near = (ms: number) =>
  expect.toSatisfy((v: number) => Math.abs(v - ms) <= RELATIVE_ERROR * ms + 0.5, `≈ ${ms} ms`);

interface Spec {
  model: string;
  provider: string;
  at: number;
  latency: number;
  cost: number;
  status?: string;
  byok?: boolean;
  workspace?: string;
  key?: string;
}

describe.each(databases)('activity analytics (%s)', (db) => {
  let gw: TestGateway;
  let sdk: OpenRouter;
  let mgmt: ReturnType<typeof client>;
  let a1: string;
  let ws2: string;
  let other: Awaited<ReturnType<typeof makeOrganization>>;

  const gen = (org: string, s: Spec): GenerationsTable => ({
    id: `gen-${randomUUID()}`,
    organization_id: org,
    workspace_id: s.workspace ?? a1,
    key_hash: s.key ?? hashOf(gw.apiKey),
    user_id: gw.ownerUserId,
    endpoint: 'chat',
    requested_model: s.model,
    model: s.model,
    provider: s.provider,
    upstream_model: null,
    status: s.status ?? 'success',
    http_status: 200,
    streamed: 0,
    finish_reason: 'stop',
    prompt_tokens: 100,
    completion_tokens: 10,
    reasoning_tokens: 1,
    cached_tokens: 0,
    cache_write_tokens: 0,
    usage_estimated: 0,
    pricing_unknown: 0,
    cost_usd: s.cost,
    prompt_cost_usd: 0,
    completion_cost_usd: 0,
    is_byok: s.byok ? 1 : 0,
    attempts: 1,
    latency_ms: s.latency,
    generation_time_ms: 0,
    error_message: null,
    created_at: new Date(s.at).toISOString(),
    passthrough: 0,
    upstream_id: null,
    web_search_requests: 0,
    provider_responses: null,
  });

  const y10 = today - DAY + 10 * 3_600_000; // yesterday 10:00
  beforeAll(async () => {
    gw = await startTestGateway(db);
    sdk = new OpenRouter({
      serverURL: `${gw.url}/api/v1`,
      apiKey: gw.managementKey,
      retryConfig: { strategy: 'none' },
    });
    mgmt = client(gw.url, gw.managementKey);
    other = await makeOrganization(gw.url, 'Elsewhere');
    a1 = (
      await gw.services.db
        .selectFrom('workspaces')
        .select('id')
        .where('organization_id', '=', gw.organizationId)
        .where('is_default', '=', 1)
        .executeTakeFirstOrThrow()
    ).id;
    ws2 = (await mgmt('POST', '/workspaces', { name: 'Two', slug: 'two' })).body.data.id;
    const A = 'openai/gpt-4o';
    const B = 'anthropic/claude-sonnet-4';
    const rows = [
      gen(gw.organizationId, { model: A, provider: 'openai', at: y10, latency: 100, cost: 0.01 }),
      gen(gw.organizationId, { model: A, provider: 'openai', at: y10 + 60_000, latency: 300, cost: 0.01 }),
      gen(gw.organizationId, {
        model: A,
        provider: 'openai',
        at: y10 + 3_600_000,
        latency: 200,
        cost: 0.01,
        status: 'error',
      }),
      gen(gw.organizationId, {
        model: B,
        provider: 'anthropic',
        at: y10,
        latency: 1000,
        cost: 0.02,
        byok: true,
        workspace: ws2,
        key: 'k2',
      }),
      gen(gw.organizationId, { model: A, provider: 'openai', at: y10 - DAY, latency: 50, cost: 0.005 }),
      gen(gw.organizationId, { model: A, provider: 'openai', at: y10 - DAY, latency: 150, cost: 0.005 }),
      // Today (not a completed day) and 40 days ago: outside /activity.
      gen(gw.organizationId, { model: A, provider: 'openai', at: today + 60_000, latency: 1, cost: 1 }),
      gen(gw.organizationId, { model: A, provider: 'openai', at: today - 40 * DAY, latency: 1, cost: 1 }),
      // Another organization, same models and days.
      gen(other.organizationId, {
        model: A,
        provider: 'openai',
        at: y10,
        latency: 9,
        cost: 5,
        workspace: other.workspaceId,
      }),
    ];
    // As the gateway writes them: with the hourly rollup the analytics read (no usage events).
    await gw.services.db.transaction().execute((tx) => insertGenerations(tx, rows, []));
  });
  afterAll(() => gw?.stop());

  it('getUserActivity: the last 30 completed days by day, model and provider, newest first', async () => {
    const res = await sdk.analytics.getUserActivity();
    expect(res.data).toEqual([
      expect.objectContaining({ date: day(1), model: 'openai/gpt-4o', providerName: 'openai', requests: 3 }),
      expect.objectContaining({
        date: day(1),
        model: 'anthropic/claude-sonnet-4',
        requests: 1,
        usage: 0.02,
        byokUsageInference: 0.02,
      }),
      expect.objectContaining({ date: day(2), model: 'openai/gpt-4o', requests: 2, usage: 0.01 }),
    ]);
    expect(res.data[0]?.usage).toBeCloseTo(0.03, 10);
    expect(res.data[0]).toMatchObject({ promptTokens: 300, completionTokens: 30, reasoningTokens: 3 });
    expect(res.data[0]?.workspaceId).toBeUndefined();
  });

  it('getUserActivity filters by date, key and workspace, and splits by workspace', async () => {
    expect((await sdk.analytics.getUserActivity({ date: day(2) })).data.map((r) => r.requests)).toEqual([2]);
    expect((await sdk.analytics.getUserActivity({ apiKeyHash: 'k2' })).data.map((r) => r.model)).toEqual([
      'anthropic/claude-sonnet-4',
    ]);
    expect((await sdk.analytics.getUserActivity({ workspaceId: ws2 })).data).toHaveLength(1);
    const split = await sdk.analytics.getUserActivity({ groupBy: 'workspace', date: day(1) });
    expect(split.data.map((r) => r.workspaceId).sort()).toEqual([a1, ws2].sort());
  });

  it('getUserActivity refuses a date outside the last 30 completed days', async () => {
    for (const date of [day(0), day(31), '2026-02-30', 'yesterday']) {
      await expect(sdk.analytics.getUserActivity({ date })).rejects.toBeInstanceOf(BadRequestResponseError);
    }
  });

  it('GET /analytics/series: per day and model, with error counts and latency p50/p95', async () => {
    const res = await mgmt(
      'GET',
      `/analytics/series?bucket=day&group_by=model&from=${day(3)}T00:00:00Z&to=${day(0)}T00:00:00Z`,
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ bucket: 'day', group_by: 'model' });
    expect(res.body.data).toEqual([
      expect.objectContaining({
        bucket: `${day(2)}T00:00:00.000Z`,
        group: 'openai/gpt-4o',
        requests: 2,
        errors: 0,
      }),
      expect.objectContaining({
        bucket: `${day(1)}T00:00:00.000Z`,
        group: 'anthropic/claude-sonnet-4',
        requests: 1,
        latency_p50_ms: near(1000),
        latency_p95_ms: near(1000),
      }),
      expect.objectContaining({
        bucket: `${day(1)}T00:00:00.000Z`,
        group: 'openai/gpt-4o',
        requests: 3,
        errors: 1,
        tokens: 330,
        latency_p50_ms: near(200),
        latency_p95_ms: near(300),
      }),
    ]);
    const hourly = await mgmt(
      'GET',
      `/analytics/series?bucket=hour&from=${y10 / 1000}&to=${(y10 + 2 * 3_600_000) / 1000}`,
    );
    expect(hourly.body.data.map((p: { requests: number }) => p.requests)).toEqual([3, 1]);
    const byKey = await mgmt(
      'GET',
      `/analytics/series?bucket=day&group_by=key&provider=anthropic&from=${day(3)}`,
    );
    expect(byKey.body.data.map((p: { group: string }) => p.group)).toEqual(['k2']);
  });

  it('GET /analytics/series refuses bad parameters with a 400 naming them', async () => {
    for (const [q, name] of [
      ['bucket=week', 'bucket'],
      ['group_by=colour', 'group_by'],
      ['from=soon', 'from'],
      ['from=2026-01-01&to=2025-01-01', 'from'],
      ['bucket=hour&from=2025-01-01&to=2026-01-01', 'buckets'],
    ]) {
      const res = await mgmt('GET', `/analytics/series?${q}`);
      expect(res.status, q).toBe(400);
      expect(res.body.error.message).toContain(name);
    }
  });

  it('queryAnalytics and getAnalyticsMeta through the SDK', async () => {
    const meta = await sdk.analytics.getAnalyticsMeta();
    expect(meta.data.metrics.map((m) => m.name)).toContain('latency_p95_ms');
    expect(meta.data.granularities.map((g) => g.name)).toEqual(['hour', 'day']);
    const body = {
      metrics: ['requests', 'spend', 'latency_p95_ms'],
      dimensions: ['provider'],
      granularity: 'day',
      filters: [{ field: 'model', operator: 'eq', value: 'openai/gpt-4o' }],
    };
    const res = await sdk.analytics.queryAnalytics({
      requestBody: {
        ...body,
        timeRange: { start: new Date(today - 3 * DAY), end: new Date(today) },
        orderBy: { field: 'requests', direction: 'desc' },
      },
    });
    // The SDK types rows as empty objects (their keys are the query's): read them over HTTP too.
    expect(res.data.data).toHaveLength(2);
    const raw = await mgmt('POST', '/analytics/query', {
      ...body,
      time_range: { start: new Date(today - 3 * DAY).toISOString(), end: new Date(today).toISOString() },
      order_by: { field: 'requests', direction: 'desc' },
    });
    expect(raw.body.data.data).toEqual([
      {
        bucket: `${day(1)}T00:00:00.000Z`,
        provider: 'openai',
        requests: 3,
        spend: expect.closeTo(0.03, 10),
        latency_p95_ms: near(300),
      },
      {
        bucket: `${day(2)}T00:00:00.000Z`,
        provider: 'openai',
        requests: 2,
        spend: 0.01,
        latency_p95_ms: near(150),
      },
    ]);
    expect(res.data.metadata).toMatchObject({ rowCount: 2, truncated: false });
    await expect(
      sdk.analytics.queryAnalytics({ requestBody: { metrics: ['vibes'] } }),
    ).rejects.toBeInstanceOf(BadRequestResponseError);
  });

  it('answers only for the caller’s organization, and only to management keys', async () => {
    const theirs = await client(gw.url, other.managementKey)('GET', '/activity');
    expect(theirs.body.data).toEqual([expect.objectContaining({ usage: 5, requests: 1 })]);
    for (const path of ['/activity', '/analytics/series', '/analytics/meta']) {
      expect((await client(gw.url, gw.apiKey)('GET', path)).status).toBe(403);
    }
  });
});
