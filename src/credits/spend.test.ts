import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type DbHandle, openDatabase } from '../db/connection.js';
import * as m0001 from '../db/migrations/0001_initial.js';
import type { BudgetRule } from '../guardrails/policy.js';
import { newId } from '../lib/ids.js';
import { balanceRequired, formatUsd, SpendTracker, windowEnd } from './spend.js';

const ORG = 'org-1';
const KEY = 'key-1';
const USER = 'user-1';

// Sunday 2026-11-29 23:59 UTC: the day and the week end in a minute; the month on Tuesday.
const T0 = Date.parse('2026-11-29T23:59:00.000Z');

describe('SpendTracker', () => {
  let handle: DbHandle;
  let now: number;
  let spend: SpendTracker;

  beforeEach(async () => {
    handle = openDatabase('sqlite::memory:');
    await m0001.up(handle.db);
    await handle.db
      .insertInto('organizations')
      .values({ id: ORG, name: 'Org', created_at: new Date(T0).toISOString() })
      .execute();
    now = T0;
    spend = new SpendTracker(handle.db, { now: () => now });
  });
  afterEach(() => handle.close());

  const insert = (
    cost: number,
    at: string,
    o: { byok?: boolean; key?: string | null; user?: string | null; org?: string } = {},
  ) =>
    handle.db
      .insertInto('usage_events')
      .values({
        id: newId(),
        organization_id: o.org ?? ORG,
        workspace_id: 'ws',
        key_hash: o.key === undefined ? KEY : o.key,
        user_id: o.user === undefined ? USER : o.user,
        model: 'm',
        provider: 'p',
        cost_usd: cost,
        is_byok: o.byok ? 1 : 0,
        created_at: at,
      })
      .execute();
  const grant = (amount: number) =>
    handle.db
      .insertInto('credit_ledger')
      .values({
        id: newId(),
        organization_id: ORG,
        kind: 'grant',
        amount_usd: amount,
        note: null,
        created_at: new Date(now).toISOString(),
      })
      .execute();
  const record = (
    cost: number,
    at: number | string,
    o: { byok?: boolean; key?: string | null; user?: string | null } = {},
  ) =>
    spend.record({
      keyHash: o.key === undefined ? KEY : o.key,
      userId: o.user === undefined ? USER : o.user,
      organizationId: ORG,
      costUsd: cost,
      isByok: o.byok ?? false,
      at,
    });
  const all = async (scope: { keyHash: string } | { organizationId: string; userId: string }) => ({
    lifetime: await spend.spend(scope, 'lifetime'),
    daily: await spend.spend(scope, 'daily'),
    weekly: await spend.spend(scope, 'weekly'),
    monthly: await spend.spend(scope, 'monthly'),
  });

  it('seeds the windows of a key and of a user from usage_events, BYOK apart', async () => {
    await insert(1, '2026-10-15T00:00:00.000Z'); // last month
    await insert(2, '2026-11-10T00:00:00.000Z'); // this month, earlier week
    await insert(4, '2026-11-24T00:00:00.000Z'); // this week (Monday), earlier day
    await insert(8, '2026-11-29T10:00:00.000Z'); // today
    await insert(16, '2026-11-29T11:00:00.000Z', { byok: true });
    await insert(32, '2026-11-29T12:00:00.000Z', { key: 'other-key' }); // same user, other key
    await insert(64, '2026-11-29T12:00:00.000Z', { key: 'k3', org: 'org-2' }); // same user, other org

    expect(await all({ keyHash: KEY })).toEqual({
      lifetime: { paid: 15, byok: 16 },
      daily: { paid: 8, byok: 16 },
      weekly: { paid: 12, byok: 16 },
      monthly: { paid: 14, byok: 16 },
    });
    expect(await all({ organizationId: ORG, userId: USER })).toEqual({
      lifetime: { paid: 47, byok: 16 },
      daily: { paid: 40, byok: 16 },
      weekly: { paid: 44, byok: 16 },
      monthly: { paid: 46, byok: 16 },
    });
  });

  it('counts records at once and rolls windows over at UTC boundaries', async () => {
    await insert(1, '2026-11-29T10:00:00.000Z');
    expect((await spend.spend({ keyHash: KEY }, 'daily')).paid).toBe(1); // loaded
    record(0.5, now);
    record(0.25, now, { byok: true });
    expect(await all({ keyHash: KEY })).toEqual({
      lifetime: { paid: 1.5, byok: 0.25 },
      daily: { paid: 1.5, byok: 0.25 },
      weekly: { paid: 1.5, byok: 0.25 },
      monthly: { paid: 1.5, byok: 0.25 },
    });

    now = Date.parse('2026-11-30T00:00:00.000Z'); // Monday: new day and new week
    expect(await all({ keyHash: KEY })).toEqual({
      lifetime: { paid: 1.5, byok: 0.25 },
      daily: { paid: 0, byok: 0 },
      weekly: { paid: 0, byok: 0 },
      monthly: { paid: 1.5, byok: 0.25 },
    });
    record(2, now);
    now = Date.parse('2026-12-01T00:00:00.000Z'); // Tuesday the 1st: new day and new month
    expect(await all({ keyHash: KEY })).toEqual({
      lifetime: { paid: 3.5, byok: 0.25 },
      daily: { paid: 0, byok: 0 },
      weekly: { paid: 2, byok: 0 },
      monthly: { paid: 0, byok: 0 },
    });
    // A late record from yesterday counts in the week but not today.
    record(1, '2026-11-30T23:00:00.000Z');
    expect((await all({ keyHash: KEY })).daily.paid).toBe(0);
    expect((await all({ keyHash: KEY })).weekly.paid).toBe(3);
  });

  it('adds records the first load did not see, without counting written ones twice', async () => {
    // Written and recorded before the first use: the load sees the row; no double count.
    await insert(1, '2026-11-29T10:00:00.000Z');
    record(1, '2026-11-29T10:00:00.000Z');
    // Recorded before its row is written (the accounting writer batches): added on top.
    record(2, '2026-11-29T11:00:00.000Z');
    expect((await spend.spend({ keyHash: KEY }, 'daily')).paid).toBe(3);
    // When the row lands and the entry refreshes, it is counted once.
    await insert(2, '2026-11-29T11:00:00.000Z');
    now += 31_000;
    await spend.spend({ keyHash: KEY }, 'daily'); // stale: starts a background refresh
    await new Promise((r) => setTimeout(r, 20));
    expect((await spend.spend({ keyHash: KEY }, 'lifetime')).paid).toBe(3);
  });

  it('refreshes from the database after 30 s (spend recorded by other nodes)', async () => {
    expect((await spend.spend({ keyHash: KEY }, 'daily')).paid).toBe(0);
    await insert(5, '2026-11-29T23:59:10.000Z'); // another node's call
    now += 10_000;
    expect((await spend.spend({ keyHash: KEY }, 'daily')).paid).toBe(0); // fresh enough: memory only
    now += 21_000;
    await spend.spend({ keyHash: KEY }, 'daily'); // stale: serves the old value, refreshes behind
    await new Promise((r) => setTimeout(r, 20));
    expect((await spend.spend({ keyHash: KEY }, 'daily')).paid).toBe(5);
  });

  it('checks budgets per scope and window, BYOK only when included', async () => {
    await insert(3, '2026-11-29T10:00:00.000Z');
    await insert(2, '2026-11-29T10:00:00.000Z', { byok: true });
    await insert(10, '2026-11-02T10:00:00.000Z', { key: 'other-key' });
    const rule = (r: Partial<BudgetRule>): BudgetRule => ({
      guardrailId: 'g',
      guardrailName: 'team budget',
      limitUsd: 5,
      interval: 'daily',
      includeByok: false,
      scope: { keyHash: KEY },
      ...r,
    });
    const caller = { keyHash: KEY, organizationId: ORG };
    const check = (...budgets: BudgetRule[]) => spend.checkBudgets({ budgets }, caller);

    expect(await check()).toEqual({ ok: true });
    expect(await check(rule({}))).toEqual({ ok: true }); // 3 < 5
    expect(await check(rule({ includeByok: true }))).toEqual({
      ok: false,
      reason:
        'Budget of guardrail "team budget" exhausted: this API key spent $5.00 of its $5.00 limit today (UTC); it resets at 2026-11-30T00:00:00Z, BYOK included',
    });
    // The user's monthly spend includes the other key.
    expect(await check(rule({ scope: { userId: USER }, interval: 'monthly', limitUsd: 13 }))).toEqual({
      ok: false,
      reason:
        'Budget of guardrail "team budget" exhausted: this user spent $13.00 of its $13.00 limit this month (UTC); it resets at 2026-12-01T00:00:00Z',
    });
    expect(await check(rule({ interval: null, limitUsd: 3.5 }))).toEqual({ ok: true });
    record(0.5, now);
    expect(await check(rule({ interval: null, limitUsd: 3.5 }))).toEqual({
      ok: false,
      reason:
        'Budget of guardrail "team budget" exhausted: this API key spent $3.50 of its $3.50 limit in total',
    });
    // A zero budget refuses everything.
    expect((await check(rule({ scope: { keyHash: 'fresh' }, limitUsd: 0 }))).ok).toBe(false);
  });

  it('checks the key limit', async () => {
    await insert(4, '2026-11-29T10:00:00.000Z');
    await insert(1, '2026-11-29T10:00:00.000Z', { byok: true });
    const key = { hash: KEY, limit_usd: 5, limit_reset: 'weekly', include_byok_in_limit: 0 };
    expect(await spend.checkKeyLimit({ ...key, limit_usd: null })).toEqual({ ok: true });
    expect(await spend.checkKeyLimit(key)).toEqual({ ok: true });
    expect(await spend.checkKeyLimit({ ...key, include_byok_in_limit: 1 })).toEqual({
      ok: false,
      reason:
        'API key limit reached: spent $5.00 of its $5.00 limit this week (UTC, from Monday); it resets at 2026-11-30T00:00:00Z, BYOK included',
    });
    record(1, now);
    expect((await spend.checkKeyLimit(key)).ok).toBe(false);
  });

  it('keeps the organization balance: ledger − usage, records, creditsChanged; BYOK needs none', async () => {
    await grant(10);
    await insert(4, '2026-11-29T10:00:00.000Z');
    expect(await spend.balance(ORG)).toBe(6);
    record(6, now);
    expect(await spend.balance(ORG)).toBe(0);
    const refused = await spend.checkBalance(ORG);
    expect(refused.ok).toBe(false);
    // The refusal says what to run to add credits, for this organization.
    expect(!refused.ok && refused.reason).toMatch(
      /^Insufficient credits: the organization's balance is \$0\.00\. An operator adds credits with `POST \/api\/v1\/admin\/credits` \{"organization_id":"org-1","amount_usd":<USD>\} \(seen at once\) or `gatehouse credits add --org org-1 --amount <USD>`/,
    );
    expect(await spend.checkBalance(ORG, { byok: true })).toEqual({ ok: true });
    expect(balanceRequired(true)).toBe(false);
    expect(balanceRequired(false)).toBe(true);

    await grant(5); // written elsewhere: not seen until told or refreshed
    expect(await spend.balance(ORG)).toBe(0);
    spend.creditsChanged(ORG);
    // The recorded call's row is not written yet: it still counts after the reload.
    expect(await spend.balance(ORG)).toBe(5 + 10 - 4 - 6);
    expect(await spend.checkBalance(ORG)).toEqual({ ok: true });
    // A cost (a batch's estimate, a media price) must be covered, not only a positive balance.
    const short = await spend.checkBalance(ORG, { cost: { usd: 7.5, of: "this batch's estimated cost" } });
    expect(!short.ok && short.reason).toMatch(
      /^Insufficient credits: this batch's estimated cost is \$7\.50 and the organization's balance is \$5\.00\. /,
    );
    expect(await spend.checkBalance(ORG, { cost: { usd: 5, of: 'x' } })).toEqual({ ok: true });
  });

  it('refuses nothing for want of credits when credits are off', async () => {
    const off = new SpendTracker(handle.db, { now: () => now, credits: 'off' });
    expect(await off.balance(ORG)).toBe(0);
    expect(await off.checkBalance(ORG)).toEqual({ ok: true });
    expect(await off.checkBalance(ORG, { cost: { usd: 100, of: 'x' } })).toEqual({ ok: true });
  });
});

describe('helpers', () => {
  it('formats USD', () => {
    expect(formatUsd(5)).toBe('$5.00');
    expect(formatUsd(0.1 + 0.2)).toBe('$0.30');
    expect(formatUsd(0.000123)).toBe('$0.000123');
    expect(formatUsd(-1.5)).toBe('-$1.50');
  });

  it('ends windows at the next UTC day, Monday and 1st', () => {
    const wed = new Date('2026-12-30T12:00:00Z');
    expect(windowEnd('daily', wed).toISOString()).toBe('2026-12-31T00:00:00.000Z');
    expect(windowEnd('weekly', wed).toISOString()).toBe('2027-01-04T00:00:00.000Z');
    expect(windowEnd('monthly', wed).toISOString()).toBe('2027-01-01T00:00:00.000Z');
  });
});
