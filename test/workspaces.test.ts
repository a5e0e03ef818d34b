import { randomUUID } from 'node:crypto';
import { OpenRouter } from '@openrouter/sdk';
import {
  BadRequestResponseError,
  NotFoundResponseError,
  OpenRouterDefaultError,
} from '@openrouter/sdk/models/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultGuardrailId } from '../src/lib/ids.js';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client, makeOrganization } from './support/http.js';

let seq = 0;
const uniqueSlug = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++seq}`;

describe.each(databases)('Workspaces, members and budgets (%s)', (db) => {
  let gw: TestGateway;
  let sdk: OpenRouter;
  let call: ReturnType<typeof client>;

  const newSdk = (key: string) =>
    new OpenRouter({ serverURL: `${gw.url}/api/v1`, apiKey: key, retryConfig: { strategy: 'none' } });

  /** Creates a user in the gateway's organization; returns the user id. */
  async function newUser(role: 'owner' | 'admin' | 'member', organizationId = gw.organizationId) {
    const res = await adminClient(gw.url)('POST', '/admin/users', {
      email: `${role}-${randomUUID()}@example.com`,
      organization_id: organizationId,
      role,
    });
    expect(res.status).toBe(201);
    return res.body.data.id as string;
  }

  async function newWorkspace(prefix = 'ws') {
    const slug = uniqueSlug(prefix);
    const { data } = await sdk.workspaces.create({ createWorkspaceRequest: { name: `WS ${slug}`, slug } });
    return data;
  }

  beforeAll(async () => {
    gw = await startTestGateway(db);
    sdk = newSdk(gw.managementKey);
    call = client(gw.url, gw.managementKey);
  });
  afterAll(() => gw?.stop());

  it('creates, gets (by id and slug), updates and deletes a workspace through the SDK', async () => {
    const slug = uniqueSlug('research');
    const created = await sdk.workspaces.create({
      createWorkspaceRequest: {
        name: '  Research  ',
        slug,
        description: 'R&D',
        defaultTextModel: 'openai/gpt-4o',
        defaultProviderSort: 'price',
        disabledServerTools: ['openrouter:web_search', 'openrouter:web_search'],
        ioLoggingApiKeyIds: [3, 1],
        ioLoggingSamplingRate: 0.5,
        isDataDiscountLoggingEnabled: true,
      },
    });
    const ws = created.data;
    expect(ws).toMatchObject({
      name: 'Research',
      slug,
      description: 'R&D',
      defaultTextModel: 'openai/gpt-4o',
      defaultImageModel: null,
      defaultProviderSort: 'price',
      disabledServerTools: ['openrouter:web_search'],
      ioLoggingApiKeyIds: [3, 1],
      ioLoggingSamplingRate: 0.5,
      isDataDiscountLoggingEnabled: true,
      isObservabilityBroadcastEnabled: false,
      isObservabilityIoLoggingEnabled: false,
      includeByokInBudgets: false,
      createdBy: gw.ownerUserId,
    });
    expect(ws.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(ws.defaultGuardrailId).toBe(defaultGuardrailId(ws.id));
    expect(ws.updatedAt).toBe(ws.createdAt);

    // The raw wire object: is_default, and include_byok_in_budgets always a boolean (never null).
    const raw = await call('GET', `/workspaces/${slug}`);
    expect(raw.status).toBe(200);
    expect(raw.body.data.is_default).toBe(false);
    expect(raw.body.data.include_byok_in_budgets).toBe(false);
    expect(Object.keys(raw.body.data).sort()).toEqual(
      [
        'id',
        'name',
        'slug',
        'description',
        'is_default',
        'created_at',
        'updated_at',
        'created_by',
        'default_guardrail_id',
        'default_text_model',
        'default_image_model',
        'default_provider_sort',
        'disabled_server_tools',
        'io_logging_api_key_ids',
        'io_logging_sampling_rate',
        'is_data_discount_logging_enabled',
        'is_observability_broadcast_enabled',
        'is_observability_io_logging_enabled',
        'include_byok_in_budgets',
        'content_logging',
        'content_retention_days',
        'video_callback_url',
        'has_webhook_secret',
      ].sort(),
    );

    expect((await sdk.workspaces.get({ id: ws.id })).data).toEqual(ws);
    expect((await sdk.workspaces.get({ id: slug })).data).toEqual(ws);
    expect((await sdk.workspaces.get({ id: ws.id.toUpperCase() })).data.id).toBe(ws.id);

    // The creator is the first member, with their organization role (owner → admin).
    const members = await sdk.workspaces.listMembers({ id: ws.id });
    expect(members.result.totalCount).toBe(1);
    expect(members.result.data[0]).toMatchObject({
      userId: gw.ownerUserId,
      workspaceId: ws.id,
      role: 'admin',
    });

    const newSlug = uniqueSlug('renamed');
    const updated = await sdk.workspaces.update({
      id: slug,
      updateWorkspaceRequest: {
        name: 'Renamed',
        slug: newSlug,
        description: null,
        defaultProviderSort: null,
        disabledServerTools: [],
        ioLoggingApiKeyIds: null,
        isObservabilityBroadcastEnabled: true,
      },
    });
    expect(updated.data).toMatchObject({
      id: ws.id,
      name: 'Renamed',
      slug: newSlug,
      description: null,
      defaultTextModel: 'openai/gpt-4o',
      defaultProviderSort: null,
      disabledServerTools: null,
      ioLoggingApiKeyIds: null,
      ioLoggingSamplingRate: 0.5,
      isDataDiscountLoggingEnabled: true,
      isObservabilityBroadcastEnabled: true,
    });
    // null also clears the server-tool list; an empty patch changes nothing but updated_at.
    await sdk.workspaces.update({
      id: ws.id,
      updateWorkspaceRequest: { disabledServerTools: ['openrouter:bash'] },
    });
    const cleared = await call('PATCH', `/workspaces/${ws.id}`, { disabled_server_tools: null });
    expect(cleared.body.data.disabled_server_tools).toBeNull();
    const same = await call('PATCH', `/workspaces/${ws.id}`, {});
    expect(same.status).toBe(200);
    expect(same.body.data.name).toBe('Renamed');
    // The old slug no longer resolves.
    expect((await call('GET', `/workspaces/${slug}`)).status).toBe(404);

    expect(await sdk.workspaces.delete({ id: newSlug })).toEqual({ deleted: true });
    await expect(sdk.workspaces.get({ id: ws.id })).rejects.toBeInstanceOf(NotFoundResponseError);
    await expect(sdk.workspaces.delete({ id: ws.id })).rejects.toBeInstanceOf(NotFoundResponseError);
  });

  it('validates names, slugs and settings, and rejects a duplicate slug with 409', async () => {
    const ok = { name: 'x', slug: uniqueSlug('valid') };
    const bad = [
      {},
      { name: 'x' },
      { slug: uniqueSlug('noname') },
      { name: '', slug: uniqueSlug('empty') },
      { name: '   ', slug: uniqueSlug('blank') },
      { name: 'x', slug: 'Upper' },
      { name: 'x', slug: 'a--b' },
      { name: 'x', slug: '-a' },
      { name: 'x', slug: 'a-' },
      { name: 'x', slug: 'a_b' },
      { name: 'x', slug: 'a b' },
      { name: 'x', slug: '' },
      { name: 'x', slug: 'a'.repeat(65) },
      { name: 'x', slug: randomUUID() },
      { ...ok, default_provider_sort: 'fastest' },
      { ...ok, io_logging_sampling_rate: 0 },
      { ...ok, io_logging_sampling_rate: 1.5 },
      { ...ok, io_logging_api_key_ids: [1.5] },
      { ...ok, disabled_server_tools: [''] },
      { ...ok, is_data_discount_logging_enabled: 'maybe' },
    ];
    for (const body of bad) {
      const res = await call('POST', '/workspaces', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body).toEqual({ error: { code: 400, message: expect.any(String) } });
    }
    await expect(
      sdk.workspaces.create({ createWorkspaceRequest: { name: 'x', slug: 'Not A Slug' } }),
    ).rejects.toBeInstanceOf(BadRequestResponseError);

    // Boundary values are accepted.
    const edge = await call('POST', '/workspaces', {
      name: 'edge',
      slug: 'a'.repeat(64),
      io_logging_sampling_rate: 0.0001,
      default_provider_sort: 'exacto',
    });
    expect(edge.status).toBe(201);
    expect(edge.body.data.io_logging_sampling_rate).toBe(0.0001);
    const one = await call('POST', '/workspaces', {
      name: 'one',
      slug: uniqueSlug('one'),
      io_logging_sampling_rate: 1,
    });
    expect(one.status).toBe(201);

    const first = await newWorkspace('dup');
    const dup = await call('POST', '/workspaces', { name: 'again', slug: first.slug });
    expect(dup.status).toBe(409);
    expect(dup.body.error.message).toContain(first.slug);
    // The default workspace's slug is taken too.
    expect((await call('POST', '/workspaces', { name: 'd', slug: 'default' })).status).toBe(409);
    // The SDK does not list 409 for create: it surfaces as its default error, still with the status.
    const sdkDup = await sdk.workspaces
      .create({ createWorkspaceRequest: { name: 'again', slug: first.slug } })
      .catch((e) => e);
    expect(sdkDup).toBeInstanceOf(OpenRouterDefaultError);
    expect(sdkDup.statusCode).toBe(409);

    const second = await newWorkspace('dup2');
    expect((await call('PATCH', `/workspaces/${second.id}`, { slug: first.slug })).status).toBe(409);
    expect((await call('PATCH', `/workspaces/${second.id}`, { slug: 'BAD' })).status).toBe(400);
    expect((await call('PATCH', `/workspaces/${second.id}`, { name: '' })).status).toBe(400);
    expect((await call('PATCH', `/workspaces/${second.id}`, { name: ' ' })).status).toBe(400);
    expect((await call('PATCH', `/workspaces/${second.id}`, { io_logging_sampling_rate: 2 })).status).toBe(
      400,
    );
    // Re-sending its own slug is not a conflict.
    expect((await call('PATCH', `/workspaces/${second.id}`, { slug: second.slug })).status).toBe(200);
    expect((await call('PATCH', `/workspaces/${randomUUID()}`, { name: 'x' })).status).toBe(404);
    expect((await call('PATCH', '/workspaces/no-such-slug', { name: 'x' })).status).toBe(404);
  });

  it('needs confirmation to delete the default workspace', async () => {
    const list = await sdk.workspaces.list({});
    const def = list.result.data[0]!;
    expect(def.slug).toBe('default');
    expect((await call('GET', '/workspaces/default')).body.data.is_default).toBe(true);

    for (const q of ['', '?confirm_default_workspace_deletion=false']) {
      const res = await call('DELETE', `/workspaces/${def.id}${q}`);
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(/confirm_default_workspace_deletion/);
    }
    await expect(sdk.workspaces.delete({ id: def.id })).rejects.toBeInstanceOf(BadRequestResponseError);
    // Confirmed, it is still blocked here by the bootstrap keys that live in it.
    const confirmed = await call('DELETE', `/workspaces/${def.id}?confirm_default_workspace_deletion=true`);
    expect(confirmed.status).toBe(400);
    expect(confirmed.body.error.message).toMatch(/active API key/);
    expect((await call('GET', `/workspaces/${def.id}`)).status).toBe(200);
    // The confirmation is ignored for other workspaces.
    const other = await newWorkspace('confirm');
    expect(
      (await call('DELETE', `/workspaces/${other.id}?confirm_default_workspace_deletion=false`)).status,
    ).toBe(200);
  });

  it('refuses to delete a workspace with active keys, then deletes it with its members and budgets', async () => {
    const ws = await newWorkspace('keys');
    const member = await newUser('member');
    await sdk.workspaces.bulkAddMembers({ id: ws.id, bulkAddWorkspaceMembersRequest: { userIds: [member] } });
    await sdk.workspaces.setBudget({
      workspaceRef: ws.id,
      interval: 'monthly',
      upsertWorkspaceBudgetRequest: { limitUsd: 10 },
    });
    const key = await call('POST', '/keys', { name: 'in-ws', workspace_id: ws.id });
    expect(key.status).toBe(201);
    expect(key.body.data.workspace_id).toBe(ws.id);
    const hash = key.body.data.hash as string;

    const blocked = await call('DELETE', `/workspaces/${ws.id}`);
    expect(blocked.status).toBe(400);
    expect(blocked.body.error.message).toMatch(/1 active API key/);
    await expect(sdk.workspaces.delete({ id: ws.slug })).rejects.toBeInstanceOf(BadRequestResponseError);

    expect((await call('PATCH', `/keys/${hash}`, { disabled: true })).status).toBe(200);
    expect(await sdk.workspaces.delete({ id: ws.slug })).toEqual({ deleted: true });
    expect((await call('GET', `/workspaces/${ws.id}`)).status).toBe(404);
    expect((await call('GET', `/keys/${hash}`)).status).toBe(404);
    expect((await call('GET', `/workspaces/${ws.id}/members`)).status).toBe(404);
    expect((await call('GET', `/workspaces/${ws.id}/budgets`)).status).toBe(404);

    // The slug is free again; the new workspace starts with no budgets and only its creator.
    const again = await sdk.workspaces.create({ createWorkspaceRequest: { name: 'again', slug: ws.slug } });
    expect(again.data.id).not.toBe(ws.id);
    expect((await sdk.workspaces.listBudgets({ workspaceRef: ws.slug })).data).toEqual([]);
    const members = await sdk.workspaces.listMembers({ id: ws.slug });
    expect(members.result.data.map((m) => m.userId)).toEqual([gw.ownerUserId]);
  });

  it('adds and removes members with counts, copying the organization role', async () => {
    const ws = await newWorkspace('members');
    const alice = await newUser('admin');
    const bob = await newUser('member');
    const carol = await newUser('member');
    const other = await makeOrganization(gw.url, `Stranger ${db}`);

    const added = await sdk.workspaces.bulkAddMembers({
      id: ws.id,
      bulkAddWorkspaceMembersRequest: { userIds: [alice, bob] },
    });
    expect(added.addedCount).toBe(2);
    expect(added.data.map((m) => [m.userId, m.role, m.workspaceId]).sort()).toEqual(
      [
        [alice, 'admin', ws.id],
        [bob, 'member', ws.id],
      ].sort(),
    );
    // Already-members count 0; duplicates in one call count once.
    const more = await sdk.workspaces.bulkAddMembers({
      id: ws.slug,
      bulkAddWorkspaceMembersRequest: { userIds: [bob, carol, carol] },
    });
    expect(more.addedCount).toBe(1);
    expect(more.data.map((m) => m.userId)).toEqual([carol]);
    const none = await sdk.workspaces.bulkAddMembers({
      id: ws.id,
      bulkAddWorkspaceMembersRequest: { userIds: [alice] },
    });
    expect(none).toEqual({ addedCount: 0, data: [] });

    // Users outside the organization: 400 naming them, and nothing changes.
    const dave = await newUser('member');
    const stranger = randomUUID();
    const rejected = await call('POST', `/workspaces/${ws.id}/members/add`, {
      user_ids: [dave, other.userId, stranger],
    });
    expect(rejected.status).toBe(400);
    expect(rejected.body.error.message).toContain(other.userId);
    expect(rejected.body.error.message).toContain(stranger);
    expect(rejected.body.error.message).not.toContain(dave);
    await expect(
      sdk.workspaces.bulkAddMembers({ id: ws.id, bulkAddWorkspaceMembersRequest: { userIds: [stranger] } }),
    ).rejects.toBeInstanceOf(BadRequestResponseError);

    const listed = await sdk.workspaces.listMembers({ id: ws.id });
    expect(listed.result.totalCount).toBe(4);
    expect(listed.result.data.map((m) => m.userId).sort()).toEqual(
      [gw.ownerUserId, alice, bob, carol].sort(),
    );

    // Body validation.
    for (const body of [{}, { user_ids: [] }, { user_ids: [''] }, { user_ids: [{}] }]) {
      expect((await call('POST', `/workspaces/${ws.id}/members/add`, body)).status).toBe(400);
      expect((await call('POST', `/workspaces/${ws.id}/members/remove`, body)).status).toBe(400);
    }

    // A member with an active key in the workspace cannot be removed.
    // Only the operator attributes a key to another user.
    const key = await adminClient(gw.url)('POST', '/admin/keys', {
      name: 'bob-key',
      workspace_id: ws.id,
      user_id: bob,
    });
    expect(key.status).toBe(201);
    const blocked = await call('POST', `/workspaces/${ws.id}/members/remove`, { user_ids: [alice, bob] });
    expect(blocked.status).toBe(400);
    expect(blocked.body.error.message).toContain(bob);
    expect(blocked.body.error.message).not.toContain(alice);
    expect((await sdk.workspaces.listMembers({ id: ws.id })).result.totalCount).toBe(4);

    await call('PATCH', `/keys/${key.body.data.hash}`, { disabled: true });
    const removed = await sdk.workspaces.bulkRemoveMembers({
      id: ws.id,
      bulkRemoveWorkspaceMembersRequest: { userIds: [alice, bob, stranger, dave] },
    });
    expect(removed).toEqual({ removedCount: 2 });
    const again = await sdk.workspaces.bulkRemoveMembers({
      id: ws.id,
      bulkRemoveWorkspaceMembersRequest: { userIds: [alice] },
    });
    expect(again.removedCount).toBe(0);
    const after = await sdk.workspaces.listMembers({ id: ws.id });
    expect(after.result.data.map((m) => m.userId).sort()).toEqual([gw.ownerUserId, carol].sort());

    // Pagination of members.
    const page = await call('GET', `/workspaces/${ws.id}/members?offset=1&limit=1`);
    expect(page.body.total_count).toBe(2);
    expect(page.body.data).toHaveLength(1);
    expect(page.body.data[0].user_id).toBe(after.result.data[1]!.userId);
    expect((await call('GET', `/workspaces/${ws.id}/members?offset=5`)).body).toEqual({
      data: [],
      total_count: 2,
    });
    expect((await call('GET', `/workspaces/${ws.id}/members?limit=0`)).status).toBe(400);
    expect((await call('GET', `/workspaces/${ws.id}/members?limit=101`)).status).toBe(400);
  });

  it('lists every organization member in the default workspace and never removes them from it', async () => {
    const alice = await newUser('admin');
    const bob = await newUser('member');
    const orgMembers = await sdk.organization.listMembers({ limit: 100 });
    const byId = new Map(orgMembers.result.data.map((m) => [m.id, m]));

    const members = await sdk.workspaces.listMembers({ id: 'default', limit: 100 });
    expect(members.result.totalCount).toBe(orgMembers.result.totalCount);
    expect(members.result.data.map((m) => m.userId).sort()).toEqual([...byId.keys()].sort());
    const def = (await sdk.workspaces.get({ id: 'default' })).data;
    for (const m of members.result.data) {
      expect(m.workspaceId).toBe(def.id);
      expect(m.role).toBe(byId.get(m.userId)!.role === 'org:admin' ? 'admin' : 'member');
    }
    const roleOf = (id: string) => members.result.data.find((m) => m.userId === id)?.role;
    expect(roleOf(gw.ownerUserId)).toBe('admin');
    expect(roleOf(alice)).toBe('admin');
    expect(roleOf(bob)).toBe('member');
    // Synthesised ids are stable.
    const again = await sdk.workspaces.listMembers({ id: def.id, limit: 100 });
    expect(again.result.data).toEqual(members.result.data);

    const add = await sdk.workspaces.bulkAddMembers({
      id: def.id,
      bulkAddWorkspaceMembersRequest: { userIds: [alice, bob] },
    });
    expect(add).toEqual({ addedCount: 0, data: [] });
    expect(
      (await call('POST', `/workspaces/${def.id}/members/add`, { user_ids: [randomUUID()] })).status,
    ).toBe(400);
    const remove = await call('POST', '/workspaces/default/members/remove', { user_ids: [bob] });
    expect(remove.status).toBe(400);
    expect(remove.body.error.message).toMatch(/default workspace/);
    await expect(
      sdk.workspaces.bulkRemoveMembers({ id: def.id, bulkRemoveWorkspaceMembersRequest: { userIds: [bob] } }),
    ).rejects.toBeInstanceOf(BadRequestResponseError);
  });

  it('stores workspace budgets: upsert, get, list, delete, strict ordering and the BYOK flag', async () => {
    const ws = await newWorkspace('budgets');
    const empty = await sdk.workspaces.listBudgets({ workspaceRef: ws.id });
    expect(empty).toEqual({ data: [], includeByokInBudgets: false });

    const monthly = await sdk.workspaces.setBudget({
      workspaceRef: ws.id,
      interval: 'monthly',
      upsertWorkspaceBudgetRequest: { limitUsd: 100 },
    });
    expect(monthly.data).toMatchObject({ workspaceId: ws.id, limitUsd: 100, resetInterval: 'monthly' });
    expect(monthly.includeByokInBudgets).toBe(false);
    const lifetime = await sdk.workspaces.setBudget({
      workspaceRef: ws.slug,
      interval: 'lifetime',
      upsertWorkspaceBudgetRequest: { limitUsd: 1000, includeByokInBudgets: true },
    });
    expect(lifetime.data).toMatchObject({ limitUsd: 1000, resetInterval: null });
    expect(lifetime.includeByokInBudgets).toBe(true);
    await sdk.workspaces.setBudget({
      workspaceRef: ws.id,
      interval: 'weekly',
      upsertWorkspaceBudgetRequest: { limitUsd: 50 },
    });
    await sdk.workspaces.setBudget({
      workspaceRef: ws.id,
      interval: 'daily',
      upsertWorkspaceBudgetRequest: { limitUsd: 10.5 },
    });

    const listed = await sdk.workspaces.listBudgets({ workspaceRef: ws.slug });
    expect(listed.includeByokInBudgets).toBe(true);
    expect(listed.data.map((b) => [b.resetInterval, b.limitUsd])).toEqual([
      ['daily', 10.5],
      ['weekly', 50],
      ['monthly', 100],
      [null, 1000],
    ]);
    const weekly = await sdk.workspaces.getBudget({ workspaceRef: ws.id, interval: 'weekly' });
    expect(weekly).toMatchObject({
      data: { limitUsd: 50, resetInterval: 'weekly' },
      includeByokInBudgets: true,
    });
    expect((await sdk.workspaces.get({ id: ws.id })).data.includeByokInBudgets).toBe(true);

    // Upsert keeps the budget's id and created_at; omitting the flag leaves it unchanged.
    const raised = await sdk.workspaces.setBudget({
      workspaceRef: ws.id,
      interval: 'monthly',
      upsertWorkspaceBudgetRequest: { limitUsd: 80 },
    });
    expect(raised.data.id).toBe(monthly.data.id);
    expect(raised.data.createdAt).toBe(monthly.data.createdAt);
    expect(raised.data.limitUsd).toBe(80);
    expect(raised.includeByokInBudgets).toBe(true);

    // Ordering: lifetime > monthly > weekly > daily, strictly, among those that exist.
    const violations = [
      ['daily', 50],
      ['daily', 60],
      ['weekly', 80],
      ['weekly', 5],
      ['monthly', 1000],
      ['monthly', 50],
      ['lifetime', 80],
    ] as const;
    for (const [interval, limit_usd] of violations) {
      const res = await call('PUT', `/workspaces/${ws.id}/budgets/${interval}`, {
        limit_usd,
        include_byok_in_budgets: false,
      });
      expect(res.status, `${interval} ${limit_usd}`).toBe(400);
      expect(res.body.error.message).toMatch(/strictly decrease/);
    }
    await expect(
      sdk.workspaces.setBudget({
        workspaceRef: ws.id,
        interval: 'daily',
        upsertWorkspaceBudgetRequest: { limitUsd: 500 },
      }),
    ).rejects.toBeInstanceOf(BadRequestResponseError);
    // Failed writes changed nothing, not even the flag sent with them.
    const unchanged = await call('GET', `/workspaces/${ws.id}/budgets`);
    expect(unchanged.body.include_byok_in_budgets).toBe(true);
    expect(unchanged.body.data.map((b: any) => b.limit_usd)).toEqual([10.5, 50, 80, 1000]);

    // The flag can be switched off with a valid write.
    const off = await call('PUT', `/workspaces/${ws.id}/budgets/daily`, {
      limit_usd: 20,
      include_byok_in_budgets: false,
    });
    expect(off.status).toBe(200);
    expect(off.body.include_byok_in_budgets).toBe(false);
    expect((await call('GET', `/workspaces/${ws.id}`)).body.data.include_byok_in_budgets).toBe(false);

    // Body and interval validation.
    for (const body of [{}, { limit_usd: 0 }, { limit_usd: -1 }, { limit_usd: 'ten' }, { limit_usd: null }]) {
      expect((await call('PUT', `/workspaces/${ws.id}/budgets/monthly`, body)).status).toBe(400);
    }
    for (const [method, body] of [['GET'], ['PUT', { limit_usd: 1 }], ['DELETE']] as const) {
      const res = await call(method, `/workspaces/${ws.id}/budgets/hourly`, body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: { code: 400, message: expect.any(String) } });
    }

    expect(await sdk.workspaces.deleteBudget({ workspaceRef: ws.id, interval: 'weekly' })).toEqual({
      deleted: true,
    });
    await expect(
      sdk.workspaces.getBudget({ workspaceRef: ws.id, interval: 'weekly' }),
    ).rejects.toBeInstanceOf(NotFoundResponseError);
    await expect(
      sdk.workspaces.deleteBudget({ workspaceRef: ws.id, interval: 'weekly' }),
    ).rejects.toBeInstanceOf(NotFoundResponseError);
    // With weekly gone, a daily limit between the old weekly and monthly is fine.
    const daily = await call('PUT', `/workspaces/${ws.slug}/budgets/daily`, { limit_usd: 60 });
    expect(daily.status).toBe(200);
    expect((await sdk.workspaces.listBudgets({ workspaceRef: ws.id })).data).toHaveLength(3);

    // Unknown workspaces are 404 on every budget route.
    for (const ref of [randomUUID(), 'no-such-workspace']) {
      expect((await call('GET', `/workspaces/${ref}/budgets`)).status).toBe(404);
      expect((await call('GET', `/workspaces/${ref}/budgets/daily`)).status).toBe(404);
      expect((await call('PUT', `/workspaces/${ref}/budgets/daily`, { limit_usd: 1 })).status).toBe(404);
      expect((await call('DELETE', `/workspaces/${ref}/budgets/daily`)).status).toBe(404);
    }
  });

  it('paginates GET /workspaces (offset/limit, total_count, oldest first)', async () => {
    for (let i = 0; i < 3; i++) await newWorkspace('page');
    const all = await call('GET', '/workspaces?limit=100');
    expect(all.status).toBe(200);
    const total = all.body.total_count as number;
    expect(total).toBeGreaterThanOrEqual(4);
    expect(all.body.data).toHaveLength(total);
    expect(all.body.data[0].is_default).toBe(true);
    const created = all.body.data.map((w: any) => w.created_at);
    expect([...created].sort()).toEqual(created);

    const one = await call('GET', '/workspaces?offset=1&limit=1');
    expect(one.body).toEqual({ data: [all.body.data[1]], total_count: total });
    expect((await call('GET', `/workspaces?offset=${total}`)).body).toEqual({ data: [], total_count: total });
    expect((await call('GET', '/workspaces?offset=100000')).body.data).toEqual([]);
    expect((await call('GET', '/workspaces')).body.data).toHaveLength(Math.min(total, 50));
    for (const q of ['limit=0', 'limit=101', 'offset=-1', 'limit=abc', 'limit=1.5']) {
      const res = await call('GET', `/workspaces?${q}`);
      expect(res.status, q).toBe(400);
      expect(res.body.error.code).toBe(400);
    }

    // The SDK's iterator walks every page.
    const ids: string[] = [];
    for await (const page of await sdk.workspaces.list({ limit: 1 })) {
      ids.push(...page.result.data.map((w) => w.id));
    }
    expect(ids).toEqual(all.body.data.map((w: any) => w.id));
  });

  it("never shows one organization another's workspaces (404 by id and slug)", async () => {
    const other = await makeOrganization(gw.url, `Isolated ${db}`);
    const theirs = client(gw.url, other.managementKey);
    const theirSdk = newSdk(other.managementKey);
    const ws = await newWorkspace('private');
    const member = await newUser('member');
    await sdk.workspaces.bulkAddMembers({ id: ws.id, bulkAddWorkspaceMembersRequest: { userIds: [member] } });
    await sdk.workspaces.setBudget({
      workspaceRef: ws.id,
      interval: 'monthly',
      upsertWorkspaceBudgetRequest: { limitUsd: 5 },
    });
    const def = (await sdk.workspaces.get({ id: 'default' })).data;

    for (const ref of [ws.id, ws.slug, def.id]) {
      const routes = [
        ['GET', `/workspaces/${ref}`],
        ['PATCH', `/workspaces/${ref}`, { name: 'hijacked' }],
        ['DELETE', `/workspaces/${ref}?confirm_default_workspace_deletion=true`],
        ['GET', `/workspaces/${ref}/members`],
        ['POST', `/workspaces/${ref}/members/add`, { user_ids: [other.userId] }],
        ['POST', `/workspaces/${ref}/members/remove`, { user_ids: [member] }],
        ['GET', `/workspaces/${ref}/budgets`],
        ['GET', `/workspaces/${ref}/budgets/monthly`],
        ['PUT', `/workspaces/${ref}/budgets/monthly`, { limit_usd: 1 }],
        ['DELETE', `/workspaces/${ref}/budgets/monthly`],
      ] as const;
      for (const [method, path, body] of routes) {
        const res = await theirs(method, path, body);
        expect(res.status, `${method} ${path}`).toBe(404);
        expect(res.body).toEqual({ error: { code: 404, message: expect.any(String) } });
      }
    }
    // Their 'default' is their own default workspace, not ours.
    const theirDefault = await theirSdk.workspaces.get({ id: 'default' });
    expect(theirDefault.data.id).toBe(other.workspaceId);
    expect(theirDefault.data.id).not.toBe(def.id);

    // Nothing of ours changed.
    expect((await sdk.workspaces.get({ id: ws.id })).data.name).toBe(ws.name);
    expect((await sdk.workspaces.listMembers({ id: ws.id })).result.totalCount).toBe(2);
    expect((await sdk.workspaces.getBudget({ workspaceRef: ws.id, interval: 'monthly' })).data.limitUsd).toBe(
      5,
    );

    // Their lists hold only their own workspaces and members.
    const list = await theirSdk.workspaces.list({ limit: 100 });
    expect(list.result.data.map((w) => w.id)).toEqual([other.workspaceId]);
    expect(list.result.totalCount).toBe(1);
    const members = await theirSdk.workspaces.listMembers({ id: 'default', limit: 100 });
    expect(members.result.data.map((m) => m.userId)).toEqual([other.userId]);

    // Slugs are unique per organization only.
    const same = await theirSdk.workspaces.create({
      createWorkspaceRequest: { name: 'mirror', slug: ws.slug },
    });
    expect(same.data.id).not.toBe(ws.id);
    expect((await sdk.workspaces.get({ id: ws.slug })).data.id).toBe(ws.id);
    // Our users cannot be added to their workspace.
    expect(
      (await theirs('POST', `/workspaces/${same.data.id}/members/add`, { user_ids: [member] })).status,
    ).toBe(400);
  });

  it('requires a management key', async () => {
    const anon = client(gw.url);
    const api = client(gw.url, gw.apiKey);
    for (const path of [
      '/workspaces',
      '/workspaces/default',
      '/workspaces/default/members',
      '/workspaces/default/budgets',
    ]) {
      expect((await anon('GET', path)).status).toBe(401);
      const res = await api('GET', path);
      expect(res.status).toBe(403);
      expect(res.body.error.message).toBe('Only management keys can perform this operation');
    }
  });

  it('keeps workspaces, members, budgets and the BYOK flag across a restart', async () => {
    const ws = await newWorkspace('durable');
    const member = await newUser('admin');
    await sdk.workspaces.bulkAddMembers({ id: ws.id, bulkAddWorkspaceMembersRequest: { userIds: [member] } });
    await sdk.workspaces.update({
      id: ws.id,
      updateWorkspaceRequest: { disabledServerTools: ['openrouter:shell'], ioLoggingApiKeyIds: [7] },
    });
    await sdk.workspaces.setBudget({
      workspaceRef: ws.id,
      interval: 'lifetime',
      upsertWorkspaceBudgetRequest: { limitUsd: 42, includeByokInBudgets: true },
    });
    const before = (await sdk.workspaces.get({ id: ws.id })).data;

    gw = await gw.restart();
    sdk = newSdk(gw.managementKey);
    call = client(gw.url, gw.managementKey);

    expect((await sdk.workspaces.get({ id: ws.slug })).data).toEqual(before);
    expect(before.disabledServerTools).toEqual(['openrouter:shell']);
    expect(before.ioLoggingApiKeyIds).toEqual([7]);
    const members = await sdk.workspaces.listMembers({ id: ws.id });
    expect(members.result.data.map((m) => [m.userId, m.role]).sort()).toEqual(
      [
        [gw.ownerUserId, 'admin'],
        [member, 'admin'],
      ].sort(),
    );
    const budgets = await sdk.workspaces.listBudgets({ workspaceRef: ws.id });
    expect(budgets.includeByokInBudgets).toBe(true);
    expect(budgets.data.map((b) => [b.resetInterval, b.limitUsd])).toEqual([[null, 42]]);
  });
});
