import { sql } from 'kysely';
import { LRUCache } from 'lru-cache';
import type { Caller } from '../accounts/caller.js';
import type { CreditsMode } from '../config.js';
import type { Db } from '../db/connection.js';
import type { BudgetRule, EffectivePolicy } from '../guardrails/policy.js';
import { type ResetInterval, windowStart } from '../lib/time.js';

/**
 * Spend counters for the hot path: what each API key and each user (within an organization) has
 * spent, lifetime and in the current UTC day, week and month, split into non-BYOK and BYOK; and
 * each organization's credit balance.
 *
 * Counters live in memory. An entry is seeded from the database on first use (one query), kept
 * current by `record()` (called by the accounting writer after each billed call, once its
 * usage_events row is written) and refreshed from the database in the background when older than
 * 30 s, so that several nodes converge. With REDIS_URL the cluster bus (src/cluster/bus.ts) also
 * calls `record()` for every billed call of the other nodes as it happens; the 30 s refresh then
 * only repairs what the bus lost. Windows roll over at UTC boundaries (`windowStart`).
 *
 * `record()` may come before or after the usage_events row is committed (the accounting writer
 * tells the counters at once and writes in batches). Each entry therefore keeps the records it was
 * told about that its last load may not have seen; a load reports the newest `created_at` it
 * summed, and records later than that are added on top of its sums. `at` must be the row's
 * `created_at` for this to be exact. A record older than what the load saw but not yet in it
 * (written out of order by another node) is missed until the next refresh.
 *
 * Checks are async but touch the database only when an entry is missing (first use, eviction, or
 * after `creditsChanged`); a warm check resolves from memory.
 */

export type SpendWindow = ResetInterval | 'lifetime';
export type Verdict = { ok: true } | { ok: false; reason: string };

export interface SpendAmounts {
  /** Spend charged to credits (non-BYOK), USD. */
  paid: number;
  /** Spend on the organization's own provider keys (BYOK), USD. */
  byok: number;
}

export interface SpendEvent {
  keyHash: string | null;
  userId: string | null;
  organizationId: string;
  costUsd: number;
  isByok: boolean;
  /** The `created_at` of the usage_events row. */
  at: Date | string | number;
  /** The generation's id: a call told twice (settled, then written) is counted once. */
  id?: string;
}

/** The key columns `checkKeyLimit` needs (an api_keys row fits). */
export interface KeyLimitRow {
  hash: string;
  limit_usd: number | null;
  limit_reset: string | null;
  include_byok_in_limit: number | boolean;
}

export interface SpendTrackerOptions {
  /** The clock (ms since epoch); tests inject one. */
  now?: () => number;
  /** Entries older than this are refreshed from the database in the background. Default 30 s. */
  refreshMs?: number;
  /** Most entries of each kind kept in memory. */
  max?: number;
  /** Told about background refreshes that failed (the stale counters stay in use). */
  onError?: (err: unknown) => void;
  /** `off`: `checkBalance` lets every call through (GATEHOUSE_CREDITS). Default `enforce`. */
  credits?: CreditsMode;
}

export const SPEND_REFRESH_MS = 30_000;
/** After a failed background refresh, the next attempt waits this long. */
const RETRY_MS = 5_000;

const WINDOWS = ['daily', 'weekly', 'monthly'] as const;

type Counters = Record<SpendWindow, SpendAmounts>;

/** One recorded call, as far as counters care. */
interface Rec {
  at: number;
  cost: number;
  byok: boolean;
}

/** A cached value with its load state. `value` is null until the first load lands. */
interface Entry<V> {
  value: V | null;
  loadedAt: number;
  loading: Promise<void> | null;
  /** Bumped to discard loads in flight (`creditsChanged`). */
  epoch: number;
  /**
   * Records newer than the newest row the last load saw (added on top of the next load too): the
   * ones from index `head` on. Dropping the oldest only moves `head`; the array is compacted once
   * the dropped part is its larger half, so each record costs O(1) amortised.
   */
  recent: Rec[];
  head: number;
}

