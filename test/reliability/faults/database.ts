/**
 * The database restarting under load (PostgreSQL). A `serve` process talks to PostgreSQL through a
 * TCP proxy in this test; under steady load (management writes and reads, inference on the dev
 * provider) the proxy "restarts" the database: it stops accepting, PostgreSQL terminates the
 * gateway's backends (pg_terminate_backend: 57P01, as a real shutdown does), every proxied
 * connection is cut, and for OUTAGE_MS nothing gets through; then it listens again.
 *
 * Asserted: during the outage every failing request is a 503 in the standard envelope (never a 500,
 * never a connection error, never slower than HANG_BOUND_MS); the process does not crash; after the
 * outage requests succeed without a restart; every write answered 2xx is in the database; every
 * inference call answered 200 is recorded and billed exactly once, including those whose usage
 * could only be written after the database came back.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server, Socket } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, postgresUrl } from '../../support/gateway.js';
import {
  type GatehouseProcess,
  killHard,
  newKeys,
  type SharedDatabase,
  sharedDatabase,
  startProcess,
  waitFor,
} from '../../support/processes.js';
import { figures, isEnvelope, sleep, Tally } from './common.js';

/** How long the database stays away: refusing connections, then holding them (past the connect timeout). */
const OUTAGE_MS = { refuse: 3_000, hold: 6_500 };
/** No request may take longer than this (PG_CONNECT_TIMEOUT_MS, 5 s, plus a margin). */
const HANG_BOUND_MS = 7_000;
/** Load before the first outage, between the outages and after the last one. */
const STEADY_MS = 2_000;

/**
 * A TCP proxy in front of PostgreSQL that can play a restart: `refuse` closes the listener (new
 * connections get ECONNREFUSED, as from a stopped server); `hold` keeps accepting but never
 * answers (a server that hangs while starting: only the client's connect timeout ends the wait).
 * Either way every open connection is cut.
 */
