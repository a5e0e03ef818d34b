/**
 * `gatehouse serve --workers 2`: one real CLI process forking two workers that share the port.
 * Without Redis the primary holds what the workers share (rate limits, usage limits, spend
 * reservations) and relays the cluster bus; with REDIS_URL the workers use Redis as nodes do.
 *
 * Every call goes over a new connection: the primary hands connections to the workers in turn,
 * so both serve each burst — which the tests check in the log (the pid of every request line).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, databases } from './support/gateway.js';
import { type MockUpstream, startMockUpstream } from './support/mock-upstream.js';
import {
  type GatehouseProcess,
  killAll,
  newKeys,
  type SharedDatabase,
  sharedDatabase,
  startProcess,
  waitFor,
} from './support/processes.js';
import { REDIS_URL, redisReachable } from './support/redis.js';

const redisUp = await redisReachable(REDIS_URL);

/** $0.20 a call: 100 output tokens at $2,000 per million (the reservation is its worst case). */
const RESERVATION = 0.2 + 1e-6;
const costly = { model: 'test/costly', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] };
const cheap = { model: 'test/gpt', messages: [{ role: 'user', content: 'hi' }] };

interface Reply {
  status: number;
  body: any;
  /** x-gatehouse-generation-id (the call's row in `generations`). */
  generation: string | undefined;
}

/** One call on a connection of its own (`agent: false`), so the primary may give it to either worker. */
function call(base: string, key: string, method: string, path: string, body?: unknown): Promise<Reply> {
  const data = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      `${base}/api/v1${path}`,
      {
        method,
        agent: false,
        headers: {
          authorization: `Bearer ${key}`,
          ...(data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {}),
        },
        timeout: 60_000,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => {
          text += c;
        });
        res.on('end', () => {
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {}
          const generation = res.headers['x-gatehouse-generation-id'];
          resolve({
            status: res.statusCode ?? 0,
            body: parsed,
            generation: generation as string | undefined,
          });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.end(data);
  });
}

/** A tag for a burst's URLs (`?t=…`): the log lines of its requests carry it. */
const newTag = () => randomBytes(4).toString('hex');

/**
 * Reads the process's log as it comes (its kept output is only the last 64 KB): which pid completed
 * the requests of each tag, and the primary's messages.
 */
function watchLog(p: GatehouseProcess) {
  const byTag = new Map<string, Set<number>>();
  const messages: string[] = [];
  let partial = '';
  p.child.stdout?.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString('utf8')).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      let entry: { pid?: number; msg?: string; req?: { url?: string } };
      try {
        entry = JSON.parse(line);
      } catch {
        continue;
      }
      if (entry.msg === 'request completed') {
        const tag = /[?&]t=([0-9a-f]+)/.exec(entry.req?.url ?? '')?.[1];
        if (!tag || entry.pid === undefined) continue;
        const pids = byTag.get(tag) ?? new Set<number>();
        pids.add(entry.pid);
        byTag.set(tag, pids);
      } else if (entry.msg) messages.push(entry.msg);
    }
  });
  return {
    /** The pids that served the requests of `tag`. */
    servedBy: (tag: string) => byTag.get(tag) ?? new Set<number>(),
    logged: (msg: string) => messages.includes(msg),
  };
}

/** Per-minute windows are clock minutes: a test starting in a minute's last seconds waits for the next. */
async function awayFromMinuteEdge() {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 15_000) await new Promise((r) => setTimeout(r, left + 50));
}

function configFile(mockUrl: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'gatehouse-workers-')), 'gatehouse.json');
  writeFileSync(
    file,
    JSON.stringify({
      providers: [
        {
          slug: 'openai',
          kind: 'openai',
          base_url: `${mockUrl}/v1`,
          api_key: 'sk-op-0000',
          native_batches: false,
        },
      ],
      models: [
        {
          id: 'test/gpt',
          endpoints: [{ provider: 'openai', upstream_model: 'gpt-x', pricing: { prompt: 1, completion: 2 } }],
        },
        {
          id: 'test/costly',
          endpoints: [
            { provider: 'openai', upstream_model: 'costly-x', pricing: { prompt: 1, completion: 2000 } },
          ],
        },
      ],
    }),
  );
  return file;
}

