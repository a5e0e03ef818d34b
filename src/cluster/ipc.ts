import cluster from 'node:cluster';
import {
  MemoryReservations,
  type Misfit,
  type PoolCheck,
  type ReservationStore,
} from '../credits/reservations.js';
import { type LimitStore, MemoryLimitStore } from '../limits/store.js';

/**
 * A worker's side of `serve --workers N` without Redis: the node's shared state lives in the primary
 * process (src/cluster/primary.ts), reached over the IPC channel Node's cluster opens to every
 * worker. Calls to it are request/reply messages; cluster-bus messages are relayed by the primary to
 * the other workers.
 *
 * Messages (structured as below, JSON-serialized by Node):
 * - worker → primary `{ gh: 'call', id, op, args }`, answered by `{ gh: 'reply', id, ok, value }`;
 * - `{ gh: 'bus', text }` both ways (the cluster bus's envelope, relayed as is);
 * - worker → primary `{ gh: 'ready' }` once it serves.
 */

export type IpcMessage =
  | { gh: 'call'; id: number; op: string; args: unknown[] }
  | { gh: 'reply'; id: number; ok: boolean; value: unknown }
  | { gh: 'bus'; text: string }
  /** A worker serves (its gateway listens). */
  | { gh: 'ready' };

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

  constructor(private readonly timeoutMs = 1_000) {
    process.on('message', (m: unknown) => {
      if (!isIpcMessage(m)) return;
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
    });
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

  /** Tells the primary this worker serves. */
  ready(): void {
    this.send({ gh: 'ready' }, () => {});
  }

  sendBus(text: string): void {
    this.send({ gh: 'bus', text }, () => {});
  }

  onBus(handler: (text: string) => void): void {
    this.busHandlers.push(handler);
  }

  private send(m: IpcMessage, failed: (err: Error) => void): void {
    if (!process.send || !process.connected) {
      failed(new Error('the primary process is gone'));
      return;
    }
    try {
      process.send(m, undefined, {}, (err: Error | null) => {
        if (err) failed(err);
      });
    } catch (err) {
      failed(err as Error);
    }
  }
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

  reserve(id: string, checks: PoolCheck[], amount: number, ttlMs: number): Promise<Misfit> {
    return this.shared.run('resv.reserve', [id, checks, amount, ttlMs], () => {
      this.localIds.add(id);
      return this.local.reserveNow(id, checks, amount, ttlMs);
    });
  }

  async settle(id: string, pools: string[], actualUsd: number): Promise<void> {
    if (this.localIds.delete(id)) return this.local.settle(id, pools);
    await this.shared.run('resv.settle', [id, pools, actualUsd], () => {});
  }

  async close(): Promise<void> {}
}
