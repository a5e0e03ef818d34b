import { randomBase64url } from '../lib/random-pool.js';
import { type LimitStore, msToNextMinute } from './store.js';

/**
 * The usage limits a platform team sets on an API key (and on a guardrail, for every key it
 * covers): requests per minute, tokens per minute (prompt + completion, counted when a call ends
 * and enforced on the calls that start after) and calls in flight. null = no limit.
 */
export interface ScopeLimits {
  /** Where the counters live, e.g. `k:<key hash>`: one set of counters per key or guardrail. */
  scope: string;
  /** How a refusal names the holder, e.g. `key "ci"` (never a secret). */
  label: string;
  rpm: number | null;
  tpm: number | null;
  concurrency: number | null;
}

export type LimitRefusal = { ok: false; message: string; retryAfterMs: number };

/** A call's slots: `end` frees them and counts the call's tokens (once; later calls do nothing). */
export interface LimitSlot {
  end(tokens: number): void;
}

/** When a refused call may try again for want of a free slot: unknown, so soon. */
const SLOT_RETRY_MS = 1_000;

export class UsageLimits {
  constructor(
    private readonly store: LimitStore,
    /** How long a slot holds at most (a node that died mid-call). */
    private readonly slotTtlMs: number,
    private readonly now: () => number = Date.now,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  /** Tokens per minute, then requests per minute (counting this request) of each scope in turn. */
  async admit(limits: ScopeLimits[]): Promise<{ ok: true } | LimitRefusal> {
    const now = this.now();
    for (const l of limits) {
      if (l.tpm !== null && (await this.store.tokens(l.scope, now)) >= l.tpm) {
        return refusal(
          `Token rate limit reached: ${l.label} allows ${count(l.tpm, 'token')} per minute (tpm_limit)`,
          msToNextMinute(now),
        );
      }
    }
    for (const l of limits) {
      if (l.rpm !== null && !(await this.store.hit(l.scope, l.rpm, now))) {
        return refusal(
          `Rate limit reached: ${l.label} allows ${count(l.rpm, 'request')} per minute (rpm_limit)`,
          msToNextMinute(now),
        );
      }
    }
    return { ok: true };
  }

  /** Takes a slot in every scope with a concurrency limit; all or none. */
  async enter(limits: ScopeLimits[]): Promise<{ ok: true; slot: LimitSlot } | LimitRefusal> {
    const taken: string[] = [];
    let id = '';
    for (const l of limits) {
      if (l.concurrency === null) continue;
      id ||= randomBase64url(9);
      if (await this.store.acquire(l.scope, id, l.concurrency, this.slotTtlMs, this.now())) {
        taken.push(l.scope);
        continue;
      }
      this.free(taken, id);
      return refusal(
        `Concurrency limit reached: ${l.label} allows ${count(l.concurrency, 'call')} in flight (concurrency_limit)`,
        SLOT_RETRY_MS,
      );
    }
    const counted = limits.filter((l) => l.tpm !== null).map((l) => l.scope);
    let ended = false;
    return {
      ok: true,
      slot: {
        end: (tokens) => {
          if (ended) return;
          ended = true;
          this.free(taken, id);
          if (tokens > 0) {
            const now = this.now();
            for (const scope of counted) this.store.addTokens(scope, tokens, now).catch(this.onError);
          }
        },
      },
    };
  }

  private free(scopes: string[], id: string): void {
    for (const scope of scopes) this.store.release(scope, id).catch(this.onError);
  }

  close(): Promise<void> {
    return this.store.close();
  }
}

const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

const refusal = (message: string, retryAfterMs: number): LimitRefusal => ({
  ok: false,
  message: `${message}; retry in ${Math.max(1, Math.ceil(retryAfterMs / 1000))} s`,
  retryAfterMs,
});
