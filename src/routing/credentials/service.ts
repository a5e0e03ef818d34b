import { Counter, Gauge, type Registry } from 'prom-client';
import type { UpstreamError } from '../../providers/types.js';
import type { InferenceCall } from '../call.js';
import type { Catalog, ModelEntry } from '../catalog.js';
import type { Candidate, Credential } from '../select.js';
import type { BreakerState } from './breaker.js';
import { CredentialHealth, type HealthEntry } from './health.js';
import { moveFirst, weightedOrder } from './order.js';
import type { CredentialSettings } from './settings.js';
import { conversationKey, type StickyRoute, StickyRoutes } from './sticky.js';

/** What the fallback loop asks of the credentials: may this one be used now, and how it went. */
export interface CredentialGate {
  admit(c: Candidate): boolean;
  /** An admitted attempt's outcome: null when it was answered. */
  settle(c: Candidate, err: UpstreamError | null): void;
  /** An admitted attempt ended without a verdict (the caller went away, or it could not be paid). */
  release(c: Candidate): void;
  /** `c` served the call: the conversation's next turn prefers it. */
  served(call: InferenceCall, c: Candidate): void;
  /** When the soonest of these candidates' open breakers lets a probe through (epoch ms), if any. */
  reopensAt(cs: readonly Candidate[]): number | null;
}

/** What planning asks: the order of a tier of credentials, and the route a conversation had. */
export interface CredentialPlanner {
  /** Weighted random order, the credential `prefer` names (sticky) first. */
  arrange(tier: Credential[], prefer: string | null | undefined): Credential[];
  preferred(call: InferenceCall, model: ModelEntry): StickyRoute | undefined;
}

/** One credential's health, as the operator endpoint and /metrics show it (never its secret). */
export interface CredentialStatus {
  provider: string;
  kind: 'operator' | 'byok';
  /** The operator key's name, or the BYOK credential's id. */
  name: string;
  /** Operator keys: sha256 prefix of the secret (tells keys apart, reveals nothing). */
  fingerprint: string | null;
  weight: number | null;
  state: BreakerState;
  consecutive_failures: number;
  last_status: number | null;
  last_error_at: string | null;
  /** Open: when the next probe may go. */
  open_until: string | null;
}

const STATES: BreakerState[] = ['closed', 'open', 'half-open', 'disabled'];
const iso = (ms: number | null) => (ms === null || ms === 0 ? null : new Date(ms).toISOString());

/**
 * Several credentials per provider: weighted choice among them, a circuit breaker each, sticky
 * routing of conversations, and their health for /metrics and the operator endpoint.
 */
export class CredentialRouter implements CredentialGate, CredentialPlanner {
  readonly health: CredentialHealth;
  private readonly sticky: StickyRoutes | null;
  /** A call's conversation key, worked out once (planning reads it, the served attempt writes it). */
  private readonly conversations = new WeakMap<InferenceCall, string | null>();
  private readonly calls: Counter<'provider' | 'credential'>;
  private readonly failures: Counter<'provider' | 'credential' | 'status'>;
  private readonly skips: Counter<'provider' | 'credential'>;

  constructor(
    private readonly catalog: Catalog,
    settings: CredentialSettings,
    registry: Registry,
    private readonly random: () => number = Math.random,
    private readonly now: () => number = Date.now,
  ) {
    this.health = new CredentialHealth(settings, now);
    this.sticky = settings.sticky
      ? new StickyRoutes({ max: settings.stickyMax, ttlMs: settings.stickyTtlMs })
      : null;
    this.calls = new Counter({
      name: 'gatehouse_credential_calls_total',
      help: 'Calls served per provider credential (operator key name, or BYOK credential id)',
      labelNames: ['provider', 'credential'],
      registers: [registry],
    });
    this.failures = new Counter({
      name: 'gatehouse_credential_failures_total',
      help: 'Failed calls per provider credential and upstream status (0 = timeout or connection error)',
      labelNames: ['provider', 'credential', 'status'],
      registers: [registry],
    });
    this.skips = new Counter({
      name: 'gatehouse_credential_skips_total',
      help: 'Attempts that passed over a credential whose circuit breaker was open or disabled',
      labelNames: ['provider', 'credential'],
      registers: [registry],
    });
    const list = () => this.list();
    new Gauge({
      name: 'gatehouse_credential_state',
      help: 'Circuit breaker state per provider credential (1 for the current state); per node',
      labelNames: ['provider', 'credential', 'kind', 'state'],
      registers: [registry],
      collect() {
        this.reset();
        for (const s of list())
          for (const state of STATES)
            this.set(
              { provider: s.provider, credential: s.name, kind: s.kind, state },
              s.state === state ? 1 : 0,
            );
      },
    });
  }

