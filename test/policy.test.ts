import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../src/accounts/caller.js';
import { modelAllowed } from '../src/guardrails/policy.js';
import { defaultGuardrailId, newId } from '../src/lib/ids.js';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';

let seq = 0;

describe.each(databases)('effective policy, budgets and balance (%s)', (db) => {
  let gw: TestGateway;
  let mgmt: ReturnType<typeof client>;
  let memberId: string;
  let caller: Caller;
  let workspaceId: string;

  const guardrail = async (body: Record<string, unknown>) => {
    const res = await mgmt('POST', '/guardrails', body);
    expect(res.status, res.text).toBe(201);
    return res.body.data.id as string;
  };
  const assignKey = async (id: string, hash: string) =>
    expect((await mgmt('POST', `/guardrails/${id}/assignments/keys`, { key_hashes: [hash] })).status).toBe(
      200,
    );
  const assignMember = async (id: string, userId: string) =>
    expect(
      (await mgmt('POST', `/guardrails/${id}/assignments/members`, { member_user_ids: [userId] })).status,
    ).toBe(200);
  /** A new member of the organization and an API key created for them; returns the key's caller. */
  const memberKey = async () => {
    const user = await adminClient(gw.url)('POST', '/admin/users', {
      email: `policy-${db}-${++seq}-${Date.now()}@example.com`,
      organization_id: gw.organizationId,
      role: 'member',
    });
    expect(user.status).toBe(201);
    // Only the operator attributes a key to another user.
    const key = await adminClient(gw.url)('POST', '/admin/keys', {
      name: `k${seq}`,
      user_id: user.body.data.id,
    });
    expect(key.status, key.text).toBe(201);
    const c = await gw.services.keys.authenticate(key.body.key);
    expect(c?.userId).toBe(user.body.data.id);
    return c as Caller;
  };
  /** A usage_events row as the accounting writer writes it (`at` is also what it tells `record`). */
  const usage = (
    cost: number,
    o: { keyHash?: string | null; userId?: string | null; byok?: boolean; at?: string } = {},
  ) =>
    gw.services.db
      .insertInto('usage_events')
      .values({
        id: newId(),
        organization_id: gw.organizationId,
        workspace_id: workspaceId,
        key_hash: o.keyHash === undefined ? caller.keyHash : o.keyHash,
        user_id: o.userId === undefined ? memberId : o.userId,
        model: 'openai/gpt-4o',
        provider: 'openai',
        cost_usd: cost,
        is_byok: o.byok ? 1 : 0,
        created_at: o.at ?? new Date().toISOString(),
      })
      .execute();

  beforeAll(async () => {
    gw = await startTestGateway(db, { env: { GATEHOUSE_CREDITS: 'enforce' } });
    mgmt = client(gw.url, gw.managementKey);
    caller = await memberKey();
    memberId = caller.userId as string;
    workspaceId = caller.workspaceId;
  });
  afterAll(() => gw?.stop());

  it('combines the key guardrail, member guardrails and the materialised default guardrail', async () => {
    const policy = () => gw.services.policy.forKey(caller);
    expect((await policy()).guardrailIds).toEqual([]);

    const keyG = await guardrail({
      name: 'key policy',
      allowed_models: ['openai/gpt-4o', 'anthropic/claude-sonnet-4', 'google/gemini-2.5-pro'],
      allowed_providers: ['openai', 'anthropic', 'google-vertex'],
      limit_usd: 10,
      reset_interval: 'daily',
      include_byok_in_budgets: true,
      content_filter_builtins: [{ slug: 'email', action: 'redact' }],
    });
    const teamG = await guardrail({
      name: 'team budget',
      allowed_models: ['openai/gpt-4o', 'google/gemini-2.5-pro', 'mistralai/mistral-large'],
      ignored_providers: ['google-vertex'],
      enforce_zdr_google: true,
      enable_free_model_training: false,
      limit_usd: 25,
      reset_interval: 'monthly',
      content_filters: [{ pattern: 'project-[0-9]+', action: 'block', label: 'Codenames' }],
    });
    // A member guardrail of another workspace does not apply to keys of this one.
    const ws2 = await mgmt('POST', '/workspaces', { name: 'Other', slug: `other-${db}-${Date.now()}` });
    expect(ws2.status, ws2.text).toBe(201);
    const elsewhere = await guardrail({
      name: 'elsewhere',
      allowed_models: [],
      workspace_id: ws2.body.data.id,
    });
    await mgmt('POST', `/workspaces/${ws2.body.data.id}/members/add`, { user_ids: [memberId] });

    await assignKey(keyG, caller.keyHash);
    await assignMember(teamG, memberId);
    await assignMember(elsewhere, memberId);

    // Each write was seen at once (no waiting for the cache's TTL).
    let p = await policy();
    expect(p.guardrailIds).toEqual([keyG, teamG]);

    // Materialise the workspace's default guardrail with PATCH.
    const defaultId = defaultGuardrailId(workspaceId);
    const patched = await mgmt('PATCH', `/guardrails/${defaultId}`, {
      allowed_models: ['google/gemini-2.5-pro', 'openai/gpt-4o:free'],
      allowed_data_regions: ['europe'],
      limit_usd: 2,
      reset_interval: 'weekly',
    });
    expect(patched.status, patched.text).toBe(200);

    p = await policy();
    expect(p.guardrailIds).toEqual([keyG, teamG, defaultId]);
    expect(p.allowedModels?.sort()).toEqual(['google/gemini-2.5-pro', 'openai/gpt-4o:free']);
    expect(p.allowedProviders?.sort()).toEqual(['anthropic', 'google-vertex', 'openai']);
    expect(p.ignoredProviders).toEqual(['google-vertex']);
    expect(p.allowedDataRegions).toEqual(['europe']);
    expect(p.zdr).toEqual({ anthropic: false, google: true, openai: false, xai: false, other: false });
    expect(p.allowTraining).toEqual({ freeModels: false, paidModels: true });
    expect(p.budgets).toEqual([
      {
        guardrailId: keyG,
        guardrailName: 'key policy',
        limitUsd: 10,
        interval: 'daily',
        includeByok: true,
        scope: { keyHash: caller.keyHash },
      },
      {
        guardrailId: teamG,
        guardrailName: 'team budget',
        limitUsd: 25,
        interval: 'monthly',
        includeByok: false,
        scope: { userId: memberId },
      },
      {
        guardrailId: defaultId,
        guardrailName: 'Default guardrail',
        limitUsd: 2,
        interval: 'weekly',
        includeByok: false,
        scope: { keyHash: caller.keyHash },
      },
    ]);
    expect(p.contentFilters.map((f) => f.label)).toEqual(['Email addresses', 'Codenames']);
    expect(modelAllowed(p, 'openai/gpt-4o')).toEqual({
      ok: false,
      reason: 'Model openai/gpt-4o is not in the allowed models of guardrail "Default guardrail"',
    });
    expect(modelAllowed(p, 'openai/gpt-4o:free')).toEqual({ ok: true });
    expect(modelAllowed(p, 'mistralai/mistral-large').ok).toBe(false);

    // Cached: an edit behind the services' back is not seen until invalidated (or the TTL passes).
    expect(await policy()).toBe(p);
    await gw.services.db
      .updateTable('guardrails')
      .set({ allowed_data_regions: null })
      .where('id', '=', defaultId)
      .execute();
    expect((await policy()).allowedDataRegions).toEqual(['europe']);
    gw.services.policy.invalidate();
    expect((await policy()).allowedDataRegions).toBeNull();

    // PATCH of a guardrail is seen at once.
    expect((await mgmt('PATCH', `/guardrails/${teamG}`, { allowed_models: null, name: 'team' })).status).toBe(
      200,
    );
    p = await policy();
    expect(p.allowedModels?.sort()).toEqual(['google/gemini-2.5-pro', 'openai/gpt-4o:free']);
    expect(p.budgets.map((b) => b.guardrailName)).toEqual(['key policy', 'team', 'Default guardrail']);

    // So is an unassignment, of the key and of the member.
    expect(
      (await mgmt('POST', `/guardrails/${keyG}/assignments/keys/remove`, { key_hashes: [caller.keyHash] }))
        .status,
    ).toBe(200);
    p = await policy();
    expect(p.guardrailIds).toEqual([teamG, defaultId]);
    expect(p.allowedProviders).toBeNull();
    expect(
      (await mgmt('POST', `/guardrails/${teamG}/assignments/members/remove`, { member_user_ids: [memberId] }))
        .status,
    ).toBe(200);
    expect((await policy()).guardrailIds).toEqual([defaultId]);

    // And a deletion.
    expect((await mgmt('DELETE', `/guardrails/${defaultId}`)).status).toBe(200);
    expect((await policy()).guardrailIds).toEqual([]);
  });

  it('checks budgets from usage_events and recorded calls', async () => {
    const c = await memberKey();
    const userId = c.userId as string;
    const keyG = await guardrail({ name: 'key cap', limit_usd: 1, reset_interval: 'daily' });
    const userG = await guardrail({
      name: 'user cap',
      limit_usd: 3,
      reset_interval: 'monthly',
      include_byok_in_budgets: true,
    });
    await assignKey(keyG, c.keyHash);
    await assignMember(userG, userId);
    const policy = await gw.services.policy.forKey(c);
    expect(policy.budgets.map((b) => b.scope)).toEqual([{ keyHash: c.keyHash }, { userId }]);

    // Spend already in the database: 0.75 on this key, 1 BYOK on another key of the same user.
    await usage(0.75, { keyHash: c.keyHash, userId });
    await usage(1, { keyHash: 'another-key', userId, byok: true });
    const spend = gw.services.spend;
    expect(await spend.checkBudgets(policy, c)).toEqual({ ok: true });
    expect(await spend.spend({ organizationId: gw.organizationId, userId }, 'monthly')).toEqual({
      paid: 0.75,
      byok: 1,
    });

    // A billed call, as the accounting writer reports it: the key's daily cap is reached.
    const at = new Date().toISOString();
    await usage(0.25, { keyHash: c.keyHash, userId, at });
    spend.record({
      keyHash: c.keyHash,
      userId,
      organizationId: gw.organizationId,
      costUsd: 0.25,
      isByok: false,
      at,
    });
    const refused = await spend.checkBudgets(policy, c);
    expect(refused.ok).toBe(false);
    expect(!refused.ok && refused.reason).toMatch(
      /^Budget of guardrail "key cap" exhausted: this API key spent \$1\.00 of its \$1\.00 limit today \(UTC\); it resets at /,
    );

    // Without the key cap, the user's cap (BYOK included) is next: 2 of 3, then 3 of 3.
    expect(
      (await mgmt('POST', `/guardrails/${keyG}/assignments/keys/remove`, { key_hashes: [c.keyHash] })).status,
    ).toBe(200);
    const userOnly = await gw.services.policy.forKey(c);
    expect(await spend.checkBudgets(userOnly, c)).toEqual({ ok: true });
    const at2 = new Date().toISOString();
    await usage(1, { keyHash: 'third-key', userId, byok: true, at: at2 });
    spend.record({
      keyHash: 'third-key',
      userId,
      organizationId: gw.organizationId,
      costUsd: 1,
      isByok: true,
      at: at2,
    });
    const userRefused = await spend.checkBudgets(userOnly, c);
    expect(!userRefused.ok && userRefused.reason).toMatch(
      /^Budget of guardrail "user cap" exhausted: this user spent \$3\.00 of its \$3\.00 limit this month \(UTC\); .*, BYOK included$/,
    );

    // The key's own limit uses the same counters.
    expect(
      await spend.checkKeyLimit({
        hash: c.keyHash,
        limit_usd: 2,
        limit_reset: null,
        include_byok_in_limit: 0,
      }),
    ).toEqual({
      ok: true,
    });
    expect(
      (
        await spend.checkKeyLimit({
          hash: c.keyHash,
          limit_usd: 1,
          limit_reset: 'daily',
          include_byok_in_limit: 0,
        })
      ).ok,
    ).toBe(false);
  });

  it('keeps the balance from ledger grants and usage; a grant is seen at once', async () => {
    const spend = gw.services.spend;
    const admin = adminClient(gw.url);
    const start = await spend.balance(gw.organizationId);
    const used = await gw.services.usage.totalForOrganization(gw.organizationId);
    expect(start).toBeCloseTo(0 - used, 9);
    expect((await spend.checkBalance(gw.organizationId)).ok).toBe(false);
    expect(await spend.checkBalance(gw.organizationId, { byok: true })).toEqual({ ok: true });

    expect(
      (await admin('POST', '/admin/credits', { organization_id: gw.organizationId, amount_usd: 20 })).status,
    ).toBe(201);
    expect(await spend.balance(gw.organizationId)).toBeCloseTo(20 - used, 9);
    expect(await spend.checkBalance(gw.organizationId)).toEqual({ ok: true });

    // Calls spend it down; the balance agrees with the ledger service's.
    const big = 20 - used;
    const at = new Date().toISOString();
    await usage(big, { keyHash: caller.keyHash, at });
    spend.record({
      keyHash: caller.keyHash,
      userId: memberId,
      organizationId: gw.organizationId,
      costUsd: big,
      isByok: false,
      at,
    });
    expect(await spend.balance(gw.organizationId)).toBeCloseTo(0, 9);
    expect(await gw.services.credits.balance(gw.organizationId)).toBeCloseTo(0, 9);
    expect((await spend.checkBalance(gw.organizationId)).ok).toBe(false);
  });
});
