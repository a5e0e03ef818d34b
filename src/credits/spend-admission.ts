import type { Caller } from '../accounts/caller.js';
import type { BudgetRule, EffectivePolicy } from '../guardrails/policy.js';
import type { ResetInterval } from '../lib/time.js';
import { newReservationId, type PoolCheck, type ReservationStore } from './reservations.js';
import {
  formatUsd,
  howToAddCredits,
  type KeyLimitRow,
  type SpendEvent,
  type SpendTracker,
  type SpendWindow,
} from './spend.js';

/**
 * Admission of a billed call against the key's limit, guardrail budgets and the organization's
 * credits, with the call's worst-case cost reserved (reservations.ts) so that calls in flight
 * count before their cost is known. Refusals keep the statuses of the limits: 403 for key limits
 * and budgets, 402 for credits.
 */

export type Admitted = { ok: true; hold: SpendHold } | { ok: false; status: 402 | 403; reason: string };

/** The reservation of one call, settled once when it ends. */
export interface SpendHold {
  /** Reserves the organization's credits too (an attempt on the operator's key); once per call. */
  credits(): Promise<{ ok: true } | { ok: false; status: 402; reason: string }>;
  /** The call ended with this generation: its cost is counted, the reservation dropped. */
  settle(row: GenerationCost): void;
  /** The call ended without a generation (refused, failed before any attempt): drop the reservation. */
  release(): void;
}

/** The columns of a generation row a settlement needs. */
export interface GenerationCost {
  id: string;
  key_hash: string | null;
  user_id: string | null;
  organization_id: string;
  cost_usd: number;
  is_byok: number;
  created_at: string;
}

/** One limit a call is checked against, and how its refusal reads. */
interface Limit {
  check: PoolCheck;
  refuse: (reserved: number) => string;
}

const keyPool = (hash: string) => `k:${hash}`;
const userPool = (org: string, user: string) => `u:${org}:${user}`;
const orgPool = (org: string) => `o:${org}`;

export class SpendAdmission {
  constructor(
    private readonly spend: SpendTracker,
    private readonly store: ReservationStore,
    /** How long a reservation holds at most (a call that never settles: a dead process, a lost stream). */
    private readonly ttlMs: number,
  ) {}

  /** Reserves `worstUsd` against the key's limit and every budget of the policy. */
  async reserve(
    key: KeyLimitRow | null,
    policy: Pick<EffectivePolicy, 'budgets'>,
    caller: Pick<Caller, 'keyHash' | 'organizationId'>,
    worstUsd: number,
  ): Promise<Admitted> {
    const amount = Math.max(0, worstUsd);
    const id = newReservationId();
    let pools: string[] = [];
    for (let attempt = 0; ; attempt++) {
      // Load the counters, then read them synchronously just before the reservation.
      await this.warm(key, policy, caller);
      const limits = this.limits(key, policy, caller, amount);
      if (limits === null) {
        if (attempt < 2) continue;
        throw new Error('spend counters kept being evicted while admitting a call; try again');
      }
      for (const l of limits) {
        if (l.check.headroom <= 0) return { ok: false, status: 403, reason: l.refuse(-1) };
      }
      const misfit = await this.store.reserve(
        id,
        limits.map((l) => l.check),
        amount,
        this.ttlMs,
      );
      if (misfit) {
        const l = limits[misfit.index] as Limit;
        return { ok: false, status: 403, reason: l.refuse(misfit.reserved) };
      }
      pools = limits.map((l) => l.check.pool);
      break;
    }
    return { ok: true, hold: this.hold(id, pools, amount, caller.organizationId) };
  }

  private async warm(
    key: KeyLimitRow | null,
    policy: Pick<EffectivePolicy, 'budgets'>,
    caller: Pick<Caller, 'organizationId'>,
  ): Promise<void> {
    const loads: Promise<unknown>[] = [];
    if (key && key.limit_usd !== null) loads.push(this.spend.spend({ keyHash: key.hash }, 'lifetime'));
    for (const b of policy.budgets) loads.push(this.spend.spend(this.scopeOf(b, caller), 'lifetime'));
    await Promise.all(loads);
  }

  private scopeOf(
    b: BudgetRule,
    caller: Pick<Caller, 'organizationId'>,
  ): { keyHash: string } | { organizationId: string; userId: string } {
    return 'keyHash' in b.scope
      ? { keyHash: b.scope.keyHash }
      : { organizationId: caller.organizationId, userId: b.scope.userId };
  }

