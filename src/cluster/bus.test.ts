/**
 * The cluster bus against a real Redis (REDIS_URL, default 127.0.0.1:6379; skipped loudly without
 * one), and, for the outage test, a private `redis-server` this test starts, kills and restarts.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { REDIS_URL, redisReachable } from '../../test/support/redis.js';
import { type SpendEvent, SpendTracker } from '../credits/spend.js';
import { type DbHandle, openDatabase } from '../db/connection.js';
import { migrateToLatest } from '../db/migrate.js';
import { ClusterBus, type ClusterEvent, type ClusterLogger } from './bus.js';
import { applyClusterEvent } from './caches.js';

const redisUp = await redisReachable(REDIS_URL);
if (!redisUp)
  console.warn(
    `\n!!! Cluster bus Redis tests SKIPPED: no Redis at ${REDIS_URL} (set REDIS_URL or start redis-server) !!!\n`,
  );
const redisServerBinary = spawnSync('redis-server', ['--version']).status === 0;
if (!redisServerBinary)
  console.warn('\n!!! Cluster bus outage test SKIPPED: no redis-server binary to start and kill !!!\n');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(what: string, fn: () => boolean, timeoutMs = 5_000) {
  const deadline = Date.now() + timeoutMs;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

const logs = () => {
  const lines: string[] = [];
  const logger: ClusterLogger = {
    warn: (m) => lines.push(`warn: ${m}`),
    info: (m) => lines.push(`info: ${m}`),
  };
  return { lines, logger };
};

const buses: ClusterBus[] = [];
/** A bus whose events (other than resyncs) are collected. */
function node(prefix: string, url = REDIS_URL, extra: { retryMaxMs?: number } = {}) {
  const log = logs();
  const bus = new ClusterBus({ redisUrl: url, prefix, logger: log.logger, ...extra });
  buses.push(bus);
  const events: ClusterEvent[] = [];
  let resyncs = 0;
  bus.onEvent((e) => (e.kind === 'resync' ? resyncs++ : events.push(e)));
  return { bus, events, log, resyncs: () => resyncs };
}
afterEach(async () => {
  await Promise.all(buses.splice(0).map((b) => b.close()));
});

const spendEvent = (costUsd: number, at = new Date().toISOString()): SpendEvent => ({
  keyHash: 'k'.repeat(64),
  userId: 'user-1',
  organizationId: 'org-1',
  costUsd,
  isByok: false,
  at,
});

describe('cluster bus without Redis', () => {
  it('does nothing, at once', async () => {
    const bus = new ClusterBus({ redisUrl: null });
    expect(bus.enabled).toBe(false);
    expect(await bus.ready()).toBe(true);
    bus.publish({ kind: 'policy' });
    expect(bus.stats).toEqual({ published: 0, received: 0, dropped: 0, resyncs: 0 });
    await bus.close();
  });
});