/** Records kept per entry at most (beyond that the oldest are dropped: a transient undercount). */
const MAX_RECENT = 10_000;
/** How long a record is kept for loads to add (its row is written long before). */
const RECENT_KEEP_MS = 2 * SPEND_REFRESH_MS;

interface SpendValue {
  counters: Counters;
  starts: Record<ResetInterval, number>;
}

interface BalanceValue {
  credits: number;
  usage: number;
}

const zero = (): SpendAmounts => ({ paid: 0, byok: 0 });
const zeroCounters = (): Counters => ({ lifetime: zero(), daily: zero(), weekly: zero(), monthly: zero() });

const toMs = (at: Date | string | number) =>
  typeof at === 'number' ? at : typeof at === 'string' ? Date.parse(at) : at.getTime();

/** USD for messages: cents when that is exact, else up to six decimals. */
export function formatUsd(n: number): string {
  const abs = Math.abs(n);
  const cents = abs * 100;
  const text = Math.abs(Math.round(cents) - cents) < 1e-6 ? abs.toFixed(2) : String(Number(abs.toFixed(6)));
  return `${n < 0 && text !== '0.00' ? '-' : ''}$${text}`;
}

const WINDOW_PHRASE: Record<SpendWindow, string> = {
  lifetime: 'in total',
  daily: 'today (UTC)',
  weekly: 'this week (UTC, from Monday)',
  monthly: 'this month (UTC)',
};

/** When the window that contains `now` ends (the next UTC day, Monday or 1st). */
export function windowEnd(interval: ResetInterval, now: Date): Date {
  const s = windowStart(interval, now);
  switch (interval) {
    case 'daily':
      return new Date(Date.UTC(s.getUTCFullYear(), s.getUTCMonth(), s.getUTCDate() + 1));
    case 'weekly':
      return new Date(Date.UTC(s.getUTCFullYear(), s.getUTCMonth(), s.getUTCDate() + 7));
    case 'monthly':
      return new Date(Date.UTC(s.getUTCFullYear(), s.getUTCMonth() + 1, 1));
  }
}

/**
 * The end of every 402: how an operator adds credits to the organization (the CLI or the operator
 * API), so that whoever reads the refusal knows the exact next step.
 */
export const howToAddCredits = (organizationId: string): string =>
  `An operator adds credits with \`POST /api/v1/admin/credits\` ` +
  `{"organization_id":"${organizationId}","amount_usd":<USD>} (seen at once) or ` +
  `\`gatehouse credits add --org ${organizationId} --amount <USD>\` (seen within 30 s without Redis); ` +
  'calls on your own provider key (BYOK) need none. Credits are enforced because GATEHOUSE_CREDITS=enforce.';

/** Whether a BYOK call needs credits: it does not (the provider bills the organization directly). */
export const balanceRequired = (isByok: boolean): boolean => !isByok;

export class SpendTracker {
  private readonly keys: LRUCache<string, Entry<SpendValue>>;
  private readonly users: LRUCache<string, Entry<SpendValue>>;
  private readonly orgs: LRUCache<string, Entry<BalanceValue>>;
  private readonly now: () => number;
  private readonly refreshMs: number;
  private readonly onError: (err: unknown) => void;
  private readonly credits: CreditsMode;
  /** Ids of the records counted lately (a settled call is told again when its row is written). */
  private readonly seen = new LRUCache<string, true>({ max: 100_000 });

  constructor(
    private readonly db: Db,
    opts: SpendTrackerOptions = {},
  ) {
    const max = opts.max ?? 100_000;
    this.keys = new LRUCache({ max });
    this.users = new LRUCache({ max });
    this.orgs = new LRUCache({ max: Math.max(1, Math.floor(max / 10)) });
    this.now = opts.now ?? Date.now;
    this.refreshMs = opts.refreshMs ?? SPEND_REFRESH_MS;
    this.onError = opts.onError ?? (() => {});
    this.credits = opts.credits ?? 'enforce';
  }

