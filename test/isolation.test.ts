import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client, makeOrganization } from './support/http.js';

/**
 * One sweep over every management route that names an object in its path: a second
 * organization's management key must get 404 on each, for the first organization's objects.
 * The route list comes from the OpenAPI document, so a new route without a case here fails.
 */
describe.each(databases)('isolation between organizations (%s)', (db) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(db);
  });
  afterAll(() => gw?.stop());

  it('answers 404 to another organization on every object route, and changes nothing', async () => {
    const mine = client(gw.url, gw.managementKey);
    const workspace = (await mine('POST', '/workspaces', { name: 'Private', slug: 'private' })).body.data;
    const guardrail = (await mine('POST', '/guardrails', { name: 'g', allowed_models: ['a/b'] })).body.data;
    const key = (await mine('POST', '/keys', { name: 'k' })).body.data;
    const byok = (await mine('POST', '/byok', { provider: 'openai', key: 'sk-private-provider-secret' })).body
      .data;
    const destination = (
      await mine('POST', '/observability/destinations', {
        type: 'webhook',
        name: 'private',
        config: {
          url: 'https://hooks.example.com/private',
          headers: { authorization: 'sk-private-provider-secret' },
        },
      })
    ).body.data;
    await mine('PUT', `/workspaces/${workspace.id}/budgets/monthly`, { limit_usd: 5 });
    await mine('POST', `/guardrails/${guardrail.id}/assignments/keys`, { key_hashes: [key.hash] });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 1,
    });
    const batch = (
      await client(gw.url, gw.apiKey)('POST', '/batches', {
        endpoint: '/v1/chat/completions',
        completion_window: '24h',
        requests: [
          { custom_id: 'a', body: { model: 'gatehouse/echo', messages: [{ role: 'user', content: 'hi' }] } },
        ],
      })
    ).body;
    const messageBatch = (
      await client(gw.url, gw.apiKey)('POST', '/messages/batches', {
        requests: [
          {
            custom_id: 'a',
            params: { model: 'gatehouse/echo', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
          },
        ],
      })
    ).body;
    expect(messageBatch.id).toMatch(/^msgbatch_/);

    const api = client(gw.url, gw.apiKey);
    const form = new FormData();
    form.append('purpose', 'batch');
    const fileLine = {
      custom_id: 'f',
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model: 'gatehouse/echo', messages: [{ role: 'user', content: 'private file' }] },
    };
    form.append('file', new Blob([`${JSON.stringify(fileLine)}\n`]), 'private.jsonl');
    const uploaded = await fetch(`${gw.url}/api/v1/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.apiKey}` },
      body: form,
    });
    expect(uploaded.status).toBe(200);
    const file = (await uploaded.json()) as { id: string };
    const stored = (await api('POST', '/responses', { model: 'gatehouse/echo', input: 'private turn' })).body;
    expect(stored.id).toMatch(/^resp_/);
    const conversation = (
      await api('POST', '/conversations', { items: [{ role: 'user', content: 'private conversation' }] })
    ).body;
    expect(conversation.id).toMatch(/^conv_/);
    const conversationItem = (await api('GET', `/conversations/${conversation.id}/items`)).body.data[0].id;
    const preset = await api('POST', '/presets/private-preset/chat/completions', {
      model: 'gatehouse/echo',
      messages: [{ role: 'system', content: 'private preset prompt' }],
    });
    expect(preset.status).toBe(200);
    const intern = (await api('POST', '/interns', { name: 'private-intern' })).body;
    expect(intern.id).toBeTruthy();
    const secret = await api('PUT', `/vault/interns/${intern.id}/secrets/private_token`, {
      value: 'sk-private-intern-secret',
      hosts: ['api.example.com'],
    });
    expect(secret.status).toBe(200);

    const ids: Record<string, string> = {
      '/guardrails/{id}': guardrail.id,
      '/byok/{id}': byok.id,
      '/observability/destinations/{id}': destination.id,
      '/workspaces/{id}': workspace.id,
      '/workspaces/{workspace_ref}': workspace.slug,
      '/keys/{hash}': key.hash,
      '/batches/{id}': batch.id,
      '/files/{id}': file.id,
      '/messages/batches/{id}': messageBatch.id,
      '/interns/{internId}': intern.id,
      '/vault/interns/{internId}': intern.id,
      '/responses/{id}': stored.id,
      '/conversations/{id}': conversation.id,
      '/presets/{slug}': 'private-preset',
    };
    const fill = (path: string) =>
      path
        .replace(
          /^\/(guardrails|byok|observability\/destinations|workspaces|keys|batches|messages\/batches|files|interns|vault\/interns|responses|conversations|presets)\/\{(\w+)\}/,
          (m) => (ids[m] !== undefined ? m.replace(/\{\w+\}/, ids[m]!) : m),
        )
        .replace('{interval}', 'monthly')
        .replace('{name}', 'private_token')
        .replace('{item_id}', conversationItem)
        .replace('{version}', '1');
    const bodies: Record<string, unknown> = {
      'PATCH /guardrails/{id}': { name: 'stolen' },
      'POST /guardrails/{id}/assignments/keys': { key_hashes: [key.hash] },
      'POST /guardrails/{id}/assignments/keys/remove': { key_hashes: [key.hash] },
      'POST /guardrails/{id}/assignments/members': { member_user_ids: [gw.ownerUserId] },
      'POST /guardrails/{id}/assignments/members/remove': { member_user_ids: [gw.ownerUserId] },
      'PATCH /byok/{id}': { name: 'stolen' },
      'PATCH /observability/destinations/{id}': { name: 'stolen' },
      'PATCH /workspaces/{id}': { name: 'stolen' },
      'POST /workspaces/{id}/members/add': { user_ids: [gw.ownerUserId] },
      'POST /workspaces/{id}/members/remove': { user_ids: [gw.ownerUserId] },
      'PUT /workspaces/{workspace_ref}/budgets/{interval}': { limit_usd: 1 },
      'PATCH /keys/{hash}': { name: 'stolen' },
      'PATCH /interns/{internId}': { name: 'stolen' },
      'POST /interns/{internId}/provision': undefined,
      'POST /interns/{internId}/suspend': undefined,
      'POST /interns/{internId}/chat/completions': {
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      },
      'PUT /vault/interns/{internId}/secrets/{name}': { value: 'overwritten', hosts: ['evil.example.com'] },
      'POST /vault/interns/{internId}/secrets/copy': { names: ['private_token'] },
      'POST /conversations/{id}': { metadata: { stolen: 'yes' } },
      'POST /conversations/{id}/items': { items: [{ role: 'user', content: 'injected' }] },
    };
    // API-key resources: the intruder (in the interns programme, so its 404 is not the programme's)
    // tries them with its API key. `/vault/secrets/{name}` names the caller's own workspace vault.
    const apiKeyRoutes =
      /^\/(batches|messages\/batches|files|interns|vault|responses|conversations|presets)\//;
    // Saving a preset names a slug in the caller's own workspace: another tenant saving the same
    // slug makes its own preset (test/presets.test.ts), so those routes are no object of the owner's.
    const ownScope = /^\/presets\/\{slug\}\/(chat\/completions|messages|responses)$/;

    const doc: any = await (await fetch(`${gw.url}/api/v1/openapi.json`)).json();
    const other = await makeOrganization(gw.url, `Intruder ${db}`, { internsProgramme: true });
    const theirs = client(gw.url, other.managementKey);
    // Batches are an API-key resource: the intruder tries them with its API key.
    const theirsApi = client(gw.url, other.apiKey);
    const tried: string[] = [];
    for (const [path, ops] of Object.entries<Record<string, unknown>>(doc.paths)) {
      // The catalog's routes name models, not objects of an organization.
      const catalog = /^\/(models?|images\/models)\//.test(path);
      // Video jobs are the media service's (this gateway runs without one): media-video-api.test.ts.
      const media = path.startsWith('/videos/');
      if (
        !path.includes('{') ||
        catalog ||
        media ||
        ownScope.test(path) ||
        path.startsWith('/admin') ||
        path.startsWith('/vault/secrets/')
      )
        continue;
      for (const method of Object.keys(ops).map((m) => m.toUpperCase())) {
        const route = `${method} ${path}`;
        const concrete = fill(path);
        expect(concrete, `no object id for ${route}`).not.toMatch(/\{/);
        const res = await (apiKeyRoutes.test(path) ? theirsApi : theirs)(
          method,
          concrete,
          route in bodies ? bodies[route] : method === 'GET' || method === 'DELETE' ? undefined : {},
        );
        expect(res.status, `${route} → ${res.status} ${res.text}`).toBe(404);
        expect(res.text).not.toContain('sk-private-provider-secret');
        expect(res.text).not.toContain('sk-private-intern-secret');
        expect(res.text).not.toContain('private conversation');
        expect(res.text).not.toContain('private file');
        expect(res.text).not.toContain('private preset prompt');
        tried.push(route);
      }
    }
    expect(tried.length).toBeGreaterThanOrEqual(20);

    // Kept generation content names its generation in the query: neither of the intruder's keys reads it.
    const apiWorkspace = (await api('GET', '/key')).body.data.workspace_id;
    await mine('PATCH', `/workspaces/${apiWorkspace}`, { content_logging: true });
    const generation = await api('POST', '/chat/completions', {
      model: 'gatehouse/echo',
      messages: [{ role: 'user', content: 'private content' }],
    });
    const generationId = generation.headers.get('x-gatehouse-generation-id');
    await vi.waitFor(async () => {
      await gw.services.contentLog.flush();
      expect((await api('GET', `/generation/content?id=${generationId}`)).status).toBe(200);
    });
    for (const as of [theirs, theirsApi]) {
      const res = await as('GET', `/generation/content?id=${generationId}`);
      expect(res.status).toBe(404);
      expect(res.text).not.toContain('private content');
    }
    // Nor does either send feedback on it (the id is in the body).
    for (const as of [theirs, theirsApi]) {
      const res = await as('POST', '/generation/feedback', {
        generation_id: generationId,
        category: 'other',
      });
      expect(res.status).toBe(404);
    }
    expect((await api('GET', `/generation?id=${generationId}`)).body.data.feedback).toEqual([]);

    // Nothing of the first organization changed.
    expect((await mine('GET', `/guardrails/${guardrail.id}`)).body.data.name).toBe('g');
    expect((await mine('GET', `/guardrails/${guardrail.id}/assignments/keys`)).body.total_count).toBe(1);
    expect((await mine('GET', `/byok/${byok.id}`)).body.data.name).toBeNull();
    expect((await mine('GET', `/workspaces/${workspace.id}`)).body.data.name).toBe('Private');
    expect((await mine('GET', `/workspaces/${workspace.id}/budgets/monthly`)).body.data.limit_usd).toBe(5);
    expect((await mine('GET', `/keys/${key.hash}`)).body.data.name).toBe('k');
    expect((await api('GET', `/responses/${stored.id}`)).status).toBe(200);
    expect((await api('GET', `/conversations/${conversation.id}`)).body.metadata).toEqual({});
    const conversationItems = (await api('GET', `/conversations/${conversation.id}/items`)).body.data;
    expect(conversationItems.map((i: { id: string }) => i.id)).toEqual([conversationItem]);
    const ours = await client(gw.url, gw.apiKey)('GET', `/batches/${batch.id}`);
    expect(ours.body.status).not.toMatch(/cancel/);
    expect((await theirsApi('GET', '/batches')).body.total_count).toBe(0);
    expect((await api('GET', `/files/${file.id}`)).status).toBe(200);
    expect((await api('GET', '/presets/private-preset')).body.data.designated_version.system_prompt).toBe(
      'private preset prompt',
    );
    expect((await theirsApi('GET', '/presets')).body.total_count).toBe(0);
    expect((await theirsApi('GET', '/files')).body.data).toEqual([]);
    const ourMessageBatch = await api('GET', `/messages/batches/${messageBatch.id}`);
    expect(ourMessageBatch.status).toBe(200);
    expect(ourMessageBatch.body.cancel_initiated_at).toBeNull();
    expect((await theirsApi('GET', '/messages/batches')).body.data).toEqual([]);
    const internNow = await api('GET', `/interns/${intern.id}`);
    expect(internNow.body).toMatchObject({ name: 'private-intern', status: 'stopped' });
    const secrets = (await api('GET', `/vault/interns/${intern.id}/secrets`)).body.data;
    expect(secrets.map((x: { name: string; hosts: string[] }) => [x.name, x.hosts])).toEqual([
      ['private_token', ['api.example.com']],
    ]);
    expect((await theirsApi('GET', '/interns')).body.data).toEqual([]);

    // And the other organization's lists show none of it.
    const lists = [
      '/guardrails',
      '/guardrails/assignments/keys',
      '/guardrails/assignments/members',
      '/byok',
      '/workspaces',
      '/keys',
      '/organization/members',
    ];
    for (const path of lists) {
      const res = await theirs('GET', path);
      expect(res.status, path).toBe(200);
      const text = JSON.stringify(res.body);
      for (const id of [guardrail.id, byok.id, workspace.id, key.hash, gw.ownerUserId])
        expect(text, path).not.toContain(id);
    }

    // The audit log: the other organization's holds its own refused attempts above (with the ids it
    // sent) and none of the first organization's events; and the first's holds none of those.
    const theirLog = (await theirs('GET', '/audit-log?limit=200')).body.data as any[];
    expect(theirLog.length).toBeGreaterThan(0);
    for (const e of theirLog) {
      expect(e.organization_id).toBe(other.organizationId);
      expect(e.actor.user_id).not.toBe(gw.ownerUserId);
    }
    expect(theirLog.some((e) => e.status === 404 && e.resource.id === guardrail.id)).toBe(true);
    expect(JSON.stringify(theirLog)).not.toContain('sk-private-provider-secret');
    expect(theirLog.map((e) => e.action)).not.toContain('byok.create');
    const myLog = (await mine('GET', '/audit-log?limit=200')).body.data as any[];
    expect(myLog.map((e) => e.organization_id)).toEqual(myLog.map(() => gw.organizationId));
    expect(myLog.some((e) => e.action === 'byok.create')).toBe(true);
    expect(myLog.some((e) => e.request?.name === 'stolen')).toBe(false);
  });
});
