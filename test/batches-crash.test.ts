/**
 * Batches across real processes (`gatehouse serve` / `gatehouse worker` as child processes):
 * - a gateway SIGKILLed mid-batch, and a new one finishing the batch (SQLite and PostgreSQL);
 * - a worker stopped by SIGTERM: it drains, exits 0 and hands its leases back to run again at once;
 * - two workers sharing one batch on PostgreSQL (SKIP LOCKED claims: no request runs twice);
 * - a worker frozen (SIGSTOP) past its lease, woken while another worker holds it: it records
 *   nothing (the lease token guards the write).
 * Whatever happens to the processes, every request gets exactly one result, one generation row and
 * one usage event, and the organization is billed once. Read straight from the database, too.
 */
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, databases, postgresUrl } from './support/gateway.js';
import { strictClient } from './support/http.js';
import { renderOpenAiCompletion, resolveReply } from './support/mock-upstream.js';
import {
  type GatehouseProcess,
  GiveUp,
  type Keys,
  killAll,
  newKeys,
  type SharedDatabase,
  sharedDatabase,
  sleep,
  startProcess,
  waitFor,
  workerIdOf,
} from './support/processes.js';

// ---------------------------------------------------------------------------------------------
// A slow OpenAI-format upstream that counts what it sees

interface SlowUpstream {
  url: string;
  /** Delay of the requests that arrive from now on. */
  delayMs: number;
  /** While true nothing is answered (calls due wait): set before killing a client, so that every
   * call it had out is cut off rather than answered to a dying process. */
  frozen: boolean;
  /** Requests received, in total and per custom_id (the message names it). */
  calls: number;
  callsById: Map<string, number>;
  /** Requests received and not answered yet. */
  inflight: number;
  /** …of which arrived while the delay was a minute or more (stuck until the client leaves). */
  stuck: number;
  /** custom_ids of the requests in flight. */
  inflightIds: Set<string>;
  /** custom_ids whose requests arriving from now on are answered only once removed from here. */
  holdIds: Set<string>;
  /** The most requests in flight at once. */
  maxInflight: number;
  /** custom_ids of requests whose client went away before the answer. */
  aborted: string[];
  close(): Promise<void>;
}

/** Token usage the upstream reports for request `i` (varied, so a double bill shows in the sum). */
const usageOf = (i: number) => ({ prompt_tokens: 10 + (i % 7), completion_tokens: 5 + (i % 3) });
/** test/gpt's price per million tokens. */
const PRICE = { prompt: 1, completion: 2 };
const expectedCost = (n: number) => {
  let sum = 0;
  for (let i = 0; i < n; i++) {
    const u = usageOf(i);
    sum += (u.prompt_tokens * PRICE.prompt + u.completion_tokens * PRICE.completion) / 1e6;
  }
  return sum;
};
const customId = (i: number) => `req-${String(i).padStart(4, '0')}`;

async function startSlowUpstream(delayMs: number): Promise<SlowUpstream & { configFile: string }> {
  const pending = new Set<() => void>();
  const up = {
    url: '',
    configFile: '',
    delayMs,
    frozen: false,
    calls: 0,
    callsById: new Map<string, number>(),
    inflight: 0,
    stuck: 0,
    maxInflight: 0,
    inflightIds: new Set<string>(),
    holdIds: new Set<string>(),
    aborted: [] as string[],
    close: async () => {},
  };
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
    const text = String(body?.messages?.[0]?.content ?? '');
    const cid = /req-\d+/.exec(text)?.[0] ?? 'unknown';
    up.calls++;
    up.callsById.set(cid, (up.callsById.get(cid) ?? 0) + 1);
    up.inflight++;
    up.inflightIds.add(cid);
    up.maxInflight = Math.max(up.maxInflight, up.inflight);
    const delay = up.delayMs;
    const held = up.holdIds.has(cid);
    const stuck = delay >= 60_000;
    if (stuck) up.stuck++;
    const answered = await new Promise<boolean>((resolve) => {
      const finish = (ok: boolean) => {
        clearTimeout(timer);
        res.off('close', onClose);
        pending.delete(stop);
        resolve(ok);
      };
      const onClose = () => finish(false);
      const stop = () => finish(false);
      let timer: NodeJS.Timeout;
      const due = () => {
        if (up.frozen || (held && up.holdIds.has(cid))) timer = setTimeout(due, 10);
        else finish(!res.destroyed);
      };
      timer = setTimeout(due, delay);
      res.once('close', onClose);
      pending.add(stop);
    });
    up.inflight--;
    up.inflightIds.delete(cid);
    if (stuck) up.stuck--;
    if (!answered) {
      up.aborted.push(cid);
      res.destroy();
      return;
    }
    const i = Number(cid.slice(4)) || 0;
    const model = String(body.model ?? 'gpt-x');
    const payload = JSON.stringify(
      renderOpenAiCompletion(resolveReply({ text: `done ${cid}`, usage: usageOf(i) }, model, body), model),
    );
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
    res.end(payload);
  };
  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  up.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  up.close = async () => {
    for (const stop of [...pending]) stop();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  };
  return up;
}

