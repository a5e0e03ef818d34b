import cluster from 'node:cluster';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import {
  MemoryReservations,
  type Misfit,
  type PoolCheck,
  type ReservationStore,
} from '../credits/reservations.js';
import { type LimitStore, MemoryLimitStore } from '../limits/store.js';
import type { RateLimitVerdict, SharedWindows } from '../routing/rate-limit.js';

/**
 * A worker's side of `serve --workers N` without Redis: the node's shared state lives in the primary
 * process (src/cluster/primary.ts), reached over the IPC channel Node's cluster opens to every
 * worker. Calls to it are request/reply messages; cluster-bus messages are relayed by the primary to
 * the other workers.
 *
 * Messages (structured as below, JSON-serialized by Node):
 * - worker → primary `{ gh: 'call', id, op, args }`, answered by `{ gh: 'reply', id, ok, value }`;
 * - `{ gh: 'bus', text }` both ways (the cluster bus's envelope, relayed as is);
 * - worker → primary `{ gh: 'ready' }` once it serves;
 * - `{ gh: 'batch', messages }` both ways: the messages one process sent in one turn of its event
 *   loop. A worker under load makes several calls per turn (each request: its rate-limit window,
 *   its credits reservation, the settlement and spend of another); one message carries them all,
 *   one write and one JSON parse on each side instead of one per call, which is most of what the
 *   coordination costs (bench/NOTES.md §15). The order is kept, so the primary still answers the
 *   calls one at a time, in order, and stays exact.
 */

export type IpcMessage =
  | { gh: 'call'; id: number; op: string; args: unknown[] }
  | { gh: 'reply'; id: number; ok: boolean; value: unknown }
  /** `now`: sent at once (an invalidation must reach the other workers before its write is answered). */
  | { gh: 'bus'; text: string; now?: boolean }
  /** A worker serves (its gateway listens). */
  | { gh: 'ready' }
  | { gh: 'batch'; messages: IpcMessage[] };

export const isIpcMessage = (m: unknown): m is IpcMessage =>
  !!m && typeof m === 'object' && typeof (m as { gh?: unknown }).gh === 'string';

/**
 * The index (0…N-1) of this worker of `serve --workers N`, null otherwise — a cluster worker of
 * another supervisor (pm2's cluster mode) included: its primary would answer none of our messages.
 */
export function workerIndex(): number | null {
  const n = Number(process.env.GATEHOUSE_WORKER_INDEX);
  if (!cluster.isWorker || process.env.GATEHOUSE_WORKER_INDEX === undefined || !Number.isInteger(n) || n < 0)
    return null;
  return n;
}

interface Pending {
  resolve(v: unknown): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

export class IpcLink {
  private seq = 0;
  private readonly pending = new Map<number, Pending>();
  private readonly busHandlers: ((text: string) => void)[] = [];

  private readonly out = new Batcher((m) => this.write(m));

  constructor(private readonly timeoutMs = 1_000) {
    process.on('message', (m: unknown) => unbatch(m, (one) => this.receive(one)));
  }

  private receive(m: IpcMessage): void {
    if (m.gh === 'reply') {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      clearTimeout(p.timer);
      if (m.ok) p.resolve(m.value);
      else p.reject(new Error(String(m.value)));
    } else if (m.gh === 'bus') {
      for (const h of this.busHandlers) h(m.text);
    }
  }

  /** Whether the primary can be reached (the channel closes when it dies). */
  get connected(): boolean {
    return process.connected;
  }

