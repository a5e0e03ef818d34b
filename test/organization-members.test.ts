import { randomUUID } from 'node:crypto';
import { OpenRouter } from '@openrouter/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client, makeOrganization } from './support/http.js';

describe.each(databases)('Organization members (%s)', (db) => {
  let gw: TestGateway;
  let sdk: OpenRouter;
  let call: ReturnType<typeof client>;
  const users: Record<string, string> = {};

  const newSdk = (key: string) =>
    new OpenRouter({ serverURL: `${gw.url}/api/v1`, apiKey: key, retryConfig: { strategy: 'none' } });

  beforeAll(async () => {
    gw = await startTestGateway(db);
    sdk = newSdk(gw.managementKey);
    call = client(gw.url, gw.managementKey);
    const admin = adminClient(gw.url);
    for (const [name, role, first_name, last_name] of [
      ['ada', 'admin', 'Ada', 'Lovelace'],
      ['bob', 'member', 'Bob', null],
      ['cy', 'owner', null, null],
      ['dee', 'member', null, 'Dee'],
    ] as const) {
      const res = await admin('POST', '/admin/users', {
        email: `${name}-${randomUUID()}@Example.com`,
        organization_id: gw.organizationId,
        role,
        first_name,
        last_name,
      });
      expect(res.status).toBe(201);
      users[name] = res.body.data.id;
    }
  });
  afterAll(() => gw?.stop());

  it('lists members through the SDK with names and org:admin / org:member roles', async () => {
    const page = await sdk.organization.listMembers({});
    expect(page.result.totalCount).toBe(5);
    const byId = new Map(page.result.data.map((m) => [m.id, m]));
    expect(byId.get(gw.ownerUserId)).toMatchObject({ email: 'owner@gatehouse.local', role: 'org:admin' });
    expect(byId.get(users.ada!)).toMatchObject({ firstName: 'Ada', lastName: 'Lovelace', role: 'org:admin' });
    expect(byId.get(users.bob!)).toMatchObject({ firstName: 'Bob', lastName: null, role: 'org:member' });
    expect(byId.get(users.cy!)).toMatchObject({ firstName: null, lastName: null, role: 'org:admin' });
    expect(byId.get(users.dee!)).toMatchObject({ firstName: null, lastName: 'Dee', role: 'org:member' });
    expect(byId.get(users.ada!)!.email).toMatch(/^ada-.*@example\.com$/);

    // Exact wire keys, oldest member first.
    const raw = await call('GET', '/organization/members');
    expect(raw.status).toBe(200);
    expect(Object.keys(raw.body.data[0]).sort()).toEqual(['email', 'first_name', 'id', 'last_name', 'role']);
    expect(raw.body.data[0].id).toBe(gw.ownerUserId);
    expect(raw.body.data.map((m: any) => m.id)).toEqual(page.result.data.map((m) => m.id));
  });

  it('paginates with offset and limit (1 to 100)', async () => {
    const all = await call('GET', '/organization/members?limit=100');
    expect(all.body.total_count).toBe(5);
    expect(all.body.data).toHaveLength(5);

    const one = await call('GET', '/organization/members?offset=2&limit=1');
    expect(one.body).toEqual({ data: [all.body.data[2]], total_count: 5 });
    expect((await call('GET', '/organization/members?offset=4&limit=100')).body.data).toEqual([
      all.body.data[4],
    ]);
    expect((await call('GET', '/organization/members?offset=5')).body).toEqual({ data: [], total_count: 5 });
    expect((await call('GET', '/organization/members?offset=999999')).body).toEqual({
      data: [],
      total_count: 5,
    });
    for (const q of ['limit=0', 'limit=101', 'offset=-1', 'limit=x', 'offset=0.5']) {
      const res = await call('GET', `/organization/members?${q}`);
      expect(res.status, q).toBe(400);
      expect(res.body).toEqual({ error: { code: 400, message: expect.any(String) } });
    }

    // The SDK's iterator walks every page.
    const ids: string[] = [];
    for await (const page of await sdk.organization.listMembers({ limit: 2 })) {
      ids.push(...page.result.data.map((m) => m.id));
    }
    expect(ids).toEqual(all.body.data.map((m: any) => m.id));
  });

  it('shows each organization only its own members', async () => {
    const other = await makeOrganization(gw.url, `Elsewhere ${db}`);
    const theirs = await newSdk(other.managementKey).organization.listMembers({ limit: 100 });
    expect(theirs.result.totalCount).toBe(1);
    expect(theirs.result.data.map((m) => m.id)).toEqual([other.userId]);
    expect(theirs.result.data[0]!.role).toBe('org:admin');
    const mine = await sdk.organization.listMembers({ limit: 100 });
    expect(mine.result.data.map((m) => m.id)).not.toContain(other.userId);
    expect(mine.result.totalCount).toBe(5);
  });

  it('requires a management key', async () => {
    expect((await client(gw.url)('GET', '/organization/members')).status).toBe(401);
    const res = await client(gw.url, gw.apiKey)('GET', '/organization/members');
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe(403);
  });

  it('keeps members across a restart', async () => {
    const before = (await call('GET', '/organization/members?limit=100')).body;
    gw = await gw.restart();
    const after = await client(gw.url, gw.managementKey)('GET', '/organization/members?limit=100');
    expect(after.body).toEqual(before);
  });
});