/** A catalog with one priced model, test/gpt, served by `up`. */
function writeCatalog(dir: string, up: SlowUpstream): string {
  const file = join(dir, 'gatehouse.json');
  writeFileSync(
    file,
    JSON.stringify({
      development_provider: false,
      // The worker's own crash safety: this upstream speaks no batch API.
      providers: [
        {
          slug: 'openai',
          kind: 'openai',
          base_url: `${up.url}/v1`,
          api_key: 'sk-operator-0000',
          native_batches: false,
        },
      ],
      models: [
        { id: 'test/gpt', endpoints: [{ provider: 'openai', upstream_model: 'gpt-x', pricing: PRICE }] },
      ],
    }),
  );
  return file;
}

// ---------------------------------------------------------------------------------------------
// The API, over HTTP

/** A JSON call that must succeed: its parsed body. */
const api = async <T = any>(base: string, key: string, method: string, path: string, body?: unknown) =>
  (await strictClient(base, key)<T>(method, path, body)).body;

/** The bootstrap organization, given credits. */
async function fundOrganization(gw: GatehouseProcess): Promise<string> {
  const orgs = await api<{ data: { id: string }[] }>(gw.url, ADMIN_TOKEN, 'GET', '/admin/organizations');
  expect(orgs.data).toHaveLength(1);
  const orgId = (orgs.data[0] as { id: string }).id;
  await api(gw.url, ADMIN_TOKEN, 'POST', '/admin/credits', { organization_id: orgId, amount_usd: 100 });
  return orgId;
}

async function submitBatch(gw: GatehouseProcess, keys: Keys, n: number): Promise<string> {
  const requests = Array.from({ length: n }, (_, i) => ({
    custom_id: customId(i),
    body: {
      model: 'test/gpt',
      max_tokens: 16,
      messages: [{ role: 'user', content: `Say hi (${customId(i)})` }],
    },
  }));
  const batch = await api(gw.url, keys.apiKey, 'POST', '/batches', {
    endpoint: '/v1/chat/completions',
    completion_window: '24h',
    requests,
  });
  return batch.id as string;
}

const getBatch = (gw: GatehouseProcess, keys: Keys, id: string) =>
  api(gw.url, keys.apiKey, 'GET', `/batches/${id}?results_limit=0`);

async function waitCompleted(gw: GatehouseProcess, keys: Keys, id: string, timeoutMs: number) {
  const b = await waitFor(
    `batch ${id} to complete`,
    async () => {
      const b = await getBatch(gw, keys, id);
      return ['completed', 'failed', 'expired', 'cancelled'].includes(b.status) ? b : null;
    },
    { timeoutMs, everyMs: 100 },
  );
  expect(b.status, JSON.stringify(b)).toBe('completed');
  return b;
}

const count = async (db: SharedDatabase, text: string, params: unknown[] = []) =>
  Number((await db.query<{ n: unknown }>(text, params))[0]?.n ?? 0);

