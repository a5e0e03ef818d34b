import { createHash } from 'node:crypto';
import { OpenRouter } from '@openrouter/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client, makeOrganization } from './support/http.js';

const sdkFor = (gw: TestGateway, apiKey = gw.managementKey) =>
  new OpenRouter({ serverURL: `${gw.url}/api/v1`, apiKey, retryConfig: { strategy: 'none' } });

let seq = 0;

describe.each(databases)('Guardrail assignments (%s)', (db) => {
  let gw: TestGateway;
  let sdk: OpenRouter;
  beforeAll(async () => {
    gw = await startTestGateway(db);
    sdk = sdkFor(gw);
  });
  afterAll(() => gw?.stop());

  const newKey = async (name: string, key = gw.managementKey, body: Record<string, unknown> = {}) => {
    const res = await client(gw.url, key)('POST', '/keys', { name, ...body });
    expect(res.status).toBe(201);
    return res.body.data as { hash: string; name: string; label: string; workspace_id: string };
  };
  const newGuardrail = async (name: string, key = gw.managementKey) => {
    const res = await client(gw.url, key)('POST', '/guardrails', { name });
    expect(res.status).toBe(201);
    return res.body.data.id as string;
  };
  const newMember = async (organizationId = gw.organizationId) => {
    const res = await adminClient(gw.url)('POST', '/admin/users', {
      email: `member-${db}-${++seq}-${Date.now()}@example.com`,
      organization_id: organizationId,
      role: 'member',
    });
    expect(res.status).toBe(201);
    return res.body.data.id as string;
  };
  const keyHashesOf = async (id: string) =>
    (await sdk.guardrails.listGuardrailKeyAssignments({ id, limit: 100 })).result.data.map((a) => a.keyHash);
  const memberIdsOf = async (id: string) =>
    (await sdk.guardrails.listGuardrailMemberAssignments({ id, limit: 100 })).result.data.map(
      (a) => a.userId,
    );

  it('assigns keys, moving a key from its previous guardrail', async () => {
    const a = await newGuardrail('A');
    const b = await newGuardrail('B');
    const k1 = await newKey('k1');
    const k2 = await newKey('k2');

    const first = await sdk.guardrails.bulkAssignKeys({
      id: a,
      bulkAssignKeysRequest: { keyHashes: [k1.hash, k2.hash] },
    });
    expect(first).toEqual({ assignedCount: 2 });
    const listed = await sdk.guardrails.listGuardrailKeyAssignments({ id: a });
    expect(listed.result.totalCount).toBe(2);
    expect(listed.result.data.map((x) => x.keyHash)).toEqual(expect.arrayContaining([k1.hash, k2.hash]));
    const k1OnA = listed.result.data.find((x) => x.keyHash === k1.hash)!;
    expect(k1OnA).toEqual({
      id: expect.any(String),
      keyHash: k1.hash,
      keyName: 'k1',
      keyLabel: k1.label,
      guardrailId: a,
      createdAt: expect.any(String),
      assignedBy: gw.ownerUserId,
    });

    // k1 moves from A to B: one change; A loses it, B gains it.
    const moved = await sdk.guardrails.bulkAssignKeys({
      id: b,
      bulkAssignKeysRequest: { keyHashes: [k1.hash] },
    });
    expect(moved.assignedCount).toBe(1);
    expect(await keyHashesOf(a)).toEqual([k2.hash]);
    expect(await keyHashesOf(b)).toEqual([k1.hash]);
    // Assigning it to B again changes nothing; duplicates in one request count once.
    expect(
      (await sdk.guardrails.bulkAssignKeys({ id: b, bulkAssignKeysRequest: { keyHashes: [k1.hash] } }))
        .assignedCount,
    ).toBe(0);
    const k3 = await newKey('k3');
    const dup = await sdk.guardrails.bulkAssignKeys({
      id: b,
      bulkAssignKeysRequest: { keyHashes: [k3.hash, k3.hash, k1.hash] },
    });
    expect(dup.assignedCount).toBe(1);
    expect((await keyHashesOf(b)).sort()).toEqual([k1.hash, k3.hash].sort());

    // The organization-wide list shows every key once, on its current guardrail.
    const everything = await sdk.guardrails.listKeyAssignments({ limit: 100 });
    const mine = everything.result.data.filter((x) => [k1.hash, k2.hash, k3.hash].includes(x.keyHash));
    expect(mine.map((x) => [x.keyHash, x.guardrailId]).sort()).toEqual(
      [
        [k1.hash, b],
        [k2.hash, a],
        [k3.hash, b],
      ].sort(),
    );
  });

  it('counts only the keys actually unassigned', async () => {
    const a = await newGuardrail('UA');
    const b = await newGuardrail('UB');
    const k1 = await newKey('u1');
    const k2 = await newKey('u2');
    const k3 = await newKey('u3');
    await sdk.guardrails.bulkAssignKeys({ id: a, bulkAssignKeysRequest: { keyHashes: [k1.hash, k2.hash] } });
    await sdk.guardrails.bulkAssignKeys({ id: b, bulkAssignKeysRequest: { keyHashes: [k3.hash] } });

    // k3 is on B, not A: it counts 0 and stays on B.
    const removed = await sdk.guardrails.bulkUnassignKeys({
      id: a,
      bulkUnassignKeysRequest: { keyHashes: [k1.hash, k3.hash, k1.hash] },
    });
    expect(removed).toEqual({ unassignedCount: 1 });
    expect(await keyHashesOf(a)).toEqual([k2.hash]);
    expect(await keyHashesOf(b)).toEqual([k3.hash]);
    const again = await sdk.guardrails.bulkUnassignKeys({
      id: a,
      bulkUnassignKeysRequest: { keyHashes: [k1.hash] },
    });
    expect(again.unassignedCount).toBe(0);
    const rest = await sdk.guardrails.bulkUnassignKeys({
      id: a,
      bulkUnassignKeysRequest: { keyHashes: [k2.hash] },
    });
    expect(rest.unassignedCount).toBe(1);
    expect((await sdk.guardrails.listGuardrailKeyAssignments({ id: a })).result).toEqual({
      data: [],
      totalCount: 0,
    });
  });

  it('rejects unknown key hashes and management keys as a whole, changing nothing', async () => {
    const call = client(gw.url, gw.managementKey);
    const g = await newGuardrail('strict');
    const k = await newKey('known');
    const unknown = 'f'.repeat(64);
    const managementHash = createHash('sha256').update(gw.managementKey).digest('hex');
    for (const hashes of [[k.hash, unknown], [managementHash], ['not-a-hash']]) {
      const res = await call('POST', `/guardrails/${g}/assignments/keys`, { key_hashes: hashes });
      expect(res.status, hashes.join()).toBe(400);
      expect(res.body.error.code).toBe(400);
      for (const h of hashes.filter((x) => x !== k.hash)) expect(res.body.error.message).toContain(h);
      expect(res.body.error.message).not.toContain(k.hash);
      expect(res.body.error.metadata.unknown_key_hashes).toEqual(hashes.filter((x) => x !== k.hash));
    }
    expect(await keyHashesOf(g)).toEqual([]);

    // Unassigning: keys of the organization not on the guardrail count 0; unknown hashes are a 400.
    await sdk.guardrails.bulkAssignKeys({ id: g, bulkAssignKeysRequest: { keyHashes: [k.hash] } });
    const res = await call('POST', `/guardrails/${g}/assignments/keys/remove`, {
      key_hashes: [k.hash, unknown],
    });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain(unknown);
    expect(await keyHashesOf(g)).toEqual([k.hash]);
  });

  it("rejects keys of another workspace than the guardrail's", async () => {
    const call = client(gw.url, gw.managementKey);
    const ws = await call('POST', '/workspaces', { name: `Elsewhere ${db}`, slug: `elsewhere-${db}` });
    expect(ws.status).toBe(201);
    const there = await newKey('there', gw.managementKey, { workspace_id: ws.body.data.id });
    const here = await newKey('here');
    const g = await newGuardrail('default-ws rail');
    const res = await call('POST', `/guardrails/${g}/assignments/keys`, {
      key_hashes: [here.hash, there.hash],
    });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain(there.hash);
    expect(res.body.error.message).not.toContain(here.hash);
    expect(await keyHashesOf(g)).toEqual([]);

    const wsRail = await call('POST', '/guardrails', { name: 'ws rail', workspace_id: ws.body.data.id });
    const ok = await call('POST', `/guardrails/${wsRail.body.data.id}/assignments/keys`, {
      key_hashes: [there.hash],
    });
    expect(ok.body).toEqual({ assigned_count: 1 });
  });

  it('assigns and unassigns organization members', async () => {
    const a = await newGuardrail('MA');
    const b = await newGuardrail('MB');
    const u1 = await newMember();
    const u2 = await newMember();

    const first = await sdk.guardrails.bulkAssignMembers({
      id: a,
      bulkAssignMembersRequest: { memberUserIds: [u1, u2, u1] },
    });
    expect(first).toEqual({ assignedCount: 2 });
    const again = await sdk.guardrails.bulkAssignMembers({
      id: a,
      bulkAssignMembersRequest: { memberUserIds: [u1] },
    });
    expect(again.assignedCount).toBe(0);
    // A member may hold several guardrails.
    const onB = await sdk.guardrails.bulkAssignMembers({
      id: b,
      bulkAssignMembersRequest: { memberUserIds: [u1] },
    });
    expect(onB.assignedCount).toBe(1);
    expect((await memberIdsOf(a)).sort()).toEqual([u1, u2].sort());
    expect(await memberIdsOf(b)).toEqual([u1]);

    const listed = await sdk.guardrails.listGuardrailMemberAssignments({ id: b });
    expect(listed.result).toEqual({
      data: [
        {
          id: expect.any(String),
          userId: u1,
          organizationId: gw.organizationId,
          guardrailId: b,
          createdAt: expect.any(String),
          assignedBy: gw.ownerUserId,
        },
      ],
      totalCount: 1,
    });
    const all = await sdk.guardrails.listMemberAssignments({ limit: 100 });
    expect(
      all.result.data
        .filter((x) => x.userId === u1)
        .map((x) => x.guardrailId)
        .sort(),
    ).toEqual([a, b].sort());

    const removed = await sdk.guardrails.bulkUnassignMembers({
      id: a,
      bulkUnassignMembersRequest: { memberUserIds: [u1, u2, u2] },
    });
    expect(removed).toEqual({ unassignedCount: 2 });
    const none = await sdk.guardrails.bulkUnassignMembers({
      id: a,
      bulkUnassignMembersRequest: { memberUserIds: [u1] },
    });
    expect(none.unassignedCount).toBe(0);
    expect(await memberIdsOf(a)).toEqual([]);
    expect(await memberIdsOf(b)).toEqual([u1]);
  });

  it('rejects users who are not members of the organization, changing nothing', async () => {
    const call = client(gw.url, gw.managementKey);
    const g = await newGuardrail('members only');
    const member = await newMember();
    const other = await makeOrganization(gw.url, `Outsiders ${db}`);
    const outsider = await newMember(other.organizationId);
    for (const ids of [[member, outsider], ['no-such-user'], [other.userId]]) {
      const res = await call('POST', `/guardrails/${g}/assignments/members`, { member_user_ids: ids });
      expect(res.status, ids.join()).toBe(400);
      for (const id of ids.filter((x) => x !== member)) expect(res.body.error.message).toContain(id);
      expect(res.body.error.message).not.toContain(member);
      expect(res.body.error.metadata.unknown_member_user_ids).toEqual(ids.filter((x) => x !== member));
    }
    expect(await memberIdsOf(g)).toEqual([]);
    const rm = await call('POST', `/guardrails/${g}/assignments/members/remove`, {
      member_user_ids: [outsider],
    });
    expect(rm.status).toBe(400);
  });

  it('validates bulk bodies', async () => {
    const call = client(gw.url, gw.managementKey);
    const g = await newGuardrail('bodies');
    for (const path of ['keys', 'keys/remove']) {
      for (const body of [
        {},
        { key_hashes: [] },
        { key_hashes: [''] },
        { key_hashes: [{}] },
        { member_user_ids: ['x'] },
      ]) {
        const res = await call('POST', `/guardrails/${g}/assignments/${path}`, body);
        expect(res.status, `${path} ${JSON.stringify(body)}`).toBe(400);
        expect(res.body.error.code).toBe(400);
      }
    }
    for (const path of ['members', 'members/remove']) {
      for (const body of [{}, { member_user_ids: [] }, { member_user_ids: [''] }, { key_hashes: ['x'] }]) {
        const res = await call('POST', `/guardrails/${g}/assignments/${path}`, body);
        expect(res.status, `${path} ${JSON.stringify(body)}`).toBe(400);
      }
    }
  });

  it('answers 404 for a guardrail that does not exist', async () => {
    const call = client(gw.url, gw.managementKey);
    const k = await newKey('orphan');
    const missing = '00000000-0000-4000-8000-000000000000';
    const cases = [
      ['GET', 'keys'],
      ['GET', 'members'],
      ['POST', 'keys', { key_hashes: [k.hash] }],
      ['POST', 'keys/remove', { key_hashes: [k.hash] }],
      ['POST', 'members', { member_user_ids: [gw.ownerUserId] }],
      ['POST', 'members/remove', { member_user_ids: [gw.ownerUserId] }],
    ] as const;
    for (const [method, path, body] of cases) {
      const res = await call(method, `/guardrails/${missing}/assignments/${path}`, body);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body).toEqual({ error: { code: 404, message: 'Guardrail not found' } });
    }
  });

  it('paginates the assignment lists, oldest first', async () => {
    // A fresh organization gives exact counts.
    const org = await makeOrganization(gw.url, `Paging ${db}`);
    const call = client(gw.url, org.managementKey);
    const g = await newGuardrail('paged', org.managementKey);
    const hashes: string[] = [];
    for (const name of ['p1', 'p2', 'p3']) {
      hashes.push((await newKey(name, org.managementKey)).hash);
      // One request per key gives each assignment its own created_at (oldest first is then exact).
      await call('POST', `/guardrails/${g}/assignments/keys`, { key_hashes: [hashes.at(-1)] });
      await new Promise((r) => setTimeout(r, 5));
    }
    const users = [await newMember(org.organizationId), await newMember(org.organizationId)];
    await call('POST', `/guardrails/${g}/assignments/members`, { member_user_ids: users });

    for (const base of [`/guardrails/${g}/assignments/keys`, '/guardrails/assignments/keys']) {
      const page = async (q: string) => (await call('GET', `${base}?${q}`)).body;
      const all = await page('');
      expect(all.total_count).toBe(3);
      expect(all.data.map((a: { key_hash: string }) => a.key_hash)).toEqual(hashes);
      expect(await page('offset=3')).toEqual({ data: [], total_count: 3 });
      expect(await page('offset=1000&limit=5')).toEqual({ data: [], total_count: 3 });
      const one = await page('offset=1&limit=1');
      expect(one.data.map((a: { key_hash: string }) => a.key_hash)).toEqual([hashes[1]]);
      expect(one.total_count).toBe(3);
      expect((await page('limit=100')).data).toHaveLength(3);
      for (const q of ['limit=0', 'limit=101', 'offset=-1']) {
        const res = await call('GET', `${base}?${q}`);
        expect(res.status, `${base}?${q}`).toBe(400);
        expect(res.body.error.code).toBe(400);
      }
    }
    for (const base of [`/guardrails/${g}/assignments/members`, '/guardrails/assignments/members']) {
      const all = (await call('GET', base)).body;
      expect(all.total_count).toBe(2);
      expect(all.data.map((a: { user_id: string }) => a.user_id).sort()).toEqual([...users].sort());
      expect((await call('GET', `${base}?offset=2`)).body).toEqual({ data: [], total_count: 2 });
      expect((await call('GET', `${base}?limit=1`)).body.data).toHaveLength(1);
      expect((await call('GET', `${base}?limit=101`)).status).toBe(400);
    }

    // The official client's iterator walks every page.
    const seen: string[] = [];
    for await (const p of await sdkFor(gw, org.managementKey).guardrails.listKeyAssignments({ limit: 1 })) {
      seen.push(...p.result.data.map((a) => a.keyHash));
    }
    expect(seen).toEqual(hashes);
  });

  it("keeps organizations apart: another organization gets 404 and never sees one's assignments", async () => {
    const g = await newGuardrail('guarded');
    const k = await newKey('secretive');
    const u = await newMember();
    await sdk.guardrails.bulkAssignKeys({ id: g, bulkAssignKeysRequest: { keyHashes: [k.hash] } });
    await sdk.guardrails.bulkAssignMembers({ id: g, bulkAssignMembersRequest: { memberUserIds: [u] } });

    const other = await makeOrganization(gw.url, `Intruder ${db}`);
    const theirs = client(gw.url, other.managementKey);
    const theirKey = await newKey('theirs', other.managementKey);
    const cases = [
      ['GET', 'keys'],
      ['GET', 'members'],
      ['POST', 'keys', { key_hashes: [theirKey.hash] }],
      ['POST', 'keys/remove', { key_hashes: [k.hash] }],
      ['POST', 'members', { member_user_ids: [other.userId] }],
      ['POST', 'members/remove', { member_user_ids: [u] }],
    ] as const;
    for (const [method, path, body] of cases) {
      const res = await theirs(method, `/guardrails/${g}/assignments/${path}`, body);
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    for (const path of ['keys', 'members']) {
      const res = await theirs('GET', `/guardrails/assignments/${path}?limit=100`);
      expect(res.status).toBe(200);
      expect(res.body.data.map((a: { guardrail_id: string }) => a.guardrail_id)).not.toContain(g);
    }
    // Their own guardrail cannot take our key or our member.
    const theirRail = await newGuardrail('theirs', other.managementKey);
    expect(
      (await theirs('POST', `/guardrails/${theirRail}/assignments/keys`, { key_hashes: [k.hash] })).status,
    ).toBe(400);
    expect(
      (await theirs('POST', `/guardrails/${theirRail}/assignments/members`, { member_user_ids: [u] })).status,
    ).toBe(400);
    expect(await keyHashesOf(g)).toEqual([k.hash]);
    expect(await memberIdsOf(g)).toEqual([u]);
  });

  it('drops assignments with their guardrail or key, and keeps them across a restart', async () => {
    const call = client(gw.url, gw.managementKey);
    const doomed = await newGuardrail('doomed');
    const kept = await newGuardrail('kept');
    const k = await newKey('moving');
    const gone = await newKey('deleted later');
    const u = await newMember();
    await sdk.guardrails.bulkAssignKeys({ id: doomed, bulkAssignKeysRequest: { keyHashes: [k.hash] } });
    await sdk.guardrails.bulkAssignMembers({ id: doomed, bulkAssignMembersRequest: { memberUserIds: [u] } });
    await sdk.guardrails.bulkAssignKeys({ id: kept, bulkAssignKeysRequest: { keyHashes: [gone.hash] } });
    await sdk.guardrails.bulkAssignMembers({ id: kept, bulkAssignMembersRequest: { memberUserIds: [u] } });

    await sdk.guardrails.delete({ id: doomed });
    const allKeys = (await call('GET', '/guardrails/assignments/keys?limit=100')).body.data;
    expect(allKeys.filter((a: { guardrail_id: string }) => a.guardrail_id === doomed)).toEqual([]);
    const allMembers = (await call('GET', '/guardrails/assignments/members?limit=100')).body.data;
    expect(allMembers.filter((a: { guardrail_id: string }) => a.guardrail_id === doomed)).toEqual([]);
    // The key is free again: assigning it is a change.
    expect(
      (await call('POST', `/guardrails/${kept}/assignments/keys`, { key_hashes: [k.hash] })).body,
    ).toEqual({
      assigned_count: 1,
    });
    // Deleting a key drops its assignment.
    expect((await call('DELETE', `/keys/${gone.hash}`)).status).toBe(200);
    expect(await keyHashesOf(kept)).toEqual([k.hash]);

    gw = await gw.restart();
    sdk = sdkFor(gw);
    expect(await keyHashesOf(kept)).toEqual([k.hash]);
    expect(await memberIdsOf(kept)).toEqual([u]);
  });
});
