/**
 * Counts the database statements Gatehouse runs per inference call once warm — the check that the
 * hot path makes no database round trip in the common case (key, policy, BYOK credentials, spend
 * counters and balance all come from caches; generations are written in group commits).
 *
 *   npx tsx bench/db-queries.ts [calls=2000]
 *
 * Builds the gateway in-process on a throwaway SQLite file with the model `bench/fast` on the
 * bench mock upstream, wraps better-sqlite3's statements (`run` / `get` / `all` / `iterate`: every
 * statement Kysely or the accounting writer executes goes through them) to count executions by SQL,
 * makes warm-up calls, then counts over `calls` more calls (half streamed) made through Fastify's
 * `inject`. Prints a JSON summary.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { loadConfig } from '../src/config.js';
import { prepareGateway } from '../src/gateway.js';
import { startMockUpstream } from './mock-upstream.js';

const calls = Number(process.argv[2] ?? 2000);

const counts = new Map<string, number>();
let counting = false;
const count = (sql: string) => {
  if (!counting) return;
  const key = sql
    .replace(/\s+/g, ' ')
    .replace(/(\(\?(, \?)*\),? ?)+/g, '(…) ')
    .slice(0, 90);
  counts.set(key, (counts.get(key) ?? 0) + 1);
};
type Stmt = { source: string } & Record<string, (...args: unknown[]) => unknown>;
const db = SQLite.prototype as unknown as { prepare: (sql: string) => Stmt };
const prepare = db.prepare;
let wrapped = false;
db.prepare = function (this: unknown, sql: string) {
  const stmt = prepare.call(this, sql);
  if (!wrapped) {
    wrapped = true;
    const proto = Object.getPrototypeOf(stmt) as Stmt;
    for (const m of ['run', 'get', 'all', 'iterate']) {
      const original = proto[m] as (...args: unknown[]) => unknown;
      proto[m] = function (this: Stmt, ...args: unknown[]) {
        count(this.source);
        return original.apply(this, args);
      };
    }
  }
  return stmt;
};

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-dbq-'));
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
const apiKey = 'sk-gh-v1-bench-db-queries-000000000000';
const config = loadConfig({
  GATEHOUSE_DATA_DIR: dir,
  GATEHOUSE_CONFIG: catalog,
  GATEHOUSE_DEV_PROVIDER: 'false',
  GATEHOUSE_BOOTSTRAP_API_KEY: apiKey,
  GATEHOUSE_RATE_LIMIT_REQUESTS: '1000000000',
  LOG_LEVEL: 'warn',
});
const g = await prepareGateway(config, { log: { level: 'silent' } });
try {
  const orgId = g.bootstrap.organizationId;
  await g.services.admin.addCredits(orgId, 1_000_000);
  const call = async (i: number) => {
    const res = await g.app.inject({
      method: 'POST',
      url: '/api/v1/chat/completions',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      payload: {
        model: 'bench/fast',
        messages: [{ role: 'user', content: 'Say hello to the benchmark.' }],
        ...(i % 2 === 1 ? { stream: true } : {}),
      },
    });
    if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}: ${res.body}`);
  };
  for (let i = 0; i < 50; i++) await call(i);
  await g.services.accountant.flush();
  counting = true;
  const t0 = Date.now();
  for (let i = 0; i < calls; i++) await call(i);
  await g.services.accountant.flush();
  counting = false;
  const seconds = (Date.now() - t0) / 1000;
  const statements = [...counts].sort((a, b) => b[1] - a[1]);
  const total = statements.reduce((n, [, c]) => n + c, 0);
  const writes = statements
    .filter(([sql]) => /^(insert|update|delete|begin|commit|rollback)/i.test(sql))
    .reduce((n, [, c]) => n + c, 0);
  process.stdout.write(
    `${JSON.stringify(
      {
        calls,
        seconds,
        statements: total,
        perCall: Math.round((total / calls) * 1000) / 1000,
        readsPerCall: Math.round(((total - writes) / calls) * 1000) / 1000,
        writeStatements: writes,
        bySql: Object.fromEntries(statements),
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