/** Starts `serve --workers 2` and waits until both workers serve (the primary logs it). */
async function startWorkers(
  name: string,
  db: SharedDatabase,
  keys: ReturnType<typeof newKeys>,
  env: Record<string, string>,
) {
  const p = await startProcess('serve', {
    name,
    db,
    keys,
    args: ['--workers', '2'],
    readyMs: 120_000,
    env: { LOG_LEVEL: 'info', GATEHOUSE_WORKER: 'off', ...env },
  });
  const log = watchLog(p);
  await waitFor(`${name}: both workers serving`, () => p.output().includes('all workers serving'), {
    timeoutMs: 120_000,
  });
  const orgs = await call(p.url, ADMIN_TOKEN, 'GET', '/admin/organizations');
  await call(p.url, ADMIN_TOKEN, 'POST', '/admin/credits', {
    organization_id: orgs.body.data[0].id,
    amount_usd: 1000,
  });
  // The primary's line saying so (where the shared state lives).
  const ready = p
    .output()
    .split('\n')
    .find((l) => l.includes('all workers serving'));
  const metrics = p
    .output()
    .split('\n')
    .find((l) => l.includes('metrics of all workers'));
  return {
    p,
    log,
    ready: ready ?? '',
    metricsUrl: metrics ? (JSON.parse(metrics) as { url: string }).url : '',
  };
}