  // -------------------------------------------------------------------------------------------
  // Writes

  /** Counts one billed call (before or after its usage_events row is written). No database access. */
  record(e: SpendEvent): void {
    const at = toMs(e.at);
    if (!Number.isFinite(at) || !Number.isFinite(e.costUsd) || e.costUsd === 0) return;
    if (e.id !== undefined) {
      if (this.seen.has(e.id)) return;
      this.seen.set(e.id, true);
    }
    const rec: Rec = { at, cost: e.costUsd, byok: e.isByok };
    if (e.keyHash !== null)
      this.remember(this.entry(this.keys, e.keyHash), rec, (v) => this.addSpend(v, rec));
    if (e.userId !== null) {
      const entry = this.entry(this.users, userKey(e.organizationId, e.userId));
      this.remember(entry, rec, (v) => this.addSpend(v, rec));
    }
    // BYOK calls use no credits: they leave the balance alone (as GET /credits total_usage does).
    this.remember(this.entry(this.orgs, e.organizationId), rec, (v) => {
      if (!rec.byok) v.usage += rec.cost;
    });
  }

  /** The organization's ledger changed on this node (credits added): reload its balance on next use. */
  creditsChanged(organizationId: string): void {
    const entry = this.orgs.get(organizationId);
    if (!entry) return;
    // Keep `recent` (calls whose rows may not be written yet); forget the sums and any load in flight.
    entry.value = null;
    entry.epoch++;
  }

  /**
   * Marks every counter stale: each is reloaded in the background on its next use, keeping the
   * records its reload may not see (after the cluster bus lost messages: other nodes' spend).
   */
  refreshAll(): void {
    for (const cache of [this.keys, this.users, this.orgs] as LRUCache<string, Entry<unknown>>[])
      for (const entry of cache.values()) entry.loadedAt = Number.NEGATIVE_INFINITY;
  }

  /** Forgets everything (tests; or after bulk edits to usage_events). */
  reset(): void {
    this.keys.clear();
    this.users.clear();
    this.orgs.clear();
  }

  // -------------------------------------------------------------------------------------------
  // Reads

  /** What a key, or a user within an organization, has spent in a window. */
  async spend(
    scope: { keyHash: string } | { organizationId: string; userId: string },
    window: SpendWindow,
  ): Promise<SpendAmounts> {
    const value = await this.spendValue(scope);
    return { ...value.counters[window] };
  }

  /**
   * What a scope has spent in a window as counted right now, or null when its counters are not
   * loaded (`spend` loads them). Synchronous, so that a check and a reservation made after it see
   * the same counters (spend-admission.ts).
   */
  spentNow(
    scope: { keyHash: string } | { organizationId: string; userId: string },
    window: SpendWindow,
  ): SpendAmounts | null {
    const entry =
      'keyHash' in scope
        ? this.keys.get(scope.keyHash)
        : this.users.get(userKey(scope.organizationId, scope.userId));
    if (!entry?.value) return null;
    this.roll(entry.value);
    return { ...entry.value.counters[window] };
  }

  /** The balance as counted right now, or null when not loaded (`balance` loads it). */
  balanceNow(organizationId: string): number | null {
    const v = this.orgs.get(organizationId)?.value;
    return v ? v.credits - v.usage : null;
  }

  /** Whether `checkBalance` refuses anything (GATEHOUSE_CREDITS=enforce). */
  get creditsEnforced(): boolean {
    return this.credits !== 'off';
  }

