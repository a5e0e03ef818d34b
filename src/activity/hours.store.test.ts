import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases, postgresUrl } from '../../test/support/gateway.js';
import { type DbHandle, openDatabase } from '../db/connection.js';
import { migrateToLatest } from '../db/migrate.js';
import * as m0018 from '../db/migrations/0018_generation_hours.js';
import type { GenerationsTable } from '../db/schema.js';
import { silentLog } from '../lib/log.js';
import { Accountant, insertGenerations, sqliteGenerationInserts } from '../routing/accounting.js';
import { startGenerationWriter } from '../routing/generation-writer.js';
import type { GroupBy } from './analytics.store.js';
import { totals } from './analytics.store.js';
import type { GenerationFilter } from './filter.js';
import { rebuildHours } from './hours.store.js';
import { RELATIVE_ERROR } from './latency-buckets.js';
import { ActivityService, type SeriesPoint } from './service.js';

/**
 * The hourly rollup answers as the generations themselves do: random generations written through
 * every writer (the accountant's group commits — on SQLite also through its writer thread —, its
 * replay of rows already written, the batch worker's inserts), then random series — partial edge hours, hourly and daily buckets, groups,
 * filters — computed from the rollup and from the raw rows. Counts and tokens equal, spend equal to
 * rounding, percentiles within the histogram's bound. The migration's backfill and a rebuild give
 * the table the writers built.
 */

