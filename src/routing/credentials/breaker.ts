/**
 * One credential's circuit breaker. closed: calls go through. open: calls skip the credential until
 * `openUntil`; then half-open: one probe call goes through — its success closes the breaker, its
 * failure re-opens it with a doubled cooldown. disabled (401/403): skipped until the credential
 * changes (a new breaker is made for it then).
 */
import { isTransientStatus } from '../../providers/types.js';

export type BreakerState = 'closed' | 'open' | 'half-open' | 'disabled';

export interface BreakerSettings {
  /** Consecutive 5xx / timeouts / connection errors that open the breaker (a 429 opens it at once). */
  failures: number;
  cooldownMs: number;
  maxCooldownMs: number;
}

/** Whether an upstream status says the credential itself is refused (not the request). */
export const isAuthFailure = (status: number): boolean => status === 401 || status === 403;

/** Whether an upstream status counts against the credential's health (0: timeout or connection error). */
export const isHealthFailure = isTransientStatus;

export class Breaker {
  state: BreakerState = 'closed';
  /** Consecutive failures (reset by a success). */
  failures = 0;
  lastStatus: number | null = null;
  lastErrorAt: number | null = null;
  /** While open: when the next probe may go (epoch ms). */
  openUntil = 0;
  /** Times re-opened in a row (the cooldown's backoff exponent). */
  private opens = 0;
  /** Half-open: the probe is on its way (other calls keep skipping). */
  private probing = false;

  constructor(
    private readonly s: BreakerSettings,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether a call may use the credential now; an open breaker past its cooldown admits one probe. */
  admit(): boolean {
    switch (this.state) {
      case 'closed':
        return true;
      case 'disabled':
        return false;
      case 'open':
        if (this.now() < this.openUntil) return false;
        this.state = 'half-open';
        this.probing = true;
        return true;
      case 'half-open':
        if (this.probing) return false;
        this.probing = true;
        return true;
    }
  }

  /** The credential worked (an answer, or a refusal of the request itself such as a 400). */
  success(): void {
    if (this.state === 'disabled') return;
    this.state = 'closed';
    this.failures = 0;
    this.opens = 0;
    this.probing = false;
    this.openUntil = 0;
  }

  /** The credential failed with `status` (see isAuthFailure / isHealthFailure). */
  failure(status: number, retryAfterMs?: number): void {
    if (this.state === 'disabled') return;
    this.lastStatus = status;
    this.lastErrorAt = this.now();
    if (isAuthFailure(status)) {
      this.state = 'disabled';
      this.probing = false;
      return;
    }
    this.failures++;
    if (this.state === 'open') {
      // A call let through before the breaker opened: it may push the reopening later, no more.
      this.openUntil = Math.max(this.openUntil, this.now() + this.cooldown(retryAfterMs, this.opens - 1));
      return;
    }
    if (this.state === 'half-open' || status === 429 || this.failures >= this.s.failures) {
      this.state = 'open';
      this.probing = false;
      this.openUntil = this.now() + this.cooldown(retryAfterMs, this.opens);
      this.opens++;
    }
  }

  /** An admitted call ended without a verdict (the caller left): a probe's turn is given back. */
  release(): void {
    if (this.state === 'half-open') this.probing = false;
  }

  /** Retry-After when the upstream gave one, else the base cooldown doubled per re-opening; capped. */
  private cooldown(retryAfterMs: number | undefined, opens: number): number {
    const backoff = this.s.cooldownMs * 2 ** Math.max(0, opens);
    return Math.min(this.s.maxCooldownMs, retryAfterMs !== undefined ? Math.max(0, retryAfterMs) : backoff);
  }
}