  /** Credits left: ledger total − recorded usage on the operator's credentials (BYOK aside; may be negative). */
  async balance(organizationId: string): Promise<number> {
    const entry = this.entry(this.orgs, organizationId);
    await this.ensure(
      entry,
      () => this.loadBalance(organizationId),
      (v, r) => {
        if (!r.byok) v.usage += r.cost;
      },
    );
    const v = entry.value as BalanceValue;
    return v.credits - v.usage;
  }

  // -------------------------------------------------------------------------------------------
  // Checks for the router

  /**
   * Every budget of the policy: the spend of its scope (the key, or the key's user in the key's
   * organization) in its window, BYOK spend counted only when the guardrail includes it. Refuses
   * when the spend has reached the limit.
   */
  async checkBudgets(
    policy: Pick<EffectivePolicy, 'budgets'>,
    caller: Pick<Caller, 'keyHash' | 'organizationId'>,
  ): Promise<Verdict> {
    if (policy.budgets.length === 0) return { ok: true };
    const scopeOf = (b: BudgetRule) =>
      'keyHash' in b.scope
        ? { keyHash: b.scope.keyHash }
        : { organizationId: caller.organizationId, userId: b.scope.userId };
    const values = await Promise.all(policy.budgets.map((b) => this.spendValue(scopeOf(b))));
    for (const [i, b] of policy.budgets.entries()) {
      const window: SpendWindow = b.interval ?? 'lifetime';
      const amounts = (values[i] as SpendValue).counters[window];
      const spent = amounts.paid + (b.includeByok ? amounts.byok : 0);
      if (spent >= b.limitUsd) {
        const whose = 'keyHash' in b.scope ? 'this API key' : 'this user';
        return {
          ok: false,
          reason: `Budget of guardrail "${b.guardrailName}" exhausted: ${whose} spent ${formatUsd(spent)} of its ${formatUsd(b.limitUsd)} limit ${this.windowText(window)}${b.includeByok ? ', BYOK included' : ''}`,
        };
      }
    }
    return { ok: true };
  }

  /** The key's own credit limit (`limit`, `limit_reset`, `include_byok_in_limit`). */
  async checkKeyLimit(key: KeyLimitRow): Promise<Verdict> {
    if (key.limit_usd === null) return { ok: true };
    const window: SpendWindow = (key.limit_reset as ResetInterval | null) ?? 'lifetime';
    const includeByok = key.include_byok_in_limit === true || key.include_byok_in_limit === 1;
    const amounts = (await this.spendValue({ keyHash: key.hash })).counters[window];
    const spent = amounts.paid + (includeByok ? amounts.byok : 0);
    if (spent < key.limit_usd) return { ok: true };
    return {
      ok: false,
      reason: `API key limit reached: spent ${formatUsd(spent)} of its ${formatUsd(key.limit_usd)} limit ${this.windowText(window)}${includeByok ? ', BYOK included' : ''}`,
    };
  }

  /**
   * Whether the organization can pay: its balance is above zero and, when `cost` is given (a
   * batch's estimate, a media generation's price), covers it. Always yes for a BYOK call (`byok`;
   * see `balanceRequired`) and for every call when credits are not enforced (`credits: 'off'`).
   * `cost.of` names the cost in the refusal ("this batch's estimated cost").
   */
  async checkBalance(
    organizationId: string,
    opts: { byok?: boolean; cost?: { usd: number; of: string } } = {},
  ): Promise<Verdict> {
    if (opts.byok || this.credits === 'off') return { ok: true };
    const balance = await this.balance(organizationId);
    const { cost } = opts;
    if (balance > 0 && (!cost || balance >= cost.usd)) return { ok: true };
    const costText = cost ? `${cost.of} is ${formatUsd(cost.usd)} and ` : '';
    return {
      ok: false,
      reason: `Insufficient credits: ${costText}the organization's balance is ${formatUsd(balance)}. ${howToAddCredits(organizationId)}`,
    };
  }

  // -------------------------------------------------------------------------------------------
  // Internals

