/**
 * Where the batch paths spend their database time: every SQLite statement of an ingestion and of a
 * worker run, by SQL, with its count and time — statement preparation included (Kysely prepares every
 * query it runs). The companion of bench/batches.ts for finding what to fix.
 *
 *   npx tsx bench/batch-queries.ts [requests=5000]
 *
 * Builds the gateway in-process (from src/, worker on: concurrency 64 overall and per provider, poll
 * 50 ms) on a throwaway SQLite file with the model `bench/fast` on the bench mock upstream, wraps
 * better-sqlite3's `prepare` and its statements' `run` / `get` / `all` / `iterate` to time them (hrtime),
 * submits one batch of `requests` ~1 KB chat requests (bench/batch-body.ts) through Fastify's `inject`
 * and waits for `completed`. Prints, for the ingestion (POST → 202) and for the worker (202 →
 * completed) separately: wall time, time inside SQLite statements and in prepare, and the statements by
 * SQL (count, total ms, µs each, per batch request). Numbers are in-process (the mock and the caller
 * share the event loop), so read them as shares, not as throughput.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { loadConfig } from '../src/config.js';
import { prepareGateway } from '../src/gateway.js';
import { batchChunks } from './batch-body.js';
import { startMockUpstream } from './mock-upstream.js';

const requests = Number(process.argv[2] ?? 5000);

interface Tally {
  count: number;
  ns: bigint;
}
let phase: Map<string, Tally> | null = null;
const tally = (key: string, ns: bigint) => {
  if (!phase) return;
  const t = phase.get(key) ?? { count: 0, ns: 0n };
  t.count++;
  t.ns += ns;
  phase.set(key, t);
};
const shape = (sql: string) =>
  sql
    .replace(/\s+/g, ' ')
    .replace(/(\(\?(, \?)*\),? ?)+/g, '(…) ')
    .replace(/\((\?, )+\?\)/g, '(?…)')
    .slice(0, 110);

type Stmt = { source: string } & Record<string, (...args: unknown[]) => unknown>;
const proto = SQLite.prototype as unknown as { prepare: (sql: string) => Stmt };
const prepare = proto.prepare;
let wrapped = false;
proto.prepare = function (this: unknown, sql: string) {
  const t0 = process.hrtime.bigint();
  const stmt = prepare.call(this, sql);
  tally(`PREPARE ${shape(sql)}`, process.hrtime.bigint() - t0);
  if (!wrapped) {
    wrapped = true;
    const sp = Object.getPrototypeOf(stmt) as Stmt;
    for (const m of ['run', 'get', 'all', 'iterate']) {
      const original = sp[m] as (...args: unknown[]) => unknown;
      sp[m] = function (this: Stmt, ...args: unknown[]) {
        const t = process.hrtime.bigint();
        try {
          return original.apply(this, args);
        } finally {
          tally(shape(this.source), process.hrtime.bigint() - t);
        }
      };
    }
  }
  return stmt;
};

function summary(name: string, tallies: Map<string, Tally>, wallMs: number) {
  const rows = [...tallies].sort((a, b) => Number(b[1].ns - a[1].ns));
  const ms = (ns: bigint) => Number(ns) / 1e6;
  const prepareNs = rows.filter(([k]) => k.startsWith('PREPARE')).reduce((n, [, t]) => n + t.ns, 0n);
  const execNs = rows.filter(([k]) => !k.startsWith('PREPARE')).reduce((n, [, t]) => n + t.ns, 0n);
  return {
    phase: name,
    wallMs: Math.round(wallMs),
    sqliteMs: Math.round(ms(execNs)),
    prepareMs: Math.round(ms(prepareNs)),
    sqliteShareOfWall: `${((ms(execNs + prepareNs) / wallMs) * 100).toFixed(1)}%`,
    statements: rows.map(([sql, t]) => ({
      sql,
      count: t.count,
      ms: Math.round(ms(t.ns)),
      usEach: Math.round((ms(t.ns) / t.count) * 1000),
      perRequest: Math.round((t.count / requests) * 1000) / 1000,
    })),
  };
}

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-bq-'));
const mock = await startMockUpstream();
const catalog = join(dir, 'catalog.json');
writeFileSync(
  catalog,
  JSON.stringify({
    development_provider: false,
    providers: [{ slug: 'bench', kind: 'openai-compatible', base_url: mock.baseUrl }],
    models: [
      {
        id: 'bench/fast',
        endpoints: [{ provider: 'bench', upstream_model: 'fast', pricing: { prompt: 0.1, completion: 0.2 } }],
      },
    ],
  }),
);
const apiKey = 'sk-gh-v1-bench-batch-queries-0000000000';
const config = loadConfig({
  GATEHOUSE_DATA_DIR: dir,
  GATEHOUSE_CONFIG: catalog,
  GATEHOUSE_DEV_PROVIDER: 'false',
  GATEHOUSE_BOOTSTRAP_API_KEY: apiKey,
  GATEHOUSE_RATE_LIMIT_REQUESTS: '1000000000',
  GATEHOUSE_BATCH_CONCURRENCY: '64',
  GATEHOUSE_BATCH_PROVIDER_CONCURRENCY: '64',
  GATEHOUSE_BATCH_POLL_MS: '50',
  GATEHOUSE_BATCH_RATE_LIMIT: '0',
  GATEHOUSE_BATCH_MAX_BYTES: String(1 << 30),
  LOG_LEVEL: 'warn',
});
const g = await prepareGateway(config, { log: { level: 'silent' } });
const auth = { authorization: `Bearer ${apiKey}` };
const submit = async (n: number, prefix: string) => {
  const res = await g.app.inject({
    method: 'POST',
    url: '/api/v1/batches',
    headers: { ...auth, 'content-type': 'application/json' },
    payload: Buffer.concat([...batchChunks(n, prefix)]),
  });
  if (res.statusCode !== 202) throw new Error(`HTTP ${res.statusCode}: ${res.body}`);
  return (JSON.parse(res.body) as { id: string }).id;
};
const until = async (id: string) => {
  for (;;) {
    const res = await g.app.inject({ url: `/api/v1/batches/${id}?results_limit=0`, headers: auth });
    const b = JSON.parse(res.body) as {
      status: string;
      request_counts: { completed: number; failed: number };
    };
    if (['completed', 'failed', 'expired', 'cancelled'].includes(b.status)) return b;
    await new Promise((r) => setTimeout(r, 100));
  }
};
try {
  await g.services.admin.addCredits(g.bootstrap.organizationId, 1_000_000);
  // Warm-up: a small batch through both paths.
  await until(await submit(200, 'warm-'));

  const ingest = new Map<string, Tally>();
  phase = ingest;
  let t0 = performance.now();
  const id = await submit(requests, 'req-');
  const ingestMs = performance.now() - t0;

  const work = new Map<string, Tally>();
  phase = work;
  t0 = performance.now();
  const done = await until(id);
  const workMs = performance.now() - t0;
  phase = null;
  process.stdout.write(
    `${JSON.stringify(
      {
        requests,
        result: done,
        ingestion: summary('ingestion (POST → 202)', ingest, ingestMs),
        worker: summary('worker (202 → completed, polling every 100 ms included)', work, workMs),
      },
      null,
      2,
    )}\n`,
  );
} finally {
  await g.app.close();
  await mock.close();
  rmSync(dir, { recursive: true, force: true });
}
