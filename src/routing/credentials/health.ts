import { LRUCache } from 'lru-cache';
import type { UpstreamError } from '../../providers/types.js';
import type { Credential } from '../select.js';
import { Breaker, type BreakerSettings, isAuthFailure, isHealthFailure } from './breaker.js';

/** One credential's breaker and what names it (never its secret). */
export interface HealthEntry {
  breaker: Breaker;
  /** The credential's version it was made for (a new secret or BYOK update starts a new breaker). */
  version: string;
  provider: string;
  name: string;
  kind: 'operator' | 'byok';
}

/**
 * The circuit breakers of this node's credentials, in memory (per node, like the latency figures:
 * each node learns from the calls it makes). An operator key's breaker is keyed by provider and key
 * name, a BYOK credential's by its id — so one tenant's credential never touches another's, nor the
 * operator's. Breakers exist only for credentials that failed at least once; the rest are closed.
 */
export class CredentialHealth {
  private readonly operator = new Map<string, HealthEntry>();
  /** Bounded: tenants may hold many credentials; an evicted one is closed again (it has not failed lately). */
  private readonly byok = new LRUCache<string, HealthEntry>({ max: 50_000 });

  constructor(
    private readonly s: BreakerSettings & { breaker: boolean },
    private readonly now: () => number = Date.now,
  ) {}

  get enabled(): boolean {
    return this.s.breaker;
  }

  private entry(provider: string, c: Credential, create: boolean): HealthEntry | undefined {
    const h = c.health;
    if (!h) return undefined;
    const map = c.isByok ? this.byok : this.operator;
    let e = map.get(h.key);
    if (e && e.version !== h.version) {
      map.delete(h.key); // the credential changed: what its old secret did no longer counts
      e = undefined;
    }
    if (!e && create) {
      e = {
        breaker: new Breaker(this.s, this.now),
        version: h.version,
        provider,
        name: c.name ?? h.key,
        kind: c.isByok ? 'byok' : 'operator',
      };
      map.set(h.key, e);
    }
    return e;
  }

  /** Whether a call may use `c` now (one Map lookup for a credential that never failed). */
  admit(provider: string, c: Credential): boolean {
    if (!this.s.breaker) return true;
    const e = this.entry(provider, c, false);
    return e ? e.breaker.admit() : true;
  }

  /** The outcome of an admitted call: null when it was answered. */
  settle(provider: string, c: Credential, err: UpstreamError | null): HealthEntry | undefined {
    if (!this.s.breaker) return undefined;
    const status = err?.status;
    if (status === undefined || !(isAuthFailure(status) || isHealthFailure(status))) {
      const e = this.entry(provider, c, false);
      e?.breaker.success();
      return e;
    }
    const e = this.entry(provider, c, true);
    e?.breaker.failure(status, err?.retryAfterMs);
    return e;
  }

  /** An admitted call ended without a verdict (the caller went away). */
  release(provider: string, c: Credential): void {
    if (this.s.breaker) this.entry(provider, c, false)?.breaker.release();
  }

  /** The breaker of `c`, if it ever failed (and has not changed since). */
  of(c: Credential): HealthEntry | undefined {
    const h = c.health;
    if (!h) return undefined;
    const e = (c.isByok ? this.byok : this.operator).get(h.key);
    return e && e.version === h.version ? e : undefined;
  }

  /** The BYOK credentials' breakers (operator keys are listed from the catalog, see CredentialRouter). */
  byokEntries(): HealthEntry[] {
    return [...this.byok.values()];
  }
}