  /** How a window is named in refusals ("today (UTC); it resets at …"). */
  windowText(window: SpendWindow): string {
    if (window === 'lifetime') return WINDOW_PHRASE.lifetime;
    const resets = windowEnd(window, new Date(this.now())).toISOString().replace('.000Z', 'Z');
    return `${WINDOW_PHRASE[window]}; it resets at ${resets}`;
  }

  private async spendValue(
    scope: { keyHash: string } | { organizationId: string; userId: string },
  ): Promise<SpendValue> {
    const [cache, id] =
      'keyHash' in scope
        ? [this.keys, scope.keyHash]
        : [this.users, userKey(scope.organizationId, scope.userId)];
    const entry = this.entry(cache, id);
    await this.ensure(
      entry,
      () => this.loadSpend(scope),
      (v, r) => this.addSpend(v, r),
    );
    const value = entry.value as SpendValue;
    this.roll(value);
    return value;
  }

  private entry<V>(cache: LRUCache<string, Entry<V>>, id: string): Entry<V> {
    let entry = cache.get(id);
    if (!entry) {
      entry = { value: null, loadedAt: 0, loading: null, epoch: 0, recent: [], head: 0 };
      cache.set(id, entry);
    }
    return entry;
  }

  /**
   * Keeps a record for the next load and adds it to the loaded value, if any. Records older than
   * RECENT_KEEP_MS are dropped: by then their rows are in the database for any load to see.
   */
  private remember<V>(entry: Entry<V>, rec: Rec, add: (value: V) => void): void {
    const recent = entry.recent;
    const cutoff = rec.at - RECENT_KEEP_MS;
    let head = entry.head;
    while (head < recent.length && (recent[head] as Rec).at < cutoff) head++;
    head = Math.max(head, recent.length + 1 - MAX_RECENT);
    if (head >= 1024 && head * 2 >= recent.length) {
      entry.recent = recent.slice(head);
      entry.head = 0;
    } else entry.head = head;
    entry.recent.push(rec);
    if (entry.value !== null) add(entry.value);
  }

  private addSpend(value: SpendValue, rec: Rec): void {
    this.roll(value);
    const field = rec.byok ? 'byok' : 'paid';
    value.counters.lifetime[field] += rec.cost;
    for (const w of WINDOWS) if (rec.at >= value.starts[w]) value.counters[w][field] += rec.cost;
  }

  /**
   * Waits for the first load (its error, if any, goes to the caller; the next call tries again);
   * afterwards starts a background refresh when the entry is stale and returns at once. A load
   * writes into this entry object (an evicted entry is not resurrected by it), and only if no
   * `creditsChanged` came meanwhile.
   */
  private async ensure<V>(
    entry: Entry<V>,
    load: () => Promise<{ value: V; newest: number | null }>,
    add: (value: V, rec: Rec) => void,
  ): Promise<void> {
    for (let attempt = 0; entry.value === null; attempt++) {
      if (attempt === 3) throw new Error('spend counters kept changing while loading; try again');
      await (entry.loading ?? this.startLoad(entry, load, add));
    }
    if (!entry.loading && this.now() - entry.loadedAt >= this.refreshMs) {
      this.startLoad(entry, load, add).catch((err) => {
        // Keep serving the stale counters; try again in a few seconds, not on every call.
        entry.loadedAt = this.now() - this.refreshMs + RETRY_MS;
        this.onError(err);
      });
    }
  }

  /** Loads the entry; records newer than the newest row the load saw are added on top. */
  private startLoad<V>(
    entry: Entry<V>,
    load: () => Promise<{ value: V; newest: number | null }>,
    add: (value: V, rec: Rec) => void,
  ): Promise<void> {
    const epoch = entry.epoch;
    const run = (async () => {
      try {
        const { value, newest } = await load();
        if (epoch !== entry.epoch) return;
        const kept = entry.head === 0 ? entry.recent : entry.recent.slice(entry.head);
        const unseen = newest === null ? kept : kept.filter((r) => r.at > newest);
        for (const r of unseen) add(value, r);
        entry.recent = unseen;
        entry.head = 0;
        entry.value = value;
        entry.loadedAt = this.now();
      } finally {
        entry.loading = null;
      }
    })();
    entry.loading = run;
    return run;
  }