  /** Runs `op` in the primary; rejects when it does not answer within the timeout. */
  call<T>(op: string, args: unknown[]): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const id = ++this.seq;
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`no answer from the primary process within ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      timer.unref();
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject, timer });
      this.send({ gh: 'call', id, op, args }, (err) => {
        const p = this.pending.get(id);
        if (!p) return;
        this.pending.delete(id);
        clearTimeout(p.timer);
        reject(err);
      });
    });
  }

  /** Writes what is queued now (a worker stopping). */
  flush(): void {
    this.out.flush();
  }

  /** Tells the primary this worker serves. */
  ready(): void {
    this.send({ gh: 'ready' }, () => {});
  }

  /** `now` (invalidations): written at once, with whatever is queued; spend waits for the turn's batch. */
  sendBus(text: string, now = false): void {
    this.send(now ? { gh: 'bus', text, now } : { gh: 'bus', text }, () => {});
    if (now) this.out.flush();
  }

  onBus(handler: (text: string) => void): void {
    this.busHandlers.push(handler);
  }

  private send(m: IpcMessage, failed: (err: Error) => void): void {
    if (!process.send || !process.connected) {
      failed(new Error('the primary process is gone'));
      return;
    }
    this.out.push(m, failed);
  }

  private write(m: IpcMessage): Promise<Error | null> {
    return new Promise((resolve) => {
      if (!process.send || !process.connected) return resolve(new Error('the primary process is gone'));
      try {
        process.send(m, undefined, {}, (err: Error | null) => resolve(err));
      } catch (err) {
        resolve(err as Error);
      }
    });
  }
}

/**
 * Gathers the messages of one turn of the event loop and writes them as one (`setImmediate`: after
 * the turn's I/O callbacks, so the calls of every request read in that turn travel together; it
 * delays a message by no more than the rest of the turn).
 */
export class Batcher {
  private queue: IpcMessage[] = [];
  private failed: ((err: Error) => void)[] = [];
  private scheduled = false;

  constructor(private readonly write: (m: IpcMessage) => Promise<Error | null> | null) {}

  push(m: IpcMessage, failed?: (err: Error) => void): void {
    this.queue.push(m);
    if (failed) this.failed.push(failed);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  /** Writes what is queued now (the scheduled write then finds nothing to do). */
  flush(): void {
    this.scheduled = false;
    const [messages, failed] = [this.queue, this.failed];
    this.queue = [];
    this.failed = [];
    if (messages.length === 0) return;
    const sent = this.write(messages.length === 1 ? (messages[0] as IpcMessage) : { gh: 'batch', messages });
    if (sent && failed.length > 0)
      void sent.then((err) => {
        if (err) for (const f of failed) f(err);
      });
  }
}

/** Calls `each` for the message, or for every message of a batch (in order). */
export function unbatch(m: unknown, each: (m: IpcMessage) => void): void {
  if (!isIpcMessage(m)) return;
  if (m.gh !== 'batch') each(m);
  else if (Array.isArray(m.messages))
    for (const one of m.messages) if (isIpcMessage(one) && one.gh !== 'batch') each(one);
}

let link: IpcLink | null | undefined;

/** This process's link to the primary: null unless it is a cluster worker of `serve --workers`. */
export function clusterLink(): IpcLink | null {
  if (link === undefined) link = workerIndex() !== null && process.send ? new IpcLink() : null;
  return link;
}

interface Logger {
  warn(msg: string): void;
  info(msg: string): void;
}

/**
 * Runs `op` in the primary; should it not answer (it is gone, or overloaded past the timeout), the
 * worker answers from its own memory (logged once per outage), as the Redis stores do while Redis
 * is down: limits keep applying, per worker, rather than inference stopping.
 */
class Shared {
  private down = false;
  constructor(
    private readonly link: IpcLink,
    private readonly what: string,
    private readonly log: Logger,
  ) {}

  async run<T>(op: string, args: unknown[], local: () => Promise<T> | T): Promise<T> {
    try {
      const value = await this.link.call<T>(op, args);
      if (this.down) {
        this.down = false;
        this.log.info(`${this.what}: the primary process answers again; shared between workers again`);
      }
      return value;
    } catch (err) {
      if (!this.down) {
        this.down = true;
        this.log.warn(
          `${this.what}: ${(err as Error).message}; this worker counts in its own memory meanwhile`,
        );
      }
      return local();
    }
  }
}

/** The usage limits' counters (rpm, tpm, calls in flight) in the primary: the workers share them. */
export class IpcLimitStore implements LimitStore {
  private readonly local = new MemoryLimitStore();
  private readonly shared: Shared;

  constructor(link: IpcLink, log: Logger) {
    this.shared = new Shared(link, 'Usage limits', log);
  }

  hit(scope: string, limit: number, now: number): Promise<boolean> {
    return this.shared.run('limits.hit', [scope, limit, now], () => this.local.hit(scope, limit, now));
  }

  tokens(scope: string, now: number): Promise<number> {
    return this.shared.run('limits.tokens', [scope, now], () => this.local.tokens(scope, now));
  }

  addTokens(scope: string, tokens: number, now: number): Promise<void> {
    return this.shared.run('limits.addTokens', [scope, tokens, now], () =>
      this.local.addTokens(scope, tokens, now),
    );
  }

  acquire(scope: string, id: string, limit: number, ttlMs: number, now: number): Promise<boolean> {
    return this.shared.run('limits.acquire', [scope, id, limit, ttlMs, now], () =>
      this.local.acquire(scope, id, limit, ttlMs, now),
    );
  }

  async release(scope: string, id: string): Promise<void> {
    // Released on both: a slot taken in memory while the primary did not answer is freed there.
    await this.local.release(scope, id);
    await this.shared.run('limits.release', [scope, id], () => {});
  }

  async close(): Promise<void> {}
}

/** Spend reservations in the primary: a budget's headroom is checked against every worker's calls. */
export class IpcReservations implements ReservationStore {
  private readonly local = new MemoryReservations();
  private readonly localIds = new Set<string>();
  private readonly shared: Shared;

  constructor(link: IpcLink, log: Logger) {
    this.shared = new Shared(link, 'Spend reservations', log);
  }

  async reserve(id: string, checks: PoolCheck[], amount: number, ttlMs: number): Promise<Misfit> {
    // Nothing to check (no key limit, no budget: most calls' first reservation): nothing to ask.
    if (checks.length === 0) return null;
    return this.shared.run('resv.reserve', [id, checks, amount, ttlMs], () => {
      this.localIds.add(id);
      return this.local.reserveNow(id, checks, amount, ttlMs);
    });
  }

  async settle(id: string, pools: string[], actualUsd: number): Promise<void> {
    if (this.localIds.delete(id)) return this.local.settle(id, pools);
    if (pools.length === 0) return;
    await this.shared.run('resv.settle', [id, pools, actualUsd], () => {});
  }

  async close(): Promise<void> {}
}

/**
 * The request-rate windows (RateLimiter: per key, per batch submitter, per vault caller) in the
 * primary, over the same batched link as the other calls (rate-limiter-flexible's RateLimiterCluster
 * sends a message each way per request of its own). Should the primary not answer, the worker counts
 * in its own memory meanwhile, as the usage limits do.
 */
export class IpcWindows implements SharedWindows {
  private readonly local = new Map<string, RateLimiterMemory>();
  private readonly shared: Shared;

  constructor(link: IpcLink, log: Logger) {
    this.shared = new Shared(link, 'Rate limits', log);
  }

  consume(
    keyPrefix: string,
    points: number,
    durationSeconds: number,
    key: string,
  ): Promise<RateLimitVerdict> {
    return this.shared.run('rl.consume', [keyPrefix, points, durationSeconds, key], () =>
      consumeWindow(this.local, keyPrefix, points, durationSeconds, key),
    );
  }
}

/** Counts one request of `key` in the window `keyPrefix` (one limiter per prefix and limits). */
export async function consumeWindow(
  limiters: Map<string, RateLimiterMemory>,
  keyPrefix: string,
  points: number,
  duration: number,
  key: string,
): Promise<RateLimitVerdict> {
  const name = `${keyPrefix}\0${points}\0${duration}`;
  let limiter = limiters.get(name);
  if (!limiter) {
    limiter = new RateLimiterMemory({ keyPrefix, points, duration });
    limiters.set(name, limiter);
  }
  try {
    const res = await limiter.consume(key);
    return { ok: true, remaining: res.remainingPoints };
  } catch (rej) {
    if (rej instanceof RateLimiterRes) return { ok: false, retryAfterMs: Math.max(0, rej.msBeforeNext) };
    throw rej;
  }
}
