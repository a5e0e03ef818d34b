import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import { AggregatorRegistry } from 'prom-client';
import { RateLimiterClusterMaster } from 'rate-limiter-flexible';
import type { BootstrapResult } from '../accounts/bootstrap.js';
import { loadConfig } from '../config.js';
import { createLog } from '../lib/log.js';
import { startMetricsListener } from '../server/metrics.js';
import { Batcher, type IpcMessage, unbatch } from './ipc.js';
import { SharedState } from './shared-state.js';

/**
 * The primary process of `gatehouse serve --workers N`: every core of one machine serves the API.
 *
 * It prepares the database once (migrations, the bootstrap tenancy, the usage journals a killed
 * process left), then forks N workers (node:cluster) that share the listening socket (Node's
 * round-robin: the primary accepts connections and hands them out in turn). It serves no request
 * itself. It restarts a worker that dies (with a backoff, logged), forwards SIGTERM/SIGINT (the
 * workers drain as a single process does) and SIGHUP (catalog reload).
 *
 * It counts the failed operator authentications of all workers (the throttle of each node).
 * Without Redis it also holds what the workers must share (src/cluster/shared-state.ts): the rate
 * limiters' windows, the usage limits' counters and the spend reservations; and it relays the
 * cluster bus's messages (invalidations, spend) from one worker to the others. With REDIS_URL the workers use Redis as separate nodes do, and it only supervises.
 *
 * GET /metrics (GATEHOUSE_METRICS_PORT) is served by the primary: the workers' metrics summed.
 *
 * Singletons run in the first worker only (index 0, restarted as index 0): the batch worker, the
 * media service, the interns' runtimes and the SQLite WAL checkpoints.
 */

/** `--workers N|auto` → a count (auto: the cores this process may use). */
export function parseWorkers(value: string | undefined): number {
  if (value === undefined || value === '') return 1;
  if (value === 'auto') return availableParallelism();
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 1024)
    throw new Error(`--workers must be a whole number from 1 to 1024, or auto (got "${value}")`);
  return n;
}

/** A worker that keeps dying waits longer before the next start, up to this. */
const MAX_BACKOFF_MS = 10_000;
/** A worker that lived this long restarts at once again (its death was not a crash loop). */
const STABLE_MS = 30_000;

export interface PrimaryOptions {
  workers: number;
  /** Tells the operator where generated bootstrap keys were written (the CLI's message). */
  announceKeysFile(keysFile: string | null): void;
}

