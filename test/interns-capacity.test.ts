import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client, makeOrganization } from './support/http.js';

/**
 * Fair sharing of intern runtimes, with real runtimes started by the local provisioner and small
 * caps: GATEHOUSE_INTERNS_PER_MEMBER counts a member's interns in every workspace together,
 * GATEHOUSE_INTERNS_RUNTIMES_PER_ORGANIZATION caps an organization's running or starting runtimes,
 * GATEHOUSE_INTERNS_RUNTIMES_MAX caps this node's.
 */
describe('intern runtime caps', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startTestGateway('sqlite', {
      env: {
        GATEHOUSE_INTERNS_PER_MEMBER: '2',
        GATEHOUSE_INTERNS_RUNTIMES_PER_ORGANIZATION: '2',
        GATEHOUSE_INTERNS_RUNTIMES_MAX: '3',
      },
    });
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
  });

  type Call = ReturnType<typeof client>;
  async function running(as: Call, id: string) {
    const until = Date.now() + 30_000;
    for (;;) {
      const got = await as('GET', `/interns/${id}`);
      if (got.body.status === 'running') return;
      if (got.body.status === 'failed') throw new Error(`failed: ${got.body.last_failure_message}`);
      if (Date.now() > until) throw new Error(`${id} not running: ${got.text}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it('counts a member’s interns across workspaces, caps runtimes per organization and per node (409)', async () => {
    const mgmt = client(gw.url, gw.managementKey);
    const owner = client(gw.url, gw.apiKey);
    // The same member's key in a second workspace.
    const ws2 = await mgmt('POST', '/workspaces', { name: 'Second', slug: 'second' });
    expect(ws2.status, ws2.text).toBe(201);
    const k2 = await mgmt('POST', '/keys', {
      name: 'second',
      workspace_id: ws2.body.data.id,
      creator_user_id: gw.ownerUserId,
    });
    expect(k2.status, k2.text).toBe(201);
    const ownerInWs2 = client(gw.url, k2.body.key);

    // Per member, all workspaces together: one here, one there, then no third anywhere.
    const a = await owner('POST', '/interns', { name: 'first', provision: true });
    expect(a.status, a.text).toBe(201);
    const b = await ownerInWs2('POST', '/interns', { name: 'second', provision: true });
    expect(b.status, b.text).toBe(201);
    for (const as of [owner, ownerInWs2]) {
      const third = await as('POST', '/interns', { name: 'third' });
      expect(third.status, third.text).toBe(409);
      expect(third.body.error.code).toBe('intern_limit_reached');
    }
    await running(owner, a.body.id);
    await running(ownerInWs2, b.body.id);

    // Per organization: two runtimes run; another member's intern cannot start a third.
    const user = await adminClient(gw.url)('POST', '/admin/users', {
      email: `member-${Date.now()}@example.com`,
      organization_id: gw.organizationId,
      role: 'member',
      interns_programme: true,
    });
    const memberKey = await adminClient(gw.url)('POST', '/admin/keys', {
      name: 'm',
      user_id: user.body.data.id,
    });
    const member = client(gw.url, memberKey.body.key);
    const refusedCreate = await member('POST', '/interns', { name: 'eager', provision: true });
    expect(refusedCreate.status, refusedCreate.text).toBe(409);
    expect(refusedCreate.body.error.code).toBe('runtime_limit_reached');
    expect(refusedCreate.body.error.message).toMatch(/organization/);
    const c = await member('POST', '/interns', { name: 'patient' });
    expect(c.status, c.text).toBe(201);
    const refused = await member('POST', `/interns/${c.body.id}/provision`);
    expect(refused.status, refused.text).toBe(409);
    expect(refused.body.error.code).toBe('runtime_limit_reached');
    expect((await member('GET', `/interns/${c.body.id}`)).body.status).toBe('stopped');
    // Suspending one makes room.
    expect((await ownerInWs2('POST', `/interns/${b.body.id}/suspend`)).status).toBe(200);
    expect((await member('POST', `/interns/${c.body.id}/provision`)).status).toBe(202);
    await running(member, c.body.id);

    // Per node: with two runtimes of organization A and one of B, the node (max 3) is full, though
    // B is under its own cap.
    const other = await makeOrganization(gw.url, 'Org B', { internsProgramme: true });
    const orgB = client(gw.url, other.apiKey);
    const d = await orgB('POST', '/interns', { name: 'bee', provision: true });
    expect(d.status, d.text).toBe(201);
    await running(orgB, d.body.id);
    expect(gw.services.provisioner.runtimeCount()).toBe(3);
    const e = await orgB('POST', '/interns', { name: 'wasp' });
    const full = await orgB('POST', `/interns/${e.body.id}/provision`);
    expect(full.status, full.text).toBe(409);
    expect(full.body.error.code).toBe('runtime_limit_reached');
    expect(full.body.error.message).toMatch(/gateway/);
    expect(gw.services.provisioner.runtimeCount()).toBe(3);
  }, 90_000);
});