/** A small deterministic generator (mulberry32): failures reproduce. */
function random(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const START = Date.UTC(2026, 10, 20, 0, 0, 0);
const HOUR = 3_600_000;
const SPAN = 3 * 24 * HOUR;

describe.each(databases)('hourly analytics rollup (%s)', (kind) => {
  let handle: DbHandle;
  let cleanup: () => Promise<void>;
  let svc: ActivityService;
  const rnd = random(kind === 'sqlite' ? 7 : 11);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;

  let n = 0;
  function gen(): GenerationsTable {
    const model = pick(['m/a', 'm/b', 'm/c', null]);
    return {
      id: `gen-${n++}`,
      organization_id: pick(['org-1', 'org-1', 'org-1', 'org-2']),
      workspace_id: pick(['ws-1', 'ws-2', 'ws-3']),
      key_hash: pick(['k1', 'k2', 'k3', null]),
      user_id: pick(['u1', 'u2', null]),
      endpoint: 'chat',
      requested_model: model ?? pick(['m/a', 'm/asked']),
      model,
      provider: pick(['p1', 'p2', null]),
      upstream_model: null,
      status: pick(['success', 'success', 'success', 'error', 'cancelled']),
      http_status: 200,
      streamed: 0,
      finish_reason: null,
      prompt_tokens: Math.floor(rnd() * 5000),
      completion_tokens: Math.floor(rnd() * 2000),
      reasoning_tokens: Math.floor(rnd() * 300),
      cached_tokens: 0,
      cache_write_tokens: 0,
      usage_estimated: 0,
      pricing_unknown: 0,
      cost_usd: Math.round(rnd() * 1e6) / 1e7,
      prompt_cost_usd: 0,
      completion_cost_usd: 0,
      is_byok: rnd() < 0.2 ? 1 : 0,
      attempts: 1,
      // Log-spread from 0 ms to ~15 minutes (the histogram's last bucket starts at ~17.5).
      latency_ms: rnd() < 0.03 ? 0 : Math.floor(2 ** (rnd() * 19.7)),
      generation_time_ms: 0,
      error_message: null,
      created_at: new Date(START + Math.floor(rnd() * SPAN)).toISOString(),
      passthrough: 0,
      upstream_id: null,
      web_search_requests: 0,
      provider_responses: null,
    };
  }

  const table = async () =>
    (await sql<Record<string, unknown>>`select * from generation_hours`.execute(handle.db)).rows
      .map((r) =>
        Object.fromEntries(
          Object.entries(r).map(([k, v]) => [
            k,
            typeof v === 'string' && /^h\d+$|tokens|requests|errors|latency/.test(k) ? Number(v) : v,
          ]),
        ),
      )
      .sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-rollup-'));
    let schema: string | undefined;
    if (kind === 'postgres') {
      schema = `t_${randomBytes(6).toString('hex')}`;
      const c = new pg.Client({ connectionString: postgresUrl as string });
      await c.connect();
      await c.query(`create schema ${schema}`);
      await c.end();
    }
    handle = openDatabase(kind === 'sqlite' ? join(dir, 'db.sqlite') : (postgresUrl as string), { schema });
    cleanup = async () => {
      await handle.close();
      if (schema) {
        const c = new pg.Client({ connectionString: postgresUrl as string });
        await c.connect();
        await c.query(`drop schema if exists ${schema} cascade`);
        await c.end();
      }
      rmSync(dir, { recursive: true, force: true });
    };
    await migrateToLatest(handle);
    svc = new ActivityService(handle.db, handle.dialect);

    // The accountant's group commits (SQLite: its prepared statements; PostgreSQL: Kysely).
    const accountant = new Accountant(
      handle.db,
      silentLog,
      { intervalMs: 5, maxBatch: 97 },
      handle.sqlite ?? null,
    );
    const viaAccountant = Array.from({ length: 1500 }, gen);
    for (const r of viaAccountant) void accountant.record(r);
    await accountant.close();
    if (handle.sqlite) {
      // The gateway's accountant on a SQLite file: group commits on the writer thread.
      const threaded = new Accountant(
        handle.db,
        silentLog,
        { intervalMs: 5, maxBatch: 97 },
        handle.sqlite,
        null,
        startGenerationWriter(handle.sqlite.name, () => {}),
      );
      for (const r of Array.from({ length: 1000 }, gen)) void threaded.record(r);
      await threaded.close();
    }
    // Its replay of a journal: rows already written are skipped, and not counted twice.
    const replay = [...viaAccountant.slice(0, 40), ...Array.from({ length: 60 }, gen)];
    const insertMissing = (
      accountant as unknown as { insertMissing(rows: GenerationsTable[]): Promise<number> }
    ).insertMissing.bind(accountant);
    expect(await insertMissing(replay)).toBe(60);
    // The batch worker's writes (in its transaction; SQLite: prepared statements).
    await handle.db.transaction().execute((tx) => insertGenerations(tx, Array.from({ length: 500 }, gen)));
    if (handle.sqlite) {
      const insert = sqliteGenerationInserts(handle.sqlite);
      handle.sqlite.transaction(() => insert(Array.from({ length: 500 }, gen), []))();
    }
  });
  afterAll(() => cleanup?.());

  /** Series points keyed by (bucket, groups). */
  const byCell = (points: SeriesPoint[]) =>
    new Map(points.map((p) => [JSON.stringify([p.bucket, ...p.groups]), p]));

  function expectSame(rollup: SeriesPoint[], raw: SeriesPoint[], what: string) {
    const a = byCell(rollup);
    const b = byCell(raw);
    expect([...a.keys()], what).toEqual([...b.keys()]);
    for (const [k, r] of b) {
      const p = a.get(k) as SeriesPoint;
      const at = `${what} ${k}`;
      for (const m of [
        'requests',
        'errors',
        'prompt_tokens',
        'completion_tokens',
        'reasoning_tokens',
        'tokens',
      ] as const)
        expect(p[m], `${at} ${m}`).toBe(r[m]);
      expect(p.spend, `${at} spend`).toBeCloseTo(r.spend, 9);
      expect(p.byok_spend, `${at} byok_spend`).toBeCloseTo(r.byok_spend, 9);
      for (const m of ['latency_p50_ms', 'latency_p95_ms'] as const) {
        const exact = r[m];
        if (exact === null) expect(p[m], `${at} ${m}`).toBeNull();
        else
          expect(Math.abs((p[m] as number) - exact), `${at} ${m}: ${p[m]} vs ${exact}`).toBeLessThanOrEqual(
            RELATIVE_ERROR * exact + 0.5,
          );
      }
    }
  }

  it('the series from the rollup equals the series from every generation', async () => {
    const filters: Omit<GenerationFilter, 'organizationId'>[] = [
      {},
      { workspaceId: 'ws-2' },
      { keyHash: 'k1' },
      { userId: 'u2' },
      { model: 'm/asked' },
      { provider: 'p1' },
      { model: 'm/a', workspaceId: 'ws-1' },
    ];
    const groupings: GroupBy[][] = [
      [],
      ['model'],
      ['provider'],
      ['key'],
      ['workspace'],
      ['model', 'provider'],
    ];
    let compared = 0;
    for (let i = 0; i < 60; i++) {
      // Random bounds, some on whole hours: partial edge hours at either end, or none.
      const at = () => {
        const t = START - HOUR + Math.floor(rnd() * (SPAN + 2 * HOUR));
        return rnd() < 0.3 ? Math.floor(t / HOUR) * HOUR : t;
      };
      let [from, to] = [at(), at()].sort((x, y) => x - y) as [number, number];
      if (to - from < 2 * HOUR) to = from + 2 * HOUR + Math.floor(rnd() * 5 * HOUR);
      const q = {
        bucket: pick(['hour', 'day', null] as const),
        groupBy: pick(groupings),
        from: new Date(from).toISOString(),
        to: new Date(to).toISOString(),
        // Now and then without percentiles (what /analytics/query does when it asks none).
        ...(rnd() < 0.2 ? { latency: false } : {}),
      };
      const f: GenerationFilter = {
        organizationId: pick(['org-1', 'org-2']),
        ...pick(filters),
      };
      const what = JSON.stringify({ f, q });
      const rollup = await svc.series(f, q);
      const raw = await svc.rawSeries({ ...f, from: q.from, to: q.to }, q);
      expectSame(rollup, raw, what);
      if (q.latency === false) expect(rollup.every((p) => p.latency_p95_ms === null)).toBe(true);
      compared += raw.length;
    }
    expect(compared).toBeGreaterThan(500);
  });

  it('a range with no whole hour, or a filter the rollup lacks, reads the generations (exact)', async () => {
    const f: GenerationFilter = { organizationId: 'org-1' };
    expect(
      await svc.rollupCells(
        { ...f, from: '2026-11-20T10:10:00.000Z', to: '2026-11-20T10:50:00.000Z' },
        null,
        [],
      ),
    ).toBeNull();
    expect(
      await svc.rollupCells(
        { ...f, status: 'error', from: '2026-11-20T00:00:00.000Z', to: '2026-11-21T00:00:00.000Z' },
        null,
        [],
      ),
    ).toBeNull();
    const q = { bucket: null, groupBy: [], from: '2026-11-20T10:10:00.000Z', to: '2026-11-20T10:50:00.000Z' };
    expect(await svc.series(f, q)).toEqual(await svc.rawSeries({ ...f, from: q.from, to: q.to }, q));
  });

  it('GET /activity’s days from the rollup equal the raw sums', async () => {
    const now = new Date(START + SPAN + 5 * HOUR);
    const rows = await svc.activity({ organizationId: 'org-1' }, undefined, true, now);
    const raw = await totals(
      handle.db,
      {
        organizationId: 'org-1',
        from: new Date(START - 27 * 24 * HOUR).toISOString(),
        to: new Date(START + SPAN).toISOString(),
      },
      'day',
      ['model', 'provider', 'workspace'],
    );
    expect(rows).toHaveLength(raw.length);
    for (const r of raw) {
      const mine = rows.find(
        (x) =>
          x.date === r.bucket &&
          x.model === (r.groups[0] ?? 'unknown') &&
          x.provider_name === (r.groups[1] ?? 'unknown') &&
          x.workspace_id === r.groups[2],
      );
      expect(mine).toMatchObject({
        requests: r.requests,
        prompt_tokens: r.prompt_tokens,
        reasoning_tokens: r.reasoning_tokens,
      });
      expect(mine?.usage).toBeCloseTo(r.spend, 9);
      expect(mine?.byok_usage_inference).toBeCloseTo(r.byok_spend, 9);
    }
  });

  it('the migration’s backfill and a rebuild give the table the writers built', async () => {
    const built = await table();
    expect(built.length).toBeGreaterThan(100);
    const close = (rows: Record<string, unknown>[]) =>
      rows.map(({ spend, byok_spend, ...r }) => ({
        ...r,
        spend: Number(spend).toFixed(9),
        byok_spend: Number(byok_spend).toFixed(9),
      }));
    await rebuildHours(handle.db);
    expect(close(await table())).toEqual(close(built));
    await rebuildHours(handle.db, 'org-2');
    expect(close(await table())).toEqual(close(built));
    await handle.db.schema.dropTable('generation_hours').execute();
    await m0018.up(handle.db);
    expect(close(await table())).toEqual(close(built));
  });
});
