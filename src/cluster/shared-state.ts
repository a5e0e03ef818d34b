import type { RateLimiterMemory } from 'rate-limiter-flexible';
import { MemoryReservations, type PoolCheck } from '../credits/reservations.js';
import { MemoryLimitStore } from '../limits/store.js';
import { consumeWindow } from './ipc.js';

/**
 * What the primary process of `serve --workers N` holds for its workers when there is no Redis:
 * the usage limits' counters and the spend reservations, in its memory, answering the workers'
 * calls (src/cluster/ipc.ts) one message at a time — each check-and-count runs in one turn of the
 * primary's event loop, so the workers together admit exactly a limit, as one process would.
 *
 * It remembers which worker holds which slot and reservation: when a worker dies, what its calls
 * in flight held is freed at once (those calls are gone) rather than when their TTLs lapse.
 */
export class SharedState {
  readonly limits = new MemoryLimitStore();
  readonly reservations = new MemoryReservations();
  /** The request-rate windows (RateLimiter), one limiter per prefix and limits. */
  private readonly windows = new Map<string, RateLimiterMemory>();
  /** worker → slot `scope\0id` / reservation id → pools. */
  private readonly slots = new Map<number, Set<string>>();
  private readonly reserved = new Map<number, Map<string, string[]>>();

  constructor(
    /** How long a settled call's cost still counts (until the bus told the other workers). */
    private readonly settledHoldMs = 1_000,
  ) {}

  /** Answers a worker's call; throws on an unknown operation or malformed arguments. */
  async handle(worker: number, op: string, args: unknown[]): Promise<unknown> {
    const a = args;
    switch (op) {
      case 'rl.consume': {
        const [points, duration] = [num(a[1]), num(a[2])];
        if (!(points > 0 && duration > 0)) throw new Error('points and duration: positive numbers expected');
        return consumeWindow(this.windows, str(a[0]), points, duration, str(a[3]));
      }
      case 'limits.hit':
        return this.limits.hit(str(a[0]), num(a[1]), num(a[2]));
      case 'limits.tokens':
        return this.limits.tokens(str(a[0]), num(a[1]));
      case 'limits.addTokens':
        return this.limits.addTokens(str(a[0]), num(a[1]), num(a[2]));
      case 'limits.acquire': {
        const [scope, id] = [str(a[0]), str(a[1])];
        const ok = await this.limits.acquire(scope, id, num(a[2]), num(a[3]), num(a[4]));
        if (ok) of(this.slots, worker, () => new Set<string>()).add(`${scope}\0${id}`);
        return ok;
      }
      case 'limits.release': {
        const [scope, id] = [str(a[0]), str(a[1])];
        this.slots.get(worker)?.delete(`${scope}\0${id}`);
        return this.limits.release(scope, id);
      }
      case 'resv.reserve': {
        const id = str(a[0]);
        const checks = a[1] as PoolCheck[];
        if (!Array.isArray(checks)) throw new Error('checks: an array expected');
        const misfit = this.reservations.reserveNow(id, checks, num(a[2]), num(a[3]));
        if (!misfit) {
          // One call reserves twice under one id (its limits, then its organization's credits).
          const mine = of(this.reserved, worker, () => new Map<string, string[]>());
          mine.set(id, [...new Set([...(mine.get(id) ?? []), ...checks.map((c) => c.pool)])]);
        }
        return misfit;
      }
      case 'resv.settle': {
        const id = str(a[0]);
        const pools = a[1] as string[];
        if (!Array.isArray(pools)) throw new Error('pools: an array expected');
        this.reserved.get(worker)?.delete(id);
        this.reservations.holdNow(id, [...new Set(pools)], Math.max(0, num(a[2])), this.settledHoldMs);
        return null;
      }
      default:
        throw new Error(`unknown operation ${op}`);
    }
  }

  /** A worker died: the slots and reservations of its calls in flight are freed. */
  forgetWorker(worker: number): { slots: number; reservations: number } {
    const slots = this.slots.get(worker) ?? new Set<string>();
    for (const s of slots) {
      const [scope, id] = s.split('\0') as [string, string];
      void this.limits.release(scope, id);
    }
    const reserved = this.reserved.get(worker) ?? new Map<string, string[]>();
    for (const [id, pools] of reserved) this.reservations.releaseNow(id, pools);
    this.slots.delete(worker);
    this.reserved.delete(worker);
    return { slots: slots.size, reservations: reserved.size };
  }
}

function of<K, V>(map: Map<K, V>, key: K, create: () => V): V {
  let v = map.get(key);
  if (v === undefined) {
    v = create();
    map.set(key, v);
  }
  return v;
}

function str(v: unknown): string {
  if (typeof v !== 'string') throw new Error('a string expected');
  return v;
}

function num(v: unknown): number {
  if (typeof v !== 'number' || Number.isNaN(v)) throw new Error('a number expected');
  return v;
}