describe.skipIf(!redisUp)('cluster bus on Redis', () => {
  const prefix = () => `gatehouse-test:${randomBytes(6).toString('hex')}`;

  it('delivers every event to the other nodes, in order, not to the sender nor to another prefix', async () => {
    const p = prefix();
    const a = node(p);
    const b = node(p);
    const c = node(p);
    const other = node(prefix());
    for (const n of [a, b, c, other]) expect(await n.bus.ready()).toBe(true);
    // Subscribing is a resync of one's own caches (whatever was published before is lost to it).
    for (const n of [a, b, c, other]) expect(n.resyncs()).toBe(1);

    const sent: ClusterEvent[] = [
      { kind: 'key', hash: 'a'.repeat(64) },
      { kind: 'key', hash: null },
      { kind: 'policy' },
      { kind: 'byok', organizationId: 'org-1' },
      { kind: 'credits', organizationId: 'org-1' },
      { kind: 'spend', event: spendEvent(0.25) },
    ];
    for (const e of sent) a.bus.publish(e);
    await until(
      'b and c to hear everything',
      () => b.events.length === sent.length && c.events.length === sent.length,
    );
    expect(b.events).toEqual(sent);
    expect(c.events).toEqual(sent);
    await sleep(50);
    expect(a.events).toEqual([]);
    expect(other.events).toEqual([]);
    expect(a.bus.stats.published).toBe(sent.length);
    expect(b.bus.stats.received).toBe(sent.length);
  });

  it('sends the events of one synchronous run as one message', async () => {
    const p = prefix();
    const a = node(p);
    const b = node(p);
    const raw = new Redis(REDIS_URL);
    // The messages carrying the spend events, and how many events they carried: this subscriber
    // may hear them after node b does (two connections), so the count is read once all arrived.
    let messages = 0;
    let carried = 0;
    raw.on('message', (_channel: string, text: string) => {
      const events = (JSON.parse(text) as { events?: { kind?: string }[] }).events ?? [];
      const spend = events.filter((e) => e.kind === 'spend').length;
      if (spend) messages++;
      carried += spend;
    });
    await raw.subscribe(`${p}:cluster`);
    expect(await a.bus.ready()).toBe(true);
    expect(await b.bus.ready()).toBe(true);
    for (let i = 0; i < 500; i++) a.bus.publish({ kind: 'spend', event: spendEvent(0.001) });
    await until('b to hear 500 events', () => b.events.length === 500);
    await until('the subscriber to hear 500 events', () => carried === 500);
    expect(messages).toBe(1);
    raw.disconnect();
  });

  it('ignores malformed messages and events', async () => {
    const p = prefix();
    const b = node(p);
    expect(await b.bus.ready()).toBe(true);
    const raw = new Redis(REDIS_URL);
    const ch = `${p}:cluster`;
    await raw.publish(ch, 'not json');
    await raw.publish(ch, JSON.stringify({ v: 2, node: 'x', events: [{ kind: 'policy' }] }));
    await raw.publish(ch, JSON.stringify({ v: 1, node: 'x', events: 'policy' }));
    await raw.publish(
      ch,
      JSON.stringify({
        v: 1,
        node: 'x',
        events: [
          { kind: 'nope' },
          { kind: 'key', hash: 12 },
          { kind: 'spend', event: { organizationId: 'o', costUsd: '1' } },
          { kind: '__proto__' },
          { kind: 'policy' },
        ],
      }),
    );
    await until('the valid event', () => b.events.length === 1);
    expect(b.events).toEqual([{ kind: 'policy' }]);
    raw.disconnect();
  });

  it("applies another node's spend to this node's counters at once", async () => {
    const p = prefix();
    const handle: DbHandle = openDatabase('sqlite::memory:');
    try {
      await migrateToLatest(handle);
      await handle.db
        .insertInto('organizations')
        .values({ id: 'org-1', name: 'Org', created_at: new Date().toISOString() })
        .execute();
      const trackers = [new SpendTracker(handle.db), new SpendTracker(handle.db)] as const;
      const [a, b] = [node(p), node(p)];
      const noop = { forget() {}, invalidate() {}, reload() {} };
      b.bus.onEvent((e) =>
        applyClusterEvent({ keys: noop, policy: noop, byok: noop, spend: trackers[1], catalog: noop }, e),
      );
      expect(await a.bus.ready()).toBe(true);
      expect(await b.bus.ready()).toBe(true);
      const scope = { keyHash: 'k'.repeat(64) };
      // Both nodes loaded the key's counters (nothing spent yet).
      expect((await trackers[0].spend(scope, 'lifetime')).paid).toBe(0);
      expect((await trackers[1].spend(scope, 'lifetime')).paid).toBe(0);

      // Node A bills a call: its own counters (record) and node B's (the bus), before any row is written.
      const e = spendEvent(1.5);
      trackers[0].record(e);
      a.bus.publish({ kind: 'spend', event: e });
      await until('b to hear it', () => b.bus.stats.received === 1);
      expect((await trackers[1].spend(scope, 'lifetime')).paid).toBe(1.5);
      expect(await trackers[1].balance('org-1')).toBe(-1.5);
      const limit = { hash: scope.keyHash, limit_usd: 1, limit_reset: null, include_byok_in_limit: 0 };
      expect((await trackers[1].checkKeyLimit(limit)).ok).toBe(false);

      // Once its row is written, a reload (refreshAll: what a resync does) counts it once, not twice.
      await handle.db
        .insertInto('usage_events')
        .values({
          id: randomBytes(8).toString('hex'),
          organization_id: 'org-1',
          workspace_id: 'ws',
          key_hash: scope.keyHash,
          user_id: 'user-1',
          model: 'm',
          provider: 'p',
          cost_usd: 1.5,
          is_byok: 0,
          created_at: e.at as string,
        })
        .execute();
      trackers[1].refreshAll();
      await trackers[1].spend(scope, 'lifetime'); // starts the background reload
      await sleep(50);
      expect((await trackers[1].spend(scope, 'lifetime')).paid).toBe(1.5);
    } finally {
      await handle.close();
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Redis going away and coming back

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      s.close(() => done(typeof addr === 'object' && addr ? addr.port : 0));
    });
  });
}