/**
 * The exactly-once invariants of a finished batch of `n` requests: one result per custom_id, each
 * result's generation recorded once, one usage event per billed generation, and the
 * organization's usage equal to the batch's cost (and to what the upstream's token counts cost).
 */
async function expectExactlyOnce(
  gw: GatehouseProcess,
  keys: Keys,
  db: SharedDatabase,
  id: string,
  orgId: string,
  n: number,
) {
  const batch = await getBatch(gw, keys, id);
  expect(batch.status).toBe('completed');
  expect(batch.request_counts).toEqual({ total: n, completed: n, failed: 0 });

  const jsonl = (await strictClient(gw.url, keys.apiKey)('GET', `/batches/${id}/results`)).text;
  const results = jsonl
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  expect(results).toHaveLength(n);
  const ids = results.map((r) => r.custom_id as string);
  expect(new Set(ids).size).toBe(n);
  expect([...ids].sort()).toEqual(Array.from({ length: n }, (_, i) => customId(i)));
  for (const r of results) {
    expect(r.error).toBeNull();
    expect(r.response.status_code).toBe(200);
    expect(r.response.body.choices[0].message.content).toBe(`done ${r.custom_id}`);
  }
  const generationIds = results.map((r) => r.response.request_id as string);
  expect(new Set(generationIds).size).toBe(n);

  // Straight from the database: every result's generation exactly once, and nothing else.
  const generations = await db.query<{ id: string; cost_usd: number }>(
    'select id, cost_usd from generations where organization_id = ?',
    [orgId],
  );
  expect(generations).toHaveLength(n);
  expect(generations.map((g) => g.id).sort()).toEqual([...generationIds].sort());
  const billed = generations.filter((g) => Number(g.cost_usd) > 0).length;
  expect(billed).toBe(n);
  const usage = await db.query<{ n: unknown; total: unknown }>(
    'select count(*) as n, coalesce(sum(cost_usd), 0) as total from usage_events where organization_id = ?',
    [orgId],
  );
  expect(Number(usage[0]?.n)).toBe(billed);
  expect(Math.abs(Number(usage[0]?.total) - batch.usage.cost)).toBeLessThan(1e-9);
  // usage_events rows carry no generation id: pair them with the generations by time and cost.
  const pairKey = (r: { created_at: unknown; cost_usd: unknown }) => `${r.created_at}|${Number(r.cost_usd)}`;
  const generationKeys = await db.query<{ created_at: unknown; cost_usd: unknown }>(
    'select created_at, cost_usd from generations where organization_id = ? and cost_usd > 0',
    [orgId],
  );
  const eventKeys = await db.query<{ created_at: unknown; cost_usd: unknown }>(
    'select created_at, cost_usd from usage_events where organization_id = ?',
    [orgId],
  );
  expect(eventKeys.map(pairKey).sort()).toEqual(generationKeys.map(pairKey).sort());
  expect(
    await count(db, "select count(*) as n from batch_requests where batch_id = ? and state = 'done'", [id]),
  ).toBe(n);

  // Billed once: the organization's usage is the batch's cost, which is what n requests cost.
  const credits = await api(gw.url, keys.managementKey, 'GET', '/credits');
  expect(Math.abs(credits.data.total_usage - batch.usage.cost)).toBeLessThan(1e-9);
  expect(Math.abs(batch.usage.cost - expectedCost(n))).toBeLessThan(1e-9);
  return { batch, results };
}

// ---------------------------------------------------------------------------------------------

const cleanups: (() => Promise<void>)[] = [];
const cleanUp = async () => {
  await killAll();
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
};
afterEach(cleanUp);
afterAll(cleanUp);

/** Per test: process starts dominate (3–5 s each on 2 cores). */
const TIMEOUT = 60_000;

/** A database, an upstream answering after `delayMs` and a catalog for them; torn down after the test. */
async function setup(kind: 'sqlite' | 'postgres', delayMs: number) {
  const db = await sharedDatabase(kind);
  cleanups.push(() => db.drop());
  const up = await startSlowUpstream(delayMs);
  cleanups.push(() => up.close());
  const keys = newKeys();
  return { db, up, keys, catalog: writeCatalog(db.dataDir, up) };
}