async function newKey(p: GatehouseProcess, managementKey: string, fields: object = {}) {
  const res = await call(p.url, managementKey, 'POST', '/keys', {
    name: `k-${randomBytes(3).toString('hex')}`,
    ...fields,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { key: res.body.key as string, hash: res.body.data.hash as string };
}

/** `n` calls at once, each on its own connection, tagged `tag`. */
const burst = (base: string, key: string, n: number, tag: string, body: object = cheap) =>
  Promise.all(Array.from({ length: n }, () => call(base, key, 'POST', `/chat/completions?t=${tag}`, body)));

/**
 * A burst of `n` calls on a fresh key (from `fresh`), again on another fresh key until both workers
 * served one burst (at most 5 bursts: the primary hands connections to whichever worker is free,
 * and a busy one may get none of a short burst). The statuses of that burst.
 */
async function burstOnBoth(
  log: ReturnType<typeof watchLog>,
  base: string,
  fresh: () => Promise<string>,
  n: number,
): Promise<{ statuses: number[]; workers: number }> {
  for (let attempt = 1; ; attempt++) {
    const tag = newTag();
    const statuses = (await burst(base, await fresh(), n, tag)).map((r) => r.status);
    const workers = log.servedBy(tag).size;
    if (workers === 2 || attempt === 5) return { statuses, workers };
  }
}

/** The generations of `ids` in the database once they all are (their cost summed). */
const recorded = (db: SharedDatabase, ids: string[]) =>
  waitFor(
    'the answered calls recorded',
    async () => {
      const rows = await db.query<{ id: string; cost: number }>(
        `select id, cost_usd as cost from generations where id in (${ids.map(() => '?').join(',')})`,
        ids,
      );
      return rows.length === ids.length ? rows : null;
    },
    { timeoutMs: 45_000 },
  );

afterAll(killAll);

describe.each(databases)('serve --workers 2 on %s, without Redis', (kind) => {
  let db: SharedDatabase;
  let mock: MockUpstream;
  let gw: GatehouseProcess;
  let log: ReturnType<typeof watchLog>;
  let metricsUrl: string;
  let catalogFile: string;
  const keys = newKeys();

  beforeAll(async () => {
    mock = await startMockUpstream();
    db = await sharedDatabase(kind);
    catalogFile = configFile(mock.url);
    ({
      p: gw,
      log,
      metricsUrl,
    } = await startWorkers(`workers-${kind}`, db, keys, {
      GATEHOUSE_CONFIG: catalogFile,
      // The node-wide per-key limiter (rate-limiter-flexible): 60 requests an hour for each key.
      GATEHOUSE_RATE_LIMIT_REQUESTS: '60',
      GATEHOUSE_RATE_LIMIT_WINDOW_SECONDS: '3600',
      // Group commits every 5 s: a killed worker certainly holds answered calls not written yet.
      GATEHOUSE_ACCOUNTING_INTERVAL_MS: '5000',
    }));
  }, 180_000);
  afterAll(async () => {
    await killAll();
    await db?.drop();
    await mock?.close();
  });

  it("a key's rpm_limit: the two workers together admit exactly the limit", async () => {
    await awayFromMinuteEdge();
    const fresh = async () => (await newKey(gw, keys.managementKey, { rpm_limit: 10 })).key;
    const { statuses, workers } = await burstOnBoth(log, gw.url, fresh, 30);
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20);
    expect(workers).toBe(2);
  }, 60_000);

  it('the per-key request limit (GATEHOUSE_RATE_LIMIT_REQUESTS) holds across the workers', async () => {
    const { key } = await newKey(gw, keys.managementKey);
    const tag = newTag();
    const statuses = (await burst(gw.url, key, 90, tag)).map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(60);
    expect(statuses.filter((s) => s === 429)).toHaveLength(30);
    expect(log.servedBy(tag).size).toBe(2);
  }, 60_000);

  it('a guardrail budget holds across the workers (to one reservation)', async () => {
    const { key, hash } = await newKey(gw, keys.managementKey);
    const g = await call(gw.url, keys.managementKey, 'POST', '/guardrails', {
      name: 'one dollar',
      limit_usd: 1,
      reset_interval: 'daily',
    });
    expect(g.status).toBe(201);
    const assigned = await call(
      gw.url,
      keys.managementKey,
      'POST',
      `/guardrails/${g.body.data.id}/assignments/keys`,
      { key_hashes: [hash] },
    );
    expect(assigned.status).toBeLessThan(300);
    mock.reset();
    // Slow answers, so the calls overlap; each reports usage worth $0.200001.
    mock.enqueue({
      times: 60,
      delayMs: 400,
      reply: { text: 'ok', usage: { prompt_tokens: 1, completion_tokens: 100 } },
    });
    const tag = newTag();
    const res = await burst(gw.url, key, 30, tag, costly);
    expect(log.servedBy(tag).size).toBe(2);
    // Then one at a time (each worker in turn) until refused: a call fits while any headroom is left.
    for (let i = 0; i < 6; i++)
      res.push(await call(gw.url, key, 'POST', `/chat/completions?t=${tag}`, costly));
    expect(res.slice(-2).map((r) => r.status)).toEqual([403, 403]);
    const served = res.filter((r) => r.status === 200);
    for (const r of res.filter((x) => x.status !== 200)) {
      expect(r.status).toBe(403);
      expect(r.body.error.message).toMatch(/Budget of guardrail "one dollar"/);
    }
    const rows = await recorded(
      db,
      served.map((r) => r.generation as string),
    );
    const spent = rows.reduce((n, r) => n + Number(r.cost), 0);
    expect(served.length).toBeGreaterThanOrEqual(4);
    expect(spent, `budget $1: recorded $${spent.toFixed(6)}`).toBeLessThanOrEqual(1 + RESERVATION);
  }, 90_000);

  it('a key disabled through one worker is refused by the other at once', async () => {
    const { key, hash } = await newKey(gw, keys.managementKey);
    // Both workers have the key cached (each answers from its cache until told otherwise).
    const warm = newTag();
    await waitFor('both workers to serve the key', async () => {
      const r = await Promise.all(
        Array.from({ length: 4 }, () => call(gw.url, key, 'GET', `/key?t=${warm}`)),
      );
      expect(r.map((x) => x.status)).toEqual([200, 200, 200, 200]);
      return log.servedBy(warm).size === 2;
    });
    const disabled = await call(gw.url, keys.managementKey, 'PATCH', `/keys/${hash}`, { disabled: true });
    expect(disabled.status).toBe(200);
    // From the very next calls on, on both workers (bursts until both served one: the primary hands
    // a burst's connections to whichever worker is free first).
    const tag = newTag();
    const after: number[] = [];
    for (let round = 0; round < 10 && log.servedBy(tag).size < 2; round++)
      for (const r of await Promise.all(
        Array.from({ length: 10 }, () => call(gw.url, key, 'GET', `/key?t=${tag}`)),
      ))
        after.push(r.status);
    expect(after.every((s) => s === 401)).toBe(true);
    expect(log.servedBy(tag).size).toBe(2);
  }, 60_000);

  it('a catalog reload through one worker reloads the other too', async () => {
    const before = await call(gw.url, keys.apiKey, 'GET', '/model/test/added');
    expect(before.status).toBe(404);
    const config = JSON.parse(readFileSync(catalogFile, 'utf8'));
    config.models.push({
      id: 'test/added',
      endpoints: [{ provider: 'openai', upstream_model: 'added-x', pricing: { prompt: 1, completion: 2 } }],
    });
    writeFileSync(catalogFile, JSON.stringify(config));
    const reloaded = await call(gw.url, ADMIN_TOKEN, 'POST', '/admin/catalog/reload');
    expect(reloaded.status, JSON.stringify(reloaded.body)).toBe(200);
    // Bursts until one was served by both workers, every call of it knowing the new model (the
    // other worker reloads when the primary relays the event: a moment later, not never).
    await waitFor(
      'both workers to serve the reloaded catalog',
      async () => {
        const tag = newTag();
        const r = await Promise.all(
          Array.from({ length: 10 }, () => call(gw.url, keys.apiKey, 'GET', `/model/test/added?t=${tag}`)),
        );
        return log.servedBy(tag).size === 2 && r.every((x) => x.status === 200);
      },
      { timeoutMs: 20_000 },
    );
  }, 60_000);

  it('kill -9 of a worker mid-run: the primary restarts it; every answered call is recorded', async () => {
    mock.reset();
    mock.enqueue({
      times: 1000,
      delayMs: 50,
      reply: { text: 'ok', usage: { prompt_tokens: 3, completion_tokens: 4 } },
    });
    const warm = newTag();
    const probe = await newKey(gw, keys.managementKey);
    await waitFor('both workers to serve', async () => {
      await burst(gw.url, probe.key, 4, warm);
      return log.servedBy(warm).size === 2;
    });
    const victim = [...log.servedBy(warm)][0] as number;
    const answered: string[] = [];
    let failed = 0;
    let killed = false;
    // 8 callers, 10 calls each, one at a time (a key each: the node-wide limit is 60 an hour).
    const callers = await Promise.all(Array.from({ length: 8 }, () => newKey(gw, keys.managementKey)));
    const tag = newTag();
    await Promise.all(
      callers.map(async ({ key }, c) => {
        for (let i = 0; i < 10; i++) {
          if (c === 0 && i === 5 && !killed) {
            killed = true;
            process.kill(victim, 'SIGKILL');
          }
          try {
            const r = await call(gw.url, key, 'POST', `/chat/completions?t=${tag}`, cheap);
            if (r.status === 200 && r.generation) answered.push(r.generation);
            else failed++;
          } catch {
            failed++; // its connection was on the killed worker
          }
        }
      }),
    );
    console.info(
      `kill -9 of a worker amid 80 calls from 8 callers: ${failed} failed, ${answered.length} answered`,
    );
    // At most the calls in flight on the killed worker failed (one per caller at most).
    expect(failed).toBeLessThanOrEqual(8);
    expect(answered.length).toBe(80 - failed);
    await waitFor('the primary to restart the worker', () => log.logged('worker serving again'), {
      timeoutMs: 90_000,
    });
    expect(log.logged('worker exited; restarting it')).toBe(true);
    // Every answered call's generation is in the database (the killed worker's through its journal,
    // written by the worker that replaced it), once.
    const rows = await recorded(db, answered);
    expect(new Set(rows.map((r) => r.id)).size).toBe(answered.length);
    // The restarted worker serves.
    const again = newTag();
    await waitFor('both workers to serve again', async () => {
      await Promise.all(Array.from({ length: 4 }, () => call(gw.url, probe.key, 'GET', `/key?t=${again}`)));
      const pids = log.servedBy(again);
      return pids.size === 2 && !pids.has(victim);
    });
  }, 240_000);

  it("GET /metrics on the primary: both workers' requests, summed", async () => {
    const { key } = await newKey(gw, keys.managementKey);
    const tag = newTag();
    for (let round = 0; round < 10 && log.servedBy(tag).size < 2; round++)
      await Promise.all(Array.from({ length: 4 }, () => call(gw.url, key, 'GET', `/key?t=${tag}`)));
    expect(log.servedBy(tag).size).toBe(2);
    const res = await fetch(`${metricsUrl}/metrics`);
    expect(res.status).toBe(200);
    const text = await res.text();
    // One series per route and status, whichever worker served: the sum of both.
    const line = text
      .split('\n')
      .find((l) => l.startsWith('gatehouse_http_requests_total{') && l.includes('route="/api/v1/key"'));
    expect(line, text.slice(0, 2000)).toBeDefined();
    expect(Number(line?.split(' ').pop())).toBeGreaterThanOrEqual(4);
  }, 60_000);

  it('SIGTERM: the primary stops the workers and exits', async () => {
    gw.kill('SIGTERM');
    const { code } = await gw.exited;
    expect(code).toBe(0);
  }, 90_000);
});

describe.skipIf(!redisUp)('serve --workers 2 with Redis', () => {
  let db: SharedDatabase;
  let mock: MockUpstream;
  let gw: GatehouseProcess;
  let log: ReturnType<typeof watchLog>;
  let ready: string;
  const keys = newKeys();

  beforeAll(async () => {
    mock = await startMockUpstream();
    db = await sharedDatabase('sqlite');
    ({
      p: gw,
      log,
      ready,
    } = await startWorkers('workers-redis', db, keys, {
      GATEHOUSE_CONFIG: configFile(mock.url),
      REDIS_URL,
      GATEHOUSE_REDIS_PREFIX: `gatehouse-test:${randomBytes(6).toString('hex')}`,
      GATEHOUSE_RATE_LIMIT_REQUESTS: '10000',
    }));
  }, 180_000);
  afterAll(async () => {
    await killAll();
    await db?.drop();
    await mock?.close();
  });

  it("a key's rpm_limit holds across the workers through Redis; an invalidation reaches both", async () => {
    // The workers' first calls (connections, scripts) before the measured burst.
    const warm = await newKey(gw, keys.managementKey);
    await burst(gw.url, warm.key, 10, newTag());
    await awayFromMinuteEdge();
    let key = '';
    let hash = '';
    const fresh = async () => {
      ({ key, hash } = await newKey(gw, keys.managementKey, { rpm_limit: 10 }));
      return key;
    };
    const { statuses, workers } = await burstOnBoth(log, gw.url, fresh, 30);
    const served = statuses.filter((s) => s === 200).length;
    // A Redis command slower than 200 ms (a loaded machine) makes that worker count in memory
    // meanwhile, as separate nodes do (logged): up to workers × the limit. Exact otherwise.
    const fellBack = /Usage limits: Redis unavailable/.test(gw.output());
    if (fellBack)
      console.info(`Redis timed out during the burst (logged): ${served} served against rpm_limit 10`);
    if (fellBack) expect(served).toBeGreaterThanOrEqual(10);
    else expect(served).toBe(10);
    expect(served).toBeLessThanOrEqual(20);
    expect(statuses.filter((s) => s !== 200).every((s) => s === 429)).toBe(true);
    expect(workers).toBe(2);
    // No shared state in the primary: it only supervises.
    expect(ready).toContain('"shared":"redis"');
    expect(
      (await call(gw.url, keys.managementKey, 'PATCH', `/keys/${hash}`, { disabled: true })).status,
    ).toBe(200);
    await waitFor('the key refused by both workers', async () => {
      const r = await Promise.all(Array.from({ length: 6 }, () => call(gw.url, key, 'GET', '/key')));
      return r.every((x) => x.status === 401);
    });
  }, 90_000);
});