const servers: ChildProcess[] = [];
async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  );
  servers.push(child);
  const url = `redis://127.0.0.1:${port}`;
  const deadline = Date.now() + 5_000;
  while (!(await redisReachable(url))) {
    if (Date.now() > deadline) throw new Error('private redis-server did not start');
    await sleep(20);
  }
  return child;
}
async function stopRedis(child: ChildProcess) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
}
afterAll(async () => {
  await Promise.all(servers.map(stopRedis));
});

describe.skipIf(!redisServerBinary)('cluster bus when Redis goes away', () => {
  it('keeps publish non-blocking, logs the outage once, and resyncs every node once Redis is back', async () => {
    const port = await freePort();
    let server = await startRedis(port);
    const url = `redis://127.0.0.1:${port}`;
    const p = 'gatehouse-test:outage';
    const a = node(p, url, { retryMaxMs: 100 });
    const b = node(p, url, { retryMaxMs: 100 });
    expect(await a.bus.ready()).toBe(true);
    expect(await b.bus.ready()).toBe(true);
    a.bus.publish({ kind: 'policy' });
    await until('b to hear the first event', () => b.events.length === 1);

    await stopRedis(server);
    await until('both to notice', () => !a.bus.connected && !b.bus.connected);
    // While Redis is down: publishing returns at once and drops (the TTLs bound staleness).
    const t0 = performance.now();
    for (let i = 0; i < 1_000; i++) a.bus.publish({ kind: 'spend', event: spendEvent(0.01) });
    expect(performance.now() - t0).toBeLessThan(200);
    await until('the events to be dropped', () => a.bus.stats.dropped === 1_000);
    expect(await a.bus.ready(300)).toBe(false);
    await sleep(500); // several reconnection attempts fail meanwhile
    for (const n of [a, b]) {
      const warnings = n.log.lines.filter((l) => l.startsWith('warn:'));
      expect(warnings, n.log.lines.join('\n')).toHaveLength(1);
      expect(warnings[0]).toContain('Redis unavailable');
    }

    server = await startRedis(port);
    expect(await a.bus.ready(5_000)).toBe(true);
    expect(await b.bus.ready(5_000)).toBe(true);
    // Each resubscribed (a local resync); a also broadcast a resync for what it dropped (which b
    // hears too unless it resubscribed after it: its own resync covers that).
    expect(a.resyncs()).toBe(2);
    expect(b.resyncs()).toBeGreaterThanOrEqual(2);
    await until("a's resync broadcast", () => a.bus.stats.published === 2);
    for (const n of [a, b])
      expect(n.log.lines.some((l) => l.startsWith('info:') && l.includes('back'))).toBe(true);
    // And events flow again.
    a.bus.publish({ kind: 'credits', organizationId: 'org-9' });
    await until('b to hear it', () => b.events.some((e) => e.kind === 'credits'));
    expect(b.events.filter((e) => e.kind === 'spend')).toEqual([]);
    await stopRedis(server);
  }, 20_000);
});