/** Fails with the processes' output attached (the assertion alone says little). */
async function withOutput<T>(procs: () => (GatehouseProcess | undefined)[], fn: () => Promise<T>) {
  try {
    return await fn();
  } catch (err) {
    const logs = procs()
      .filter((p): p is GatehouseProcess => !!p)
      .map((p) => `--- ${p.name} ---\n${p.output().slice(-4000)}`)
      .join('\n');
    if (err instanceof Error) err.message += `\n${logs}`;
    throw err;
  }
}

describe.each(databases)('a process SIGKILLed mid-batch (%s)', (kind) => {
  it(
    'SIGKILL mid-batch: a new process finishes it, every request recorded and billed once',
    async () => {
      const N = 200;
      const { db, up, keys, catalog } = await setup(kind, 75);
      const env = {
        GATEHOUSE_CONFIG: catalog,
        GATEHOUSE_BATCH_LEASE_MS: '1500',
        GATEHOUSE_BATCH_CONCURRENCY: '8',
        GATEHOUSE_BATCH_POLL_MS: '100',
      };
      let first: GatehouseProcess | undefined;
      let second: GatehouseProcess | undefined;
      await withOutput(
        () => [first, second],
        async () => {
          first = await startProcess('serve', { name: 'serve#1', db, keys, env });
          const orgId = await fundOrganization(first);
          const id = await submitBatch(first, keys, N);

          const doneAtKill = await waitFor(
            'some results but not all',
            async () => {
              const c = (await getBatch(first!, keys, id)).request_counts.completed as number;
              if (c >= N * 0.8)
                throw new GiveUp(
                  `too late to interrupt: ${c} of ${N} done already (upstream: ${up.calls} calls, at most ${up.maxInflight} at once)`,
                );
              return c >= 20 ? c : null;
            },
            { timeoutMs: 20_000, everyMs: 20 },
          );
          // Killed while calls are out upstream, with the upstream frozen so that none of them is
          // answered to the dying process: each is cut off, never recorded, and must run again.
          await waitFor('calls in flight upstream', () => up.inflight > 0, { everyMs: 2 });
          up.frozen = true;
          const inflightAtKill = up.inflight;
          first.kill('SIGKILL');
          expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
          // The dead process's upstream calls are cut off: each was interrupted, never answered.
          await waitFor('the upstream to see the dead connections', () => up.inflight === 0);
          up.frozen = false;
          const interrupted = [...up.aborted];
          expect(inflightAtKill).toBeGreaterThan(0);
          expect(interrupted.length).toBeGreaterThanOrEqual(inflightAtKill);
          // Their leases are still held by the dead process.
          const running = await count(
            db,
            "select count(*) as n from batch_requests where batch_id = ? and state = 'running'",
            [id],
          );
          expect(running).toBeGreaterThanOrEqual(interrupted.length);
          const done = await count(
            db,
            "select count(*) as n from batch_requests where batch_id = ? and state = 'done'",
            [id],
          );
          expect(done).toBeGreaterThanOrEqual(doneAtKill);
          expect(done).toBeLessThan(N);

          second = await startProcess('serve', { name: 'serve#2', db, keys, env });
          await waitCompleted(second, keys, id, 30_000);
          await expectExactlyOnce(second, keys, db, id, orgId, N);

          // GATEHOUSE_BATCH_CONCURRENCY holds: one process at a time ran at most 8 requests.
          expect(up.maxInflight).toBeLessThanOrEqual(8);
          // The upstream saw more calls than there are requests: the interrupted ones ran again.
          expect(up.calls).toBeGreaterThanOrEqual(N + interrupted.length);
          for (const cid of interrupted) expect(up.callsById.get(cid)).toBeGreaterThanOrEqual(2);
          expect(
            await count(db, 'select count(*) as n from batch_requests where batch_id = ? and attempts >= 2', [
              id,
            ]),
          ).toBeGreaterThanOrEqual(interrupted.length);

          if (db.schema) {
            // The URL's search_path put everything in the test's schema, none of it in public.
            const where = await db.query<{ s: string }>(
              "select table_schema as s from information_schema.tables where table_name = 'batch_requests'",
            );
            expect(where.map((r) => r.s)).toContain(db.schema);
            expect(where.map((r) => r.s)).not.toContain('public');
            expect(await count(db, `select count(*) as n from ${db.schema}.batches where id = ?`, [id])).toBe(
              1,
            );
          }
        },
      );
    },
    TIMEOUT,
  );
});

