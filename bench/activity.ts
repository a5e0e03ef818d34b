/**
 * The generations list (GET /generations) and the analytics series over 1,000,000 generations, on
 * SQLite and on PostgreSQL: p50/p95 of each common filter's first page, of pages deep in a cursor
 * walk, and of a week's series. Reported, not asserted (target: a list page ≤ 100 ms).
 *
 *   npm run bench:activity [-- rows=1000000]
 *   BENCH_DATABASE_URL=postgres://… (else TEST_DATABASE_URL) adds the PostgreSQL run.
 *
 * Seeds inside the database with one INSERT … SELECT over a generated series (no round trip per
 * row), the 0015 indexes in place: 60 % of rows belong to one large organization, the rest to 99
 * small ones, over 30 days, then the hourly rollup built from them (as migration 0018's backfill
 * does). Times the service (query + generation view), not HTTP; the series also once without the
 * rollup, for comparison.
 * Writes bench/results/<date>-activity.{json,md}.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import type { GroupBy } from '../src/activity/analytics.store.js';
import type { GenerationFilter } from '../src/activity/filter.js';
import { rebuildHours } from '../src/activity/hours.store.js';
import { ActivityService } from '../src/activity/service.js';
import { type DbHandle, openDatabase } from '../src/db/connection.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { seedSql } from './activity-seed.js';

const ROWS = Number(process.argv.find((a) => a.startsWith('rows='))?.slice(5) ?? 1_000_000);
const REPEAT = 40;
const RAW_REPEAT = 3;
const PG_URL = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || null;

import { ORG, SPAN_MS, START } from './activity-seed.js';

interface Result {
  name: string;
  p50: number;
  p95: number;
  rows: number;
}

async function time(fn: () => Promise<number>, repeat = REPEAT): Promise<Result & { name: '' }> {
  const ms: number[] = [];
  let rows = 0;
  for (let i = 0; i < repeat; i++) {
    const t = performance.now();
    rows = await fn();
    ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  const at = (p: number) => ms[Math.min(ms.length - 1, Math.ceil(p * ms.length) - 1)] as number;
  return { name: '', p50: at(0.5), p95: at(0.95), rows };
}

async function open(kind: 'sqlite' | 'postgres') {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-activity-'));
  if (kind === 'sqlite') {
    const handle = openDatabase(join(dir, 'db.sqlite'));
    return { handle, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const schema = `bench_${randomBytes(5).toString('hex')}`;
  const admin = async (q: string) => {
    const c = new pg.Client({ connectionString: PG_URL as string });
    await c.connect();
    await c.query(q);
    await c.end();
  };
  await admin(`create schema ${schema}`);
  const handle = openDatabase(PG_URL as string, { schema });
  return {
    handle,
    drop: async () => {
      await admin(`drop schema if exists ${schema} cascade`);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function run(kind: 'sqlite' | 'postgres') {
  const { handle, drop } = await open(kind);
  try {
    return await measure(kind, handle);
  } finally {
    await handle.close();
    await drop();
  }
}

async function measure(kind: 'sqlite' | 'postgres', handle: DbHandle) {
  await migrateToLatest(handle);
  const t0 = performance.now();
  await sql.raw(seedSql(kind, ROWS)).execute(handle.db);
  await sql`analyze`.execute(handle.db);
  const seedSeconds = (performance.now() - t0) / 1000;
  console.log(`${kind}: seeded ${ROWS} rows in ${seedSeconds.toFixed(1)} s`);
  // The seed bypasses the writers, so the hourly rollup is built once from the rows (as 0018's
  // backfill does for a database upgraded with generations in it).
  const t1 = performance.now();
  await rebuildHours(handle.db);
  await sql`analyze`.execute(handle.db);
  const rollupSeconds = (performance.now() - t1) / 1000;
  const cells = await handle.db
    .selectFrom('generation_hours')
    .select(sql<number>`count(*)`.as('n'))
    .executeTakeFirstOrThrow();
  console.log(`${kind}: rolled up into ${cells.n} hour cells in ${rollupSeconds.toFixed(1)} s`);

  const svc = new ActivityService(handle.db, handle.dialect);
  const f = (extra: Omit<GenerationFilter, 'organizationId'> = {}): GenerationFilter => ({
    organizationId: ORG,
    ...extra,
  });
  const mid = new Date(START + SPAN_MS / 2).toISOString();
  const dayAfterMid = new Date(START + SPAN_MS / 2 + 86_400_000).toISOString();
  const lists: [string, GenerationFilter][] = [
    ['newest 50, no filter', f()],
    ['one key', f({ keyHash: 'key-3' })],
    ['one user', f({ userId: 'user-5' })],
    ['one workspace', f({ workspaceId: 'ws-2' })],
    ['one model', f({ model: 'm/model-4' })],
    ['one provider', f({ provider: 'p4' })],
    ['errors', f({ status: 'error' })],
    ['errors of one model', f({ status: 'error', model: 'm/model-10' })],
    ['one day (mid-range)', f({ from: mid, to: dayAfterMid })],
    ['streamed, pass-through', f({ streamed: true, lane: 'passthrough' })],
    ['cost ≥ $0.009', f({ minCost: 0.009 })],
    ['a small organization', { organizationId: 'org-7' }],
  ];
  const results: Result[] = [];
  for (const [name, filter] of lists) {
    const r = await time(async () => (await svc.list(filter, 50, undefined)).data.length);
    results.push({ ...r, name: `list: ${name}` });
  }
  // Pagination: a page 100 pages into a walk (cursor from the walk itself), and one key's.
  for (const [name, filter] of [
    ['page 100, no filter', f()],
    ['page 100, one key', f({ keyHash: 'key-3' })],
  ] as const) {
    let cursor: string | undefined;
    for (let i = 0; i < 99; i++) cursor = (await svc.list(filter, 50, cursor)).next_cursor ?? undefined;
    const r = await time(async () => (await svc.list(filter, 50, cursor)).data.length);
    results.push({ ...r, name: `list: ${name}` });
  }
  const weekFrom = new Date(START + SPAN_MS - 7 * 86_400_000).toISOString();
  const end = new Date(START + SPAN_MS).toISOString();
  // The console asks up to now: a range whose first and last hours are partial (read raw).
  const ragged = {
    from: new Date(START + SPAN_MS - 7 * 86_400_000 + 17 * 60_000).toISOString(),
    to: new Date(START + SPAN_MS - 23 * 60_000).toISOString(),
  };
  const series: [string, 'hour' | 'day', GroupBy[], string, string][] = [
    ['series: last 24 h by hour', 'hour', [], new Date(START + SPAN_MS - 86_400_000).toISOString(), end],
    [
      'series: last 24 h by hour and model',
      'hour',
      ['model'],
      new Date(START + SPAN_MS - 86_400_000).toISOString(),
      end,
    ],
    ['series: last 7 days by day and provider', 'day', ['provider'], weekFrom, end],
    ['series: last 7 days by hour', 'hour', [], weekFrom, end],
    ['series: last 7 days by hour and model', 'hour', ['model'], weekFrom, end],
    ['series: 7 days by hour, partial edge hours', 'hour', [], ragged.from, ragged.to],
  ];
  for (const [name, bucket, groupBy, from, to] of series) {
    const r = await time(async () => (await svc.series(f(), { bucket, groupBy, from, to })).length);
    results.push({ ...r, name });
  }
  // The same week without the rollup (every generation read), for comparison: a few runs only.
  const raw = await time(
    async () =>
      (
        await svc.rawSeries(
          { ...f(), from: weekFrom, to: end },
          { bucket: 'hour', groupBy: [], from: weekFrom, to: end },
        )
      ).length,
    RAW_REPEAT,
  );
  results.push({ ...raw, name: `series without rollup: 7 days by hour (${RAW_REPEAT} runs)` });
  for (const r of results)
    console.log(
      `${kind}  ${r.name.padEnd(44)} p50 ${r.p50.toFixed(2).padStart(8)} ms  p95 ${r.p95.toFixed(2).padStart(8)} ms  (${r.rows} rows)`,
    );
  return {
    db: kind,
    rows: ROWS,
    seedSeconds,
    rollupSeconds,
    cells: Number(cells.n),
    repeat: REPEAT,
    results,
  };
}

const runs = [await run('sqlite')];
if (PG_URL) runs.push(await run('postgres'));
else console.warn('PostgreSQL skipped: set BENCH_DATABASE_URL or TEST_DATABASE_URL');

const date = new Date().toISOString().slice(0, 10);
const out = join(import.meta.dirname, 'results');
mkdirSync(out, { recursive: true });
writeFileSync(join(out, `${date}-activity.json`), `${JSON.stringify({ date, runs }, null, 2)}\n`);
const md = [
  `# Generations list and analytics over ${ROWS.toLocaleString('en')} generations (${date})`,
  '',
  `Service-level (query + generation view), ${REPEAT} repetitions each; ms. 60 % of rows in one organization (the one queried).`,
  '',
  `| query | ${runs.map((r) => `${r.db} p50 | ${r.db} p95`).join(' | ')} |`,
  `|---|${runs.map(() => '---:|---:').join('|')}|`,
  ...(runs[0]?.results ?? []).map(
    (r, i) =>
      `| ${r.name} | ${runs.map((x) => `${x.results[i]?.p50.toFixed(1)} | ${x.results[i]?.p95.toFixed(1)}`).join(' | ')} |`,
  ),
  '',
  `Seeding: ${runs.map((r) => `${r.db} ${r.seedSeconds.toFixed(0)} s`).join(', ')}. Rolling up: ${runs.map((r) => `${r.db} ${r.rollupSeconds.toFixed(0)} s into ${r.cells.toLocaleString('en')} hour cells`).join(', ')}.`,
  '',
];
writeFileSync(join(out, `${date}-activity.md`), md.join('\n'));
console.log(md.join('\n'));