  arrange(tier: Credential[], prefer: string | null | undefined): Credential[] {
    const ordered = weightedOrder(tier, this.random);
    return prefer ? moveFirst(ordered, (c) => c.name === prefer) : ordered;
  }

  private conversation(call: InferenceCall): string | null {
    let key = this.conversations.get(call);
    if (key === undefined) {
      key = conversationKey(call.wire.native, call.body);
      this.conversations.set(call, key);
    }
    return key;
  }

  /**
   * The route of this conversation's previous turn on `model`. Asked by candidate selection only
   * when the call has more than one route (providers, operator keys, or the caller's BYOK keys):
   * with one, a conversation's route needs no remembering, and hashing its opening on every call
   * (~2 % of a lane call's CPU) is skipped.
   */
  preferred(call: InferenceCall, model: ModelEntry): StickyRoute | undefined {
    if (!this.sticky) return undefined;
    const key = this.conversation(call);
    return key === null ? undefined : this.sticky.get(call.caller.keyHash, key, model.id);
  }

  admit(c: Candidate): boolean {
    const ok = this.health.admit(c.endpoint.provider, c.credential);
    if (!ok) this.skips.inc({ provider: c.endpoint.provider, credential: this.nameOf(c.credential) });
    return ok;
  }

  settle(c: Candidate, err: UpstreamError | null): void {
    const provider = c.endpoint.provider;
    this.health.settle(provider, c.credential, err);
    if (err)
      this.failures.inc({ provider, credential: this.nameOf(c.credential), status: String(err.status) });
  }

  release(c: Candidate): void {
    this.health.release(c.endpoint.provider, c.credential);
  }

  served(call: InferenceCall, c: Candidate): void {
    const provider = c.endpoint.provider;
    this.calls.inc({ provider, credential: this.nameOf(c.credential) });
    // Only a call that had a choice of route looked its conversation up (see `preferred`).
    const key = this.conversations.get(call);
    if (this.sticky && key)
      this.sticky.set(call.caller.keyHash, key, c.model.id, {
        provider,
        credential: c.credential.name ?? null,
      });
  }

  reopensAt(cs: readonly Candidate[]): number | null {
    let soonest: number | null = null;
    for (const c of cs) {
      const b = this.health.of(c.credential)?.breaker;
      if (b?.state === 'open' && (soonest === null || b.openUntil < soonest)) soonest = b.openUntil;
    }
    return soonest;
  }

  private nameOf(c: Credential): string {
    return c.name ?? (c.isByok ? (c.byokId ?? 'byok') : 'default');
  }

  /** Every operator key of the catalog (closed unless it failed), then the BYOK credentials that failed lately. */
  list(): CredentialStatus[] {
    const out: CredentialStatus[] = [];
    const status = (
      e: HealthEntry | undefined,
      base: Pick<CredentialStatus, 'provider' | 'kind' | 'name' | 'fingerprint' | 'weight'>,
    ): CredentialStatus => {
      const b = e?.breaker;
      // An open breaker past its cooldown admits the next call as its probe: shown as half-open.
      const state = b?.state === 'open' && this.now() >= b.openUntil ? 'half-open' : (b?.state ?? 'closed');
      return {
        ...base,
        state,
        consecutive_failures: b?.failures ?? 0,
        last_status: b?.lastStatus ?? null,
        last_error_at: iso(b?.lastErrorAt ?? null),
        open_until: b?.state === 'open' ? iso(b.openUntil) : null,
      };
    };
    for (const p of this.catalog.providers.values())
      for (const c of p.credentials ?? [])
        out.push(
          status(this.health.of(c), {
            provider: p.config.slug,
            kind: 'operator',
            name: this.nameOf(c),
            fingerprint: c.health?.version ?? null,
            weight: c.weight ?? 1,
          }),
        );
    for (const e of this.health.byokEntries())
      out.push(
        status(e, { provider: e.provider, kind: 'byok', name: e.name, fingerprint: null, weight: null }),
      );
    return out;
  }
}