// The drain is the same SQL on both databases; SQLite also covers a gateway and a worker sharing one file.
describe('a worker stopped by SIGTERM (sqlite)', () => {
  const kind = 'sqlite' as const;
  it(
    'SIGTERM drains a worker: it exits 0 in time and hands its leases back at once',
    async () => {
      const N = 200;
      const DRAIN_MS = 1000;
      const { db, up, keys, catalog } = await setup(kind, 60);
      // A lease far longer than the test: only a handed-back request can run again in time.
      const env = {
        GATEHOUSE_CONFIG: catalog,
        GATEHOUSE_BATCH_LEASE_MS: '120000',
        GATEHOUSE_BATCH_CONCURRENCY: '8',
        GATEHOUSE_BATCH_POLL_MS: '100',
        GATEHOUSE_WORKER_DRAIN_MS: String(DRAIN_MS),
      };
      let gw: GatehouseProcess | undefined;
      let w1: GatehouseProcess | undefined;
      let w2: GatehouseProcess | undefined;
      await withOutput(
        () => [gw, w1, w2],
        async () => {
          [gw, w1] = await Promise.all([
            startProcess('serve', { name: 'gateway', db, keys, env: { ...env, GATEHOUSE_WORKER: 'off' } }),
            startProcess('worker', { name: 'worker#1', db, keys, env }),
          ]);
          const orgId = await fundOrganization(gw);
          const id = await submitBatch(gw, keys, N);
          await waitFor(
            'some results',
            async () => ((await getBatch(gw!, keys, id)).request_counts.completed as number) >= 20,
            { timeoutMs: 20_000, everyMs: 20 },
          );
          // From now on the upstream hangs: the worker's slots fill with calls that outlast the drain.
          up.delayMs = 600_000;
          await waitFor('all 8 slots stuck upstream', () => up.stuck === 8 && up.inflight === 8, {
            timeoutMs: 5_000,
          });

          const t0 = Date.now();
          w1.kill('SIGTERM');
          const exit = await Promise.race([w1.exited, sleep(DRAIN_MS + 5_000).then(() => null)]);
          const took = Date.now() - t0;
          expect(exit, `worker#1 did not exit within ${DRAIN_MS + 5_000} ms`).toEqual({
            code: 0,
            signal: null,
          });
          expect(took).toBeGreaterThanOrEqual(DRAIN_MS - 100); // it waited for the stuck calls…
          expect(took).toBeLessThan(DRAIN_MS + 2_500); // …then aborted them, not much later
          await waitFor('the upstream to see the aborted calls', () => up.inflight === 0);
          const handedBack = [...up.aborted];
          expect(handedBack).toHaveLength(8);

          // Nothing stays leased: the stuck requests are pending again, due now.
          expect(
            await count(
              db,
              "select count(*) as n from batch_requests where batch_id = ? and state = 'running'",
              [id],
            ),
          ).toBe(0);
          const rows = await db.query<{
            custom_id: string;
            state: string;
            lease_owner: unknown;
            next_attempt_at: unknown;
          }>('select custom_id, state, lease_owner, next_attempt_at from batch_requests where batch_id = ?', [
            id,
          ]);
          for (const cid of handedBack) {
            const r = rows.find((x) => x.custom_id === cid);
            expect(r?.state).toBe('pending');
            expect(r?.lease_owner).toBeNull();
            expect(Number(r?.next_attempt_at)).toBeLessThanOrEqual(Date.now());
          }
          const doneBefore = rows.filter((r) => r.state === 'done').length;
          expect(doneBefore).toBeLessThan(N);

          up.delayMs = 60;
          w2 = await startProcess('worker', { name: 'worker#2', db, keys, env });
          const t1 = Date.now();
          await waitCompleted(gw, keys, id, 20_000);
          expect(Date.now() - t1).toBeLessThan(20_000); // far inside the 120 s lease
          await expectExactlyOnce(gw, keys, db, id, orgId, N);
          for (const cid of handedBack) expect(up.callsById.get(cid)).toBe(2);
          expect(up.maxInflight).toBeLessThanOrEqual(8);
          expect(up.calls).toBe(N + handedBack.length);

          const id1 = workerIdOf(w1);
          const id2 = workerIdOf(w2);
          const by = await db.query<{ finished_by: string; n: unknown }>(
            'select finished_by, count(*) as n from batch_requests where batch_id = ? group by finished_by',
            [id],
          );
          const byWorker = new Map(by.map((r) => [r.finished_by, Number(r.n)]));
          expect(byWorker.get(id1!)).toBe(doneBefore);
          expect(byWorker.get(id2!)).toBe(N - doneBefore);
        },
      );
    },
    TIMEOUT,
  );
});

