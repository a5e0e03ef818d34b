/**
 * The generation limit: at most `concurrency` generations run at once, at most `maxQueued` more
 * wait for a slot (first come, first served); beyond that a request is refused at once with a 429
 * queue_full and a Retry-After estimate. A waiting request whose signal aborts (its client went
 * away) leaves the queue without ever running.
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

export class GenerationQueue {
  private running = 0;
  private readonly waiting: Waiter[] = [];

  /** `estimateMs`: the typical generation time (the status median), for Retry-After. */
  constructor(
    readonly concurrency: number,
    readonly maxQueued: number,
    private readonly estimateMs: () => number | null = () => null,
  ) {
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error('concurrency must be ≥ 1');
    if (!Number.isInteger(maxQueued) || maxQueued < 0) throw new Error('maxQueued must be ≥ 0');
  }

  counts(): QueueCounts {
    return { running: this.running, queued: this.waiting.length };
  }

  /** Whether a new request would be refused now (checked early, before reading its body). */
  isFull(): boolean {
    return this.running >= this.concurrency && this.waiting.length >= this.maxQueued;
  }

  /** Seconds a refused client should wait: the queue ahead of it drained at the median pace. */
  retryAfterS(): number {
    const each = this.estimateMs() ?? 5_000;
    const rounds = Math.ceil((this.waiting.length + 1) / this.concurrency);
    return Math.min(3600, Math.max(1, Math.ceil((each * rounds) / 1000)));
  }

  /**
   * Waits for a slot; resolves with its release function (call it exactly once, when done).
   * Throws QueueFullError when the queue is full, or the signal's reason when it aborts first.
   */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.running < this.concurrency) {
      this.running += 1;
      return Promise.resolve(this.releaser());
    }
    if (this.waiting.length >= this.maxQueued) return Promise.reject(new QueueFullError(this.retryAfterS()));
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const i = this.waiting.indexOf(waiter);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal?.reason ?? new Error('aborted'));
      };
      const waiter: Waiter = {
        grant: resolve,
        fail: reject,
        cleanup: () => signal?.removeEventListener('abort', onAbort),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  private releaser(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = this.waiting.shift();
      if (next) {
        // The slot passes straight to the next waiter: `running` stays the same.
        next.cleanup();
        next.grant(this.releaser());
      } else {
        this.running -= 1;
      }
    };
  }
}