  /** The limits with their headroom as counted now; null when a counter was evicted meanwhile. */
  private limits(
    key: KeyLimitRow | null,
    policy: Pick<EffectivePolicy, 'budgets'>,
    caller: Pick<Caller, 'organizationId'>,
    amount: number,
  ): Limit[] | null {
    const out: Limit[] = [];
    if (key && key.limit_usd !== null) {
      const window: SpendWindow = (key.limit_reset as ResetInterval | null) ?? 'lifetime';
      const byok = key.include_byok_in_limit === true || key.include_byok_in_limit === 1;
      const amounts = this.spend.spentNow({ keyHash: key.hash }, window);
      if (!amounts) return null;
      const spent = amounts.paid + (byok ? amounts.byok : 0);
      const limitUsd = key.limit_usd;
      const tail = `${this.spend.windowText(window)}${byok ? ', BYOK included' : ''}`;
      out.push({
        check: { pool: keyPool(key.hash), headroom: limitUsd - spent },
        refuse: (reserved) =>
          reserved < 0
            ? `API key limit reached: spent ${formatUsd(spent)} of its ${formatUsd(limitUsd)} limit ${tail}`
            : `API key limit reached: spent ${formatUsd(spent)} of its ${formatUsd(limitUsd)} limit ${tail}; ` +
              this.misfit(reserved, amount),
      });
    }
    for (const b of policy.budgets) {
      const window: SpendWindow = b.interval ?? 'lifetime';
      const scope = this.scopeOf(b, caller);
      const amounts = this.spend.spentNow(scope, window);
      if (!amounts) return null;
      const spent = amounts.paid + (b.includeByok ? amounts.byok : 0);
      const whose = 'keyHash' in b.scope ? 'this API key' : 'this user';
      const head = `Budget of guardrail "${b.guardrailName}" exhausted: ${whose} spent ${formatUsd(spent)} of its ${formatUsd(b.limitUsd)} limit ${this.spend.windowText(window)}${b.includeByok ? ', BYOK included' : ''}`;
      out.push({
        check: {
          pool: 'keyHash' in scope ? keyPool(scope.keyHash) : userPool(scope.organizationId, scope.userId),
          headroom: b.limitUsd - spent,
        },
        refuse: (reserved) => (reserved < 0 ? head : `${head}; ${this.misfit(reserved, amount)}`),
      });
    }
    return out;
  }

  private misfit(reserved: number, amount: number): string {
    return (
      `${formatUsd(reserved)} is reserved by calls in flight and this call's reservation ` +
      `(its worst-case cost, ${formatUsd(amount)}) does not fit; lower max_tokens or retry when they finish`
    );
  }

  private hold(id: string, pools: string[], amount: number, organizationId: string): SpendHold {
    let done = false;
    let creditsReserved = false;
    const all = () => (creditsReserved ? [...pools, orgPool(organizationId)] : pools);
    return {
      credits: async () => {
        if (!this.spend.creditsEnforced || creditsReserved || done) return { ok: true };
        await this.spend.balance(organizationId); // loads it; read below without a pause
        const balance = this.spend.balanceNow(organizationId) ?? (await this.spend.balance(organizationId));
        const no = (text: string) => ({
          ok: false as const,
          status: 402 as const,
          reason: `Insufficient credits: ${text}. ${howToAddCredits(organizationId)}`,
        });
        if (balance <= 0) return no(`the organization's balance is ${formatUsd(balance)}`);
        const misfit = await this.store.reserve(
          id,
          [{ pool: orgPool(organizationId), headroom: balance }],
          amount,
          this.ttlMs,
        );
        if (misfit)
          return no(
            `the organization's balance is ${formatUsd(balance)}, ${this.misfit(misfit.reserved, amount)}`,
          );
        creditsReserved = true;
        return { ok: true };
      },
      settle: (row) => {
        if (done) return;
        done = true;
        const event: SpendEvent = {
          id: row.id,
          keyHash: row.key_hash,
          userId: row.user_id,
          organizationId: row.organization_id,
          costUsd: row.cost_usd,
          isByok: row.is_byok === 1,
          at: row.created_at,
        };
        // Counted before the reservation goes, in the same turn: no moment sees neither.
        this.spend.record(event);
        void this.store.settle(id, all(), row.cost_usd);
      },
      release: () => {
        if (done) return;
        done = true;
        void this.store.settle(id, all(), 0);
      },
    };
  }
}