describe.skipIf(!postgresUrl)('several workers on one PostgreSQL database', () => {
  it(
    'claims disjoint requests (SKIP LOCKED): each runs once, both workers work, billed once',
    async () => {
      const N = 300;
      const { db, up, keys, catalog } = await setup('postgres', 75);
      const env = {
        GATEHOUSE_CONFIG: catalog,
        GATEHOUSE_BATCH_LEASE_MS: '15000',
        GATEHOUSE_BATCH_CONCURRENCY: '8',
        GATEHOUSE_BATCH_POLL_MS: '100',
      };
      let gw: GatehouseProcess | undefined;
      let w1: GatehouseProcess | undefined;
      let w2: GatehouseProcess | undefined;
      await withOutput(
        () => [gw, w1, w2],
        async () => {
          [gw, w1, w2] = await Promise.all([
            startProcess('serve', { name: 'gateway', db, keys, env: { ...env, GATEHOUSE_WORKER: 'off' } }),
            startProcess('worker', { name: 'worker#1', db, keys, env }),
            startProcess('worker', { name: 'worker#2', db, keys, env }),
          ]);
          const orgId = await fundOrganization(gw);
          const id = await submitBatch(gw, keys, N);
          await waitCompleted(gw, keys, id, 30_000);
          await expectExactlyOnce(gw, keys, db, id, orgId, N);
          // Nobody crashed and no lease ran out: no request went upstream twice.
          expect(up.calls).toBe(N);
          expect(up.aborted).toEqual([]);
          // Each worker kept to its GATEHOUSE_BATCH_CONCURRENCY (8): 16 at most between them.
          expect(up.maxInflight).toBeLessThanOrEqual(16);

          const ids = [workerIdOf(w1), workerIdOf(w2)];
          expect(ids[0]).toBeTruthy();
          expect(ids[1]).toBeTruthy();
          const by = await db.query<{ finished_by: string; n: unknown }>(
            'select finished_by, count(*) as n from batch_requests where batch_id = ? group by finished_by',
            [id],
          );
          expect(by.map((r) => r.finished_by).sort()).toEqual([...ids].sort());
          for (const r of by) expect(Number(r.n)).toBeGreaterThan(N / 10);
        },
      );
    },
    TIMEOUT,
  );

  it(
    'a stalled worker (SIGSTOP past its lease) records nothing when it wakes: the lease token guards the write',
    async () => {
      const N = 300;
      const { db, up, keys, catalog } = await setup('postgres', 75);
      const env = {
        GATEHOUSE_CONFIG: catalog,
        GATEHOUSE_BATCH_LEASE_MS: '1500',
        GATEHOUSE_BATCH_CONCURRENCY: '8',
        GATEHOUSE_BATCH_POLL_MS: '100',
      };
      let stalled: GatehouseProcess | undefined;
      let w2: GatehouseProcess | undefined;
      await withOutput(
        () => [stalled, w2],
        async () => {
          stalled = await startProcess('serve', { name: 'serve (stalled)', db, keys, env });
          const orgId = await fundOrganization(stalled);
          const id = await submitBatch(stalled, keys, N);
          await waitFor(
            'some results',
            async () => ((await getBatch(stalled!, keys, id)).request_counts.completed as number) >= 20,
            { timeoutMs: 20_000, everyMs: 20 },
          );
          // Stopped while it waits on the upstream (frozen meanwhile, so the calls are still out).
          await waitFor('calls in flight upstream', () => up.inflight > 0, { everyMs: 2 });
          up.frozen = true;
          stalled.kill('SIGSTOP');
          const outAtStop = new Set(up.inflightIds);
          await sleep(200);
          // Its requests waiting on the upstream (not one it may have been recording at that instant).
          const pid = stalled.child.pid;
          const held = (
            await db.query<{ idx: number; custom_id: string }>(
              "select idx, custom_id from batch_requests where batch_id = ? and state = 'running' and lease_owner like ?",
              [id, `%:${pid}:%`],
            )
          ).filter((r) => outAtStop.has(r.custom_id));
          expect(held.length).toBeGreaterThan(0);
          // The upstream answers them now, into the sockets of a process that can't read them.
          up.frozen = false;

          // Its leases run out and another worker takes those requests over; the upstream holds
          // worker#2's calls for them, so the stalled process wakes while worker#2 holds their leases
          // (a fixed delay raced worker#2's takeover on a loaded machine).
          for (const h of held) up.holdIds.add(h.custom_id);
          w2 = await startProcess('worker', { name: 'worker#2', db, keys, env });
          const w2Id = workerIdOf(w2);
          const heldIdx = held.map((h) => h.idx);
          await waitFor(
            'worker#2 to lease the stalled requests',
            async () => {
              const rows = await db.query<{ idx: number; state: string; lease_owner: string | null }>(
                'select idx, state, lease_owner from batch_requests where batch_id = ?',
                [id],
              );
              const mine = rows.filter((r) => heldIdx.includes(r.idx));
              return mine.every((r) => r.state === 'running' && r.lease_owner === w2Id);
            },
            { timeoutMs: 15_000, everyMs: 20 },
          );
          // Woken now: its stale calls are answered and it tries to record them, without the lease.
          stalled.kill('SIGCONT');
          await waitFor(
            'the woken process to answer',
            async () => (await fetch(`${stalled!.url}/health`)).ok,
          );
          await sleep(500); // its stale answers were waiting in its sockets: recorded by now, or refused
          const mid = await db.query<{ idx: number; state: string; lease_owner: string | null }>(
            'select idx, state, lease_owner from batch_requests where batch_id = ?',
            [id],
          );
          for (const r of mid.filter((x) => heldIdx.includes(x.idx))) {
            expect(r.state).toBe('running'); // still worker#2's
            expect(r.lease_owner).toBe(w2Id);
          }

          up.holdIds.clear();
          await waitCompleted(stalled, keys, id, 30_000);
          await expectExactlyOnce(stalled, keys, db, id, orgId, N);
          // The stalled calls went upstream twice (the stale one's answer was dropped), and the
          // results are worker#2's.
          for (const h of held) expect(up.callsById.get(h.custom_id)).toBeGreaterThanOrEqual(2);
          const after = await db.query<{ idx: number; finished_by: string; attempts: number }>(
            'select idx, finished_by, attempts from batch_requests where batch_id = ?',
            [id],
          );
          for (const r of after.filter((x) => heldIdx.includes(x.idx))) {
            expect(r.finished_by).toBe(w2Id);
            expect(Number(r.attempts)).toBe(2);
          }
        },
      );
    },
    TIMEOUT,
  );
});