  /** Rolls the windows of a value forward to the current UTC day, week and month. */
  private roll(value: SpendValue): void {
    const now = new Date(this.now());
    for (const w of WINDOWS) {
      const start = windowStart(w, now).getTime();
      if (start > value.starts[w]) {
        value.starts[w] = start;
        value.counters[w] = zero();
      }
    }
  }

  private async loadSpend(
    scope: { keyHash: string } | { organizationId: string; userId: string },
  ): Promise<{ value: SpendValue; newest: number | null }> {
    const now = new Date(this.now());
    const starts = {
      daily: windowStart('daily', now).getTime(),
      weekly: windowStart('weekly', now).getTime(),
      monthly: windowStart('monthly', now).getTime(),
    };
    const iso = (ms: number) => new Date(ms).toISOString();
    const sumIf = (byok: 0 | 1, since?: number) =>
      since === undefined
        ? sql<number>`coalesce(sum(case when is_byok = ${byok} then cost_usd else 0 end), 0)`
        : sql<number>`coalesce(sum(case when is_byok = ${byok} and created_at >= ${iso(since)} then cost_usd else 0 end), 0)`;
    let q = this.db
      .selectFrom('usage_events')
      .select([
        sumIf(0).as('paid'),
        sumIf(1).as('byok'),
        sumIf(0, starts.daily).as('paid_daily'),
        sumIf(1, starts.daily).as('byok_daily'),
        sumIf(0, starts.weekly).as('paid_weekly'),
        sumIf(1, starts.weekly).as('byok_weekly'),
        sumIf(0, starts.monthly).as('paid_monthly'),
        sumIf(1, starts.monthly).as('byok_monthly'),
        sql<string | null>`max(created_at)`.as('newest'),
      ]);
    q =
      'keyHash' in scope
        ? q.where('key_hash', '=', scope.keyHash)
        : q.where('organization_id', '=', scope.organizationId).where('user_id', '=', scope.userId);
    const r = await q.executeTakeFirstOrThrow();
    const counters = zeroCounters();
    counters.lifetime = { paid: Number(r.paid), byok: Number(r.byok) };
    counters.daily = { paid: Number(r.paid_daily), byok: Number(r.byok_daily) };
    counters.weekly = { paid: Number(r.paid_weekly), byok: Number(r.byok_weekly) };
    counters.monthly = { paid: Number(r.paid_monthly), byok: Number(r.byok_monthly) };
    return { value: { counters, starts }, newest: r.newest === null ? null : Date.parse(r.newest) };
  }

  private async loadBalance(organizationId: string): Promise<{ value: BalanceValue; newest: number | null }> {
    const [credits, usage] = await Promise.all([
      this.db
        .selectFrom('credit_ledger')
        .select(sql<number>`coalesce(sum(amount_usd), 0)`.as('total'))
        .where('organization_id', '=', organizationId)
        .executeTakeFirstOrThrow(),
      this.db
        .selectFrom('usage_events')
        .select([
          sql<number>`coalesce(sum(cost_usd), 0)`.as('total'),
          sql<string | null>`max(created_at)`.as('newest'),
        ])
        .where('organization_id', '=', organizationId)
        .where('is_byok', '=', 0)
        .executeTakeFirstOrThrow(),
    ]);
    return {
      value: { credits: Number(credits.total), usage: Number(usage.total) },
      newest: usage.newest === null ? null : Date.parse(usage.newest),
    };
  }
}

const userKey = (organizationId: string, userId: string) => `${organizationId}\u0000${userId}`;