export async function runPrimary(opts: PrimaryOptions): Promise<void> {
  const config = loadConfig();
  const log = createLog({ level: config.logLevel, base: { process: 'primary', pid: process.pid } });
  opts.announceKeysFile((await prepareOnce(config, log)).keysFile);

  const state = config.redisUrl ? null : new SharedState();
  // The operator authentication throttle's counters (RateLimiterCluster in the workers).
  new RateLimiterClusterMaster();
  // GET /metrics: every worker's metrics, summed (prom-client asks each worker over IPC).
  if (config.metrics) {
    const aggregator = new AggregatorRegistry();
    const listener = await startMetricsListener(
      { metrics: () => aggregator.clusterMetrics(), contentType: aggregator.contentType },
      config.metrics,
    );
    log.info({ url: listener.url }, 'metrics of all workers at /metrics');
  }

  /** Per worker index: the live worker, when it started, its recent failures, whether one ever was ready. */
  const slots = Array.from({ length: opts.workers }, () => ({
    worker: null as Worker | null,
    startedAt: 0,
    failures: 0,
    everReady: false,
    restart: null as NodeJS.Timeout | null,
  }));
  const indexOf = new Map<number, number>();
  let stopping = false;
  let exitCode = 0;
  let announced = false;

  const fork = (index: number) => {
    const slot = slots[index];
    if (!slot) return;
    slot.restart = null;
    // The singletons in the first worker only; what the operator turned off stays off.
    const env: Record<string, string> = { GATEHOUSE_WORKER_INDEX: String(index) };
    if (index > 0)
      Object.assign(env, {
        GATEHOUSE_WORKER: 'off',
        GATEHOUSE_MEDIA: 'off',
        GATEHOUSE_INTERNS_RUNTIMES: 'off',
      });
    const worker = cluster.fork(env);
    // A send to a worker that just died fails: its calls are answered by nobody, which is fine.
    worker.on('error', () => {});
    slot.worker = worker;
    slot.startedAt = Date.now();
    indexOf.set(worker.id, index);
  };

  // What goes to a worker in one turn of the loop (replies, relayed bus messages) goes as one message.
  const outbox = new Map<number, Batcher>();
  const send = (worker: Worker, m: IpcMessage) => {
    if (!worker.isConnected()) return;
    let out = outbox.get(worker.id);
    if (!out) {
      out = new Batcher((batch) => {
        if (!worker.isConnected()) return null;
        try {
          worker.send(batch);
        } catch {}
        return null;
      });
      outbox.set(worker.id, out);
    }
    out.push(m);
  };

  cluster.on('message', (worker, message: unknown) => unbatch(message, (m) => receive(worker, m)));
  const receive = (worker: Worker, m: IpcMessage) => {
    if (m.gh === 'ready') {
      const index = indexOf.get(worker.id);
      const slot = index === undefined ? undefined : slots[index];
      if (slot) slot.everReady = true;
      if (announced) log.info({ worker: index, pid: worker.process.pid }, 'worker serving again');
      else if (slots.every((s) => s.everReady)) {
        announced = true;
        log.info({ workers: opts.workers, shared: state ? 'primary' : 'redis' }, 'all workers serving');
      }
    } else if (m.gh === 'bus') {
      for (const other of Object.values(cluster.workers ?? {}))
        if (other && other !== worker) {
          send(other, m);
          if (m.now) outbox.get(other.id)?.flush();
        }
    } else if (m.gh === 'call') {
      if (!state)
        return send(worker, { gh: 'reply', id: m.id, ok: false, value: 'no shared state (Redis in use)' });
      state.handle(worker.id, m.op, Array.isArray(m.args) ? m.args : []).then(
        (value) => send(worker, { gh: 'reply', id: m.id, ok: true, value: value ?? null }),
        (err: Error) => send(worker, { gh: 'reply', id: m.id, ok: false, value: err.message }),
      );
    }
  };

  cluster.on('exit', (worker, code, signal) => {
    const index = indexOf.get(worker.id);
    indexOf.delete(worker.id);
    outbox.delete(worker.id);
    const freed = state?.forgetWorker(worker.id);
    const slot = index === undefined ? undefined : slots[index];
    if (index === undefined || !slot) return;
    if (slot.worker === worker) slot.worker = null;
    if (stopping) {
      if (slots.every((s) => s.worker === null)) process.exit(exitCode);
      return;
    }
    if (!slot.everReady) {
      // It never served: the next one would fail alike (a port in use, a bad configuration).
      log.error({ worker: index, code, signal }, 'a worker failed to start; stopping');
      void stop('start failure', 1);
      return;
    }
    slot.failures = Date.now() - slot.startedAt >= STABLE_MS ? 1 : slot.failures + 1;
    const delay = Math.min(MAX_BACKOFF_MS, 100 * 2 ** (slot.failures - 1));
    log.warn(
      { worker: index, pid: worker.process.pid, code, signal, restart_in_ms: delay, freed },
      'worker exited; restarting it',
    );
    slot.restart = setTimeout(() => fork(index), delay);
  });

  const stop = async (reason: string, code = 0) => {
    if (stopping) return;
    stopping = true;
    exitCode = code;
    log.info({ reason, grace_ms: config.shutdownGraceMs }, 'stopping the workers');
    for (const s of slots) if (s.restart) clearTimeout(s.restart);
    const live = slots.map((s) => s.worker).filter((w): w is Worker => w !== null);
    if (live.length === 0) process.exit(exitCode);
    // Each worker drains as `serve` does (grace, then the batch worker's drain); the last resort after.
    const force = setTimeout(
      () => {
        for (const w of live) w.process.kill('SIGKILL');
        process.exit(1);
      },
      config.shutdownGraceMs + config.batches.drainMs + 15_000,
    );
    force.unref();
    for (const w of live) w.process.kill('SIGTERM');
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGHUP', () => {
    for (const s of slots) s.worker?.process.kill('SIGHUP');
  });

  for (let i = 0; i < opts.workers; i++) fork(i);
  log.info({ workers: opts.workers }, 'primary started its workers');
}

/**
 * Migrations, the bootstrap tenancy and the replay of left usage journals, once for all workers
 * (each worker still replays, at its start, the journal of the worker it replaces).
 */
async function prepareOnce(
  config: ReturnType<typeof loadConfig>,
  log: ReturnType<typeof createLog>,
): Promise<BootstrapResult> {
  const [{ openDatabase }, { migrateToLatest }, { buildServices }, { ensureBootstrap }] = await Promise.all([
    import('../db/connection.js'),
    import('../db/migrate.js'),
    import('../services.js'),
    import('../accounts/bootstrap.js'),
  ]);
  const handle = openDatabase(config.databaseUrl);
  try {
    await migrateToLatest(handle);
    const services = buildServices(handle, config, log);
    try {
      const bootstrap = await ensureBootstrap(services);
      const replayed = await services.accountant.replayJournal();
      if (replayed > 0)
        log.warn(
          { replayed },
          'usage journal: wrote the calls a stopped process had answered but not recorded',
        );
      return bootstrap;
    } finally {
      await services.shutdown();
    }
  } finally {
    await handle.close();
  }
}