export class PgProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private holding = false;
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async listen(port = 0): Promise<void> {
    const server = createServer((client) => {
      this.sockets.add(client);
      client.on('close', () => this.sockets.delete(client));
      client.on('error', () => {});
      if (this.holding) return;
      const upstream = new Socket();
      upstream.connect(this.target.port, this.target.host);
      this.sockets.add(upstream);
      upstream.on('close', () => this.sockets.delete(upstream));
      upstream.on('error', () => {});
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    const addr = server.address();
    this.port = typeof addr === 'object' && addr ? addr.port : 0;
  }

  /** The database goes away; `beforeCut` runs once no new connection gets through. */
  async down(mode: 'refuse' | 'hold', beforeCut?: () => Promise<void>): Promise<void> {
    if (mode === 'hold') this.holding = true;
    else {
      // close() stops accepting at once (its callback would wait for the open connections).
      this.server?.close();
      this.server = null;
    }
    await beforeCut?.();
    for (const sock of this.sockets) sock.destroy();
  }

  /** The database is back (on the same port). */
  async up(): Promise<void> {
    this.holding = false;
    for (const sock of this.sockets) sock.destroy(); // held connections never got an answer
    if (!this.server) await this.listen(this.port);
  }

  async close(): Promise<void> {
    this.server?.close();
    this.server = null;
    for (const sock of this.sockets) sock.destroy();
  }
}

interface Sample {
  kind: 'write' | 'read' | 'inference';
  status: number;
  sent: number;
  done: number;
  envelope503: boolean;
  networkError: boolean;
}

interface Outage {
  mode: 'refuse' | 'hold';
  start: number;
  end: number;
  terminated: number;
  /** When the first management write succeeded again. */
  recovered: number;
}

const hashOf = (key: string) => createHash('sha256').update(key).digest('hex');

export function databaseFaults(): void {
  describe.skipIf(!postgresUrl)('the database restarting under load (PostgreSQL)', () => {
    let db: SharedDatabase;
    let proxy: PgProxy;
    let gw: GatehouseProcess;
    const keys = newKeys();
    const app = `gatehouse-faults-${randomBytes(4).toString('hex')}`;

    beforeAll(async () => {
      db = await sharedDatabase('postgres');
      const target = new URL(postgresUrl as string);
      proxy = new PgProxy({ host: target.hostname, port: Number(target.port || 5432) });
      await proxy.listen();
      const url = new URL(db.url);
      url.host = `127.0.0.1:${proxy.port}`;
      url.searchParams.set('application_name', app);
      gw = await startProcess('serve', {
        name: 'gateway (db restart)',
        db: { ...db, url: url.toString() },
        keys,
        env: {
          GATEHOUSE_INTERNS_RUNTIMES: 'off',
          GATEHOUSE_RATE_LIMIT_REQUESTS: '1000000',
          LOG_LEVEL: 'warn',
        },
      });
      const res = await fetch(`${gw.url}/api/v1/admin/credits`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          organization_id: (
            await db.query<{ id: string }>('select id from organizations order by created_at limit 1')
          )[0]?.id,
          amount_usd: 1000,
        }),
      });
      expect(res.status).toBe(201);
    }, 60_000);

    afterAll(async () => {
      if (gw) await killHard(gw);
      await proxy?.close();
      await db?.drop();
    });

    it('answers 503 while the database is away, recovers without a restart, loses nothing accepted', async () => {
      const samples: Sample[] = [];
      const acceptedKeys: string[] = [];
      const generations: string[] = [];
      const outages: Outage[] = [];
      let stop = false;

      async function request(kind: Sample['kind'], method: string, path: string, body?: unknown) {
        const key = kind === 'inference' ? keys.apiKey : keys.managementKey;
        const sent = performance.now();
        let status = 0;
        let json: any = null;
        let networkError = false;
        try {
          const res = await fetch(`${gw.url}/api/v1${path}`, {
            method,
            headers: {
              authorization: `Bearer ${key}`,
              ...(body ? { 'content-type': 'application/json' } : {}),
            },
            body: body ? JSON.stringify(body) : undefined,
            signal: AbortSignal.timeout(HANG_BOUND_MS + 5_000),
          });
          status = res.status;
          json = await res.json().catch(() => null);
        } catch {
          networkError = true;
        }
        samples.push({
          kind,
          status,
          sent,
          done: performance.now(),
          envelope503:
            status === 503 && isEnvelope(json, 503) && json.error.metadata?.reason === 'database_unavailable',
          networkError,
        });
        return { status, json };
      }

      let n = 0;
      const write = async () => {
        const r = await request('write', 'POST', '/keys', { name: `restart-${++n}` });
        if (r.status === 201) acceptedKeys.push(r.json.data.hash);
        return r.status === 201;
      };
      const writer = async () => {
        while (!stop) {
          await write();
          await sleep(50);
        }
      };
      const reader = async () => {
        const paths = ['/keys', '/credits', '/guardrails', '/workspaces'];
        for (let i = 0; !stop; i++) {
          await request('read', 'GET', paths[i % paths.length] as string);
          await sleep(50);
        }
      };
      const inference = async () => {
        while (!stop) {
          const r = await request('inference', 'POST', '/chat/completions', {
            model: 'gatehouse/echo',
            messages: [{ role: 'user', content: `count these words please ${n}` }],
          });
          if (r.status === 200) generations.push(r.json.id);
          await sleep(25);
        }
      };

      /** One restart: the database goes away for OUTAGE_MS, its backends terminated (57P01). */
      async function restart(mode: Outage['mode']) {
        const o: Outage = { mode, start: performance.now(), end: 0, terminated: 0, recovered: 0 };
        outages.push(o);
        await proxy.down(mode, async () => {
          const admin = new pg.Client({ connectionString: postgresUrl as string });
          await admin.connect();
          const r = await admin.query(
            'select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1',
            [app],
          );
          o.terminated = r.rowCount ?? 0;
          await admin.end();
        });
        await sleep(OUTAGE_MS[mode]);
        await proxy.up();
        o.end = performance.now();
        // Recovered: a management write (which needs the database) succeeds again.
        o.recovered = await waitFor(
          'a write to succeed after the outage',
          async () => (await write()) && performance.now(),
          {
            timeoutMs: 20_000,
            everyMs: 50,
          },
        );
      }

      const load = Promise.all([writer(), writer(), reader(), inference(), inference()]);
      await sleep(STEADY_MS);
      await restart('refuse');
      await sleep(STEADY_MS);
      await restart('hold');
      await sleep(STEADY_MS);
      stop = true;
      await load;

      expect(gw.hasExited(), gw.output()).toBe(false);
      expect((await fetch(`${gw.url}/ready`)).status).toBe(200);

      const inOutage = (s: Sample, o: Outage) => s.done >= o.start && s.sent <= o.end;
      const during = samples.filter((s) => outages.some((o) => inOutage(s, o)));
      const failed = samples.filter((s) => s.status < 200 || s.status >= 300);
      const bad = failed.filter((s) => !s.envelope503);
      expect(bad, JSON.stringify(bad.slice(0, 5))).toEqual([]);
      for (const o of outages)
        expect(during.filter((s) => inOutage(s, o) && s.envelope503).length, o.mode).toBeGreaterThan(0);
      const slowest = Math.max(...samples.map((s) => s.done - s.sent));
      expect(slowest).toBeLessThan(HANG_BOUND_MS);
      // Once one write went through again, the pool is healthy: nothing sent after it fails.
      const afterRecovery = failed.filter((s) =>
        outages.some(
          (o, i) => s.sent > o.recovered && s.done < (outages[i + 1]?.start ?? Number.POSITIVE_INFINITY),
        ),
      );
      expect(afterRecovery, JSON.stringify(afterRecovery)).toEqual([]);

      // Every accepted write is there.
      const rows = await db.query<{ hash: string }>('select hash from api_keys where hash = any(?)', [
        acceptedKeys,
      ]);
      expect(rows.length).toBe(acceptedKeys.length);

      // Every inference answered 200 is recorded and billed once, those served during the outages
      // (their usage could only be written once the database was back) included.
      const gens = await waitFor(
        'every served generation to be written',
        async () => {
          const r = await db.query<{ id: string; cost_usd: number }>(
            'select id, cost_usd from generations where id = any(?)',
            [generations],
          );
          return r.length === generations.length ? r : null;
        },
        { timeoutMs: 15_000, everyMs: 200 },
      );
      expect(gens.every((g) => g.cost_usd > 0)).toBe(true);
      const [billed] = await db.query<{ n: number; usd: number }>(
        'select count(*)::int as n, coalesce(sum(cost_usd), 0)::float as usd from usage_events where key_hash = ?',
        [hashOf(keys.apiKey)],
      );
      const [costed] = await db.query<{ n: number; usd: number }>(
        'select count(*)::int as n, coalesce(sum(cost_usd), 0)::float as usd from generations where key_hash = ? and cost_usd > 0',
        [hashOf(keys.apiKey)],
      );
      expect(costed?.n).toBe(generations.length);
      expect(billed?.n).toBe(costed?.n);
      expect(billed?.usd).toBeCloseTo(costed?.usd ?? -1, 9);

      const phase = (s: Sample) => {
        const i = outages.findIndex((o) => inOutage(s, o));
        return i >= 0 ? `outage ${i + 1} (${outages[i]?.mode})` : 'steady';
      };
      const byPhase = new Tally();
      for (const s of samples)
        byPhase.add(`${phase(s)} ${s.kind} ${s.networkError ? 'network error' : s.status}`);
      const servedDuring = during.filter((s) => s.kind === 'inference' && s.status === 200).length;
      const ms = (x: number) => `${Math.round(x)} ms`;
      figures.rows.push(
        ['database: requests under load (writes, reads, inference)', samples.length],
        ...outages.map(
          (o, i) =>
            [
              `database: outage ${i + 1} (${o.mode === 'refuse' ? 'connections refused' : 'connections accepted, never answered'}; backends terminated)`,
              `${ms(o.end - o.start)}, ${o.terminated} backends; recovered ${ms(o.recovered - o.end)} after the database was back`,
            ] as [string, string],
        ),
        ['database: requests answered during the outages', during.length],
        [
          'database: — 503 database_unavailable (standard envelope)',
          during.filter((s) => s.envelope503).length,
        ],
        ['database: — inference served from caches (usage written after the outage)', servedDuring],
        ['database: 5xx other than 503, connection errors, hangs', bad.length],
        ['database: slowest answer', `${ms(slowest)} (bound ${HANG_BOUND_MS} ms)`],
        ['database: failures after recovery', afterRecovery.length],
        ['database: writes accepted (2xx) / found afterwards', `${acceptedKeys.length} / ${rows.length}`],
        [
          'database: inference calls served / recorded / billed',
          `${generations.length} / ${gens.length} / ${billed?.n}`,
        ],
        ['database: gateway restarts needed', 0],
      );
      figures.notes.push(
        `Database: two PostgreSQL restarts (${OUTAGE_MS.refuse} ms, then ${OUTAGE_MS.hold} ms), played by a TCP proxy (pg_terminate_backend, every connection cut; new ones refused, then accepted and never answered) under five concurrent clients. Outcomes: ${byPhase.summary()}.`,
        'Database: requests wait at most PG_CONNECT_TIMEOUT_MS (5 s, src/db/connection.ts) for a connection; inference keeps being served from the key, policy and spend caches and its usage is written once the database is back.',
      );
    }, 90_000);
  });
}
