import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client, makeOrganization } from './support/http.js';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

describe.each(databases)('audit log (%s)', (db) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(db);
  });
  afterAll(() => gw?.stop());

  const events = async (query = '') => {
    const res = await client(gw.url, gw.managementKey)('GET', `/audit-log${query}`);
    expect(res.status, res.text).toBe(200);
    return res.body as { data: any[]; next_cursor: string | null };
  };

  it('records who changed what, with the state before and after and every secret masked', async () => {
    const mgmt = client(gw.url, gw.managementKey);
    const created = await mgmt('POST', '/keys', { name: 'ci' });
    expect(created.status).toBe(201);
    const hash = created.body.data.hash;
    const secret = created.body.key as string;
    expect((await mgmt('PATCH', `/keys/${hash}`, { name: 'ci-renamed', limit: 5 })).status).toBe(200);
    const byok = await mgmt('POST', '/byok', { provider: 'openai', key: 'sk-audit-provider-secret' });
    expect(byok.status).toBe(201);
    expect((await mgmt('DELETE', `/byok/${byok.body.data.id}`)).status).toBe(200);

    const { data } = await events();
    const text = JSON.stringify(data);
    expect(text).not.toContain(secret);
    expect(text).not.toContain('sk-audit-provider-secret');
    expect(text).not.toContain(gw.managementKey);

    const [del, byokCreate, update, create] = data;
    expect(create).toMatchObject({
      organization_id: gw.organizationId,
      actor: { kind: 'management_key', id: sha256(gw.managementKey), user_id: gw.ownerUserId },
      action: 'key.create',
      resource: { type: 'key', id: hash },
      status: 201,
      before: null,
      after: { hash, name: 'ci' },
      request: { name: 'ci' },
      remote_address: '127.0.0.1',
    });
    expect(create.request_id).toBe(created.headers.get('x-request-id'));
    expect(update).toMatchObject({
      action: 'key.update',
      resource: { id: hash },
      before: { name: 'ci', limit: null },
      after: { name: 'ci-renamed', limit: 5 },
      status: 200,
    });
    expect(byokCreate).toMatchObject({ action: 'byok.create', request: { key: '[redacted]' } });
    // The before-reads are no requests of anyone's: not in the metrics (nor the access log).
    const metrics = await (await fetch(`${gw.metricsUrl}/metrics`)).text();
    expect(metrics).not.toMatch(/method="GET",route="\/api\/v1\/keys\/:hash"/);
    expect(metrics).toMatch(/method="PATCH",route="\/api\/v1\/keys\/:hash",status_code="200"\} 1/);
    expect(metrics).toMatch(/gatehouse_audit_events_total [1-9]/);
    expect(metrics).toMatch(/gatehouse_audit_write_failures_total 0/);
    expect(del).toMatchObject({
      action: 'byok.delete',
      resource: { type: 'byok', id: byok.body.data.id },
      before: { id: byok.body.data.id, provider: 'openai' },
      after: null,
    });
  });

  it('records refused attempts with their status, and not unauthenticated ones', async () => {
    const mgmt = client(gw.url, gw.managementKey);
    const missing = await mgmt('PATCH', '/guardrails/no-such-guardrail', { name: 'x' });
    expect(missing.status).toBe(404);
    const invalid = await mgmt('POST', '/keys', { name: 'x', limit: 'lots' });
    expect(invalid.status).toBe(400);
    expect((await client(gw.url, 'sk-gh-v1-wrong')('POST', '/keys', { name: 'nope' })).status).toBe(401);

    const { data } = await events('?limit=2');
    expect(data.map((e) => [e.action, e.status, e.after])).toEqual([
      ['key.create', 400, null],
      ['guardrail.update', 404, null],
    ]);
    expect(data[1].resource).toEqual({ type: 'guardrail', id: 'no-such-guardrail' });
    expect((await events('?action=key.create')).data.some((e) => e.request?.name === 'nope')).toBe(false);
  });

  it('filters and pages with a cursor, and answers bad filters with 400', async () => {
    const mgmt = client(gw.url, gw.managementKey);
    for (const name of ['p1', 'p2', 'p3']) await mgmt('POST', '/guardrails', { name });
    const all = (await events('?action=guardrail.create')).data;
    expect(all.map((e) => e.after.name)).toEqual(['p3', 'p2', 'p1']);

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { data: any[]; next_cursor: string | null } = await events(
        `?action=guardrail.create&limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      );
      seen.push(...page.data.map((e) => e.after.name));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual(['p3', 'p2', 'p1']);

    const byActor = await events(`?actor=${sha256(gw.managementKey)}&resource_type=guardrail&limit=200`);
    expect(byActor.data.length).toBe(4);
    expect((await events(`?actor=${gw.ownerUserId}&resource_type=guardrail`)).data.length).toBe(4);
    expect(
      (await events(`?from=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).data,
    ).toEqual([]);
    const mgmtCall = client(gw.url, gw.managementKey);
    expect((await mgmtCall('GET', '/audit-log?cursor=nonsense')).status).toBe(400);
    expect((await mgmtCall('GET', '/audit-log?from=yesterday')).status).toBe(400);
    expect((await mgmtCall('GET', '/audit-log?limit=0')).status).toBe(400);
    expect((await client(gw.url, gw.apiKey)('GET', '/audit-log')).status).toBe(403);
  });

  it('keeps organizations apart, and shows the operator everything by organization', async () => {
    const other = await makeOrganization(gw.url, `Audit other ${db}`);
    const theirs = client(gw.url, other.managementKey);
    expect((await theirs('POST', '/guardrails', { name: 'theirs' })).status).toBe(201);
    const theirEvents = (await theirs('GET', '/audit-log?limit=200')).body.data as any[];
    // Its whole life: created by the operator, its first user and keys, then its own writes.
    const life = ['guardrail.create', 'key.create', 'key.create', 'user.create', 'organization.create'];
    expect(theirEvents.map((e) => e.action)).toEqual(life);
    expect(theirEvents.every((e) => e.organization_id === other.organizationId)).toBe(true);
    expect(JSON.stringify(theirEvents)).not.toContain(gw.organizationId);
    const mine = (await events('?limit=200')).data;
    expect(mine.every((e) => e.organization_id === gw.organizationId)).toBe(true);

    const admin = adminClient(gw.url);
    const byOrg = await admin('GET', `/admin/audit-log?organization_id=${other.organizationId}&limit=200`);
    expect(byOrg.status).toBe(200);
    expect(byOrg.body.data.map((e: any) => e.action)).toEqual(life);
    const grant = byOrg.body.data.find((e: any) => e.action === 'key.create');
    expect(grant.actor).toEqual({ kind: 'operator', id: null, user_id: null });
    expect(JSON.stringify(byOrg.body)).not.toContain(other.managementKey);
    expect(JSON.stringify(byOrg.body)).not.toContain(ADMIN_TOKEN);
    expect((await admin('POST', '/admin/catalog/reload')).status).toBe(200);
    const operatorOnly = await admin('GET', '/admin/audit-log?organization_id=none');
    expect(operatorOnly.body.data[0]).toMatchObject({ action: 'catalog.reload', organization_id: null });
    expect((await admin('GET', '/admin/audit-log?limit=200')).body.data.length).toBeGreaterThan(mine.length);
    expect((await client(gw.url, gw.managementKey)('GET', '/admin/audit-log')).status).toBe(401);
  });

  it('purges events past the retention period', async () => {
    const before = (await events('?limit=200')).data.length;
    expect(before).toBeGreaterThan(0);
    // 365 days (the default) and a day from now: every event so far is older than that.
    const purged = await gw.services.audit.purgeExpired(Date.now() + 366 * 86_400_000);
    expect(purged).toBeGreaterThanOrEqual(before);
    expect((await events()).data).toEqual([]);
  });
});
