/**
 * The generation limit: at most `concurrency` generations run at once, at most `maxQueued` more
 * wait for a slot; beyond that a request is refused at once with a 429 queue_full and a
 * Retry-After estimate. A waiting request whose signal aborts (its client went away) leaves the
 * queue without ever running.
 *
 * The slots are shared fairly between tenants (organizations; a single tenant when the service
 * knows no callers): a tenant may hold — running plus waiting — at most its share,
 * max(1, ⌊capacity / active tenants⌋) where capacity = concurrency + maxQueued and the active
 * tenants are those holding slots plus the one asking, and at most `perTenant` when that is set.
 * A tenant under its share is accepted even when the others filled the queue (one tenant alone
 * may use all of it, and the next one must still get in): the queue then briefly holds more than
 * its capacity, never more than twice it. Freed slots go to the waiting tenant running the fewest
 * generations, round-robin between equals, first come first served within each.
 */

import { MediaError } from './types.js';

export class QueueFullError extends MediaError {
  constructor(
    readonly retryAfterS: number,
    message = 'The media service is busy: too many generations are waiting. Retry later.',
  ) {
    super(429, 'queue_full', message);
    this.name = 'QueueFullError';
  }
}

interface Waiter {
  grant: (release: () => void) => void;
  fail: (err: unknown) => void;
  cleanup: () => void;
}

export interface QueueCounts {
  running: number;
  queued: number;
}

/** One tenant's place in the queue. */
interface Tenant {
  running: number;
  waiting: Waiter[];
}

export interface GenerationQueueOptions {
  /** The most slots (running + waiting) one tenant may hold; 0 = its fair share only. */
  perTenant?: number;
}

/** The tenant of callers the service cannot tell apart (token or no authentication). */
export const SHARED_TENANT = '';

/** A caller's tenant: its organization (API-key authentication), else the shared one. */
export const tenantOf = (caller: { organizationId: string } | null | undefined): string =>
  caller ? `org:${caller.organizationId}` : SHARED_TENANT;

export class GenerationQueue {
  private running = 0;
  private queued = 0;
  /** Tenants holding slots, in round-robin order (a served tenant moves to the back). */
  private readonly tenants = new Map<string, Tenant>();
  private readonly perTenant: number;

  /** `estimateMs`: the typical generation time (the status median), for Retry-After. */
  constructor(
    readonly concurrency: number,
    readonly maxQueued: number,
    private readonly estimateMs: () => number | null = () => null,
    opts: GenerationQueueOptions = {},
  ) {
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error('concurrency must be ≥ 1');
    if (!Number.isInteger(maxQueued) || maxQueued < 0) throw new Error('maxQueued must be ≥ 0');
    this.perTenant = opts.perTenant ?? 0;
    if (!Number.isInteger(this.perTenant) || this.perTenant < 0) throw new Error('perTenant must be ≥ 0');
  }

  counts(tenant?: string): QueueCounts {
    if (tenant === undefined) return { running: this.running, queued: this.queued };
    const t = this.tenants.get(tenant);
    return { running: t?.running ?? 0, queued: t?.waiting.length ?? 0 };
  }

  private get capacity(): number {
    return this.concurrency + this.maxQueued;
  }

  /** The most slots `tenant` may hold now (the tenants holding slots, and it, share the capacity). */
  share(tenant: string): number {
    const active = this.tenants.size + (this.tenants.has(tenant) ? 0 : 1);
    const fair = Math.max(1, Math.floor(this.capacity / active));
    return this.perTenant > 0 ? Math.min(fair, this.perTenant) : fair;
  }

  /** Whether a new request of `tenant` would be refused now (checked early, before reading its body). */
  isFull(tenant: string = SHARED_TENANT): boolean {
    const t = this.tenants.get(tenant);
    const held = t ? t.running + t.waiting.length : 0;
    if (held >= this.share(tenant)) return true;
    return this.running + this.queued >= 2 * this.capacity;
  }

  /** Seconds a refused client should wait: the queue ahead of it drained at the median pace. */
  retryAfterS(): number {
    const each = this.estimateMs() ?? 5_000;
    const rounds = Math.ceil((this.queued + 1) / this.concurrency);
    return Math.min(3600, Math.max(1, Math.ceil((each * rounds) / 1000)));
  }

  /**
   * Waits for a slot; resolves with its release function (call it exactly once, when done).
   * Throws QueueFullError when `tenant` holds its share (or the queue is full), or the signal's
   * reason when it aborts first.
   */
  acquire(signal?: AbortSignal, tenant: string = SHARED_TENANT): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.isFull(tenant)) return Promise.reject(new QueueFullError(this.retryAfterS()));
    const t = this.tenant(tenant);
    if (this.running < this.concurrency && this.queued === 0) {
      this.running += 1;
      t.running += 1;
      return Promise.resolve(this.releaser(tenant));
    }
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const i = t.waiting.indexOf(waiter);
        if (i >= 0) {
          t.waiting.splice(i, 1);
          this.queued -= 1;
          this.forget(tenant, t);
        }
        reject(signal?.reason ?? new Error('aborted'));
      };
      const waiter: Waiter = {
        grant: resolve,
        fail: reject,
        cleanup: () => signal?.removeEventListener('abort', onAbort),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      t.waiting.push(waiter);
      this.queued += 1;
    });
  }

  private tenant(id: string): Tenant {
    let t = this.tenants.get(id);
    if (!t) {
      t = { running: 0, waiting: [] };
      this.tenants.set(id, t);
    }
    return t;
  }

  /** A tenant holding nothing leaves the rotation (and no longer counts as active). */
  private forget(id: string, t: Tenant): void {
    if (t.running === 0 && t.waiting.length === 0) this.tenants.delete(id);
  }

  private releaser(tenant: string): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const t = this.tenants.get(tenant) as Tenant;
      t.running -= 1;
      this.running -= 1;
      this.toBack(tenant, t);
      this.forget(tenant, t);
      this.dispatch();
    };
  }

  /**
   * Gives free slots to waiting tenants: the one running the fewest generations first, ties in
   * round-robin order (the tenant served, or whose generation ended, goes to the back).
   */
  private dispatch(): void {
    while (this.running < this.concurrency && this.queued > 0) {
      let pick: [string, Tenant] | null = null;
      for (const entry of this.tenants)
        if (entry[1].waiting.length > 0 && (!pick || entry[1].running < pick[1].running)) pick = entry;
      if (!pick) return;
      const [id, t] = pick;
      const next = t.waiting.shift() as Waiter;
      this.queued -= 1;
      this.running += 1;
      t.running += 1;
      this.toBack(id, t);
      next.cleanup();
      next.grant(this.releaser(id));
    }
  }

  private toBack(id: string, t: Tenant): void {
    this.tenants.delete(id);
    this.tenants.set(id, t);
  }
}
