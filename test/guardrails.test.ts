import { OpenRouter } from '@openrouter/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultGuardrailId } from '../src/lib/ids.js';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { client, makeOrganization } from './support/http.js';

/** Every key of the extended Guardrail object, as sent over the wire. */
const EXTENDED_KEYS = [
  'allowed_data_regions',
  'allowed_models',
  'allowed_providers',
  'concurrency_limit',
  'content_filter_builtins',
  'content_filters',
  'created_at',
  'description',
  'enable_free_model_publication',
  'enable_free_model_training',
  'enable_paid_model_training',
  'enforce_zdr',
  'enforce_zdr_anthropic',
  'enforce_zdr_google',
  'enforce_zdr_openai',
  'enforce_zdr_other',
  'enforce_zdr_xai',
  'id',
  'ignored_models',
  'ignored_providers',
  'include_byok_in_budgets',
  'limit_usd',
  'name',
  'reset_interval',
  'rpm_limit',
  'tpm_limit',
  'updated_at',
  'workspace_id',
];

const sdkFor = (gw: TestGateway, apiKey = gw.managementKey) =>
  new OpenRouter({ serverURL: `${gw.url}/api/v1`, apiKey, retryConfig: { strategy: 'none' } });

describe.each(databases)('Guardrails (%s)', (db) => {
  let gw: TestGateway;
  let sdk: OpenRouter;
  let workspaceId: string;
  beforeAll(async () => {
    gw = await startTestGateway(db);
    sdk = sdkFor(gw);
    workspaceId = (await sdk.apiKeys.getCurrentKeyMetadata()).data.workspaceId!;
  });
  afterAll(() => gw?.stop());

  it('creates, gets, lists, updates and deletes through the official client', async () => {
    const created = await sdk.guardrails.create({
      createGuardrailRequest: {
        name: 'Production policy',
        description: 'Keeps prod safe',
        limitUsd: 25,
        resetInterval: 'monthly',
        allowedDataRegions: ['europe', 'us'],
        allowedModels: ['openai/gpt-4o', 'anthropic/claude-sonnet-4'],
        allowedProviders: ['openai', 'anthropic'],
        ignoredModels: ['meta-llama/llama-3-8b'],
        ignoredProviders: ['together'],
        contentFilters: [
          { pattern: '\\bproject-x\\b', action: 'redact', label: 'Code name' },
          { pattern: 'a+b', action: 'flag' },
        ],
        contentFilterBuiltins: [
          { slug: 'email', action: 'redact', label: 'ignored on input' },
          { slug: 'regex-prompt-injection', action: 'block' },
          { slug: 'secrets', action: 'block', scanScope: 'user_only' },
        ],
        includeByokInBudgets: true,
        enableFreeModelTraining: true,
      },
    });
    const g = created.data;
    expect(g).toMatchObject({
      name: 'Production policy',
      description: 'Keeps prod safe',
      workspaceId,
      limitUsd: 25,
      resetInterval: 'monthly',
      allowedDataRegions: ['europe', 'us'],
      allowedModels: ['openai/gpt-4o', 'anthropic/claude-sonnet-4'],
      allowedProviders: ['openai', 'anthropic'],
      ignoredModels: ['meta-llama/llama-3-8b'],
      ignoredProviders: ['together'],
      contentFilters: [
        { pattern: '\\bproject-x\\b', action: 'redact', label: 'Code name' },
        { pattern: 'a+b', action: 'flag', label: null },
      ],
      contentFilterBuiltins: [
        { slug: 'email', action: 'redact', label: 'Email addresses' },
        {
          slug: 'regex-prompt-injection',
          action: 'block',
          label: 'Prompt injection',
          scanScope: 'all_messages',
        },
        { slug: 'secrets', action: 'block', label: 'Secrets and credentials' },
      ],
      includeByokInBudgets: true,
      enableFreeModelTraining: true,
      enableFreeModelPublication: false,
      enablePaidModelTraining: false,
      enforceZdr: null,
      enforceZdrOpenai: false,
    });
    expect(g.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(Date.parse(g.createdAt)).not.toBeNaN();

    // On the wire: the full extended form; builtin label/scan_scope omitted rather than null.
    const raw = await client(gw.url, gw.managementKey)('GET', `/guardrails/${g.id}`);
    expect(raw.status).toBe(200);
    expect(Object.keys(raw.body.data).sort()).toEqual(EXTENDED_KEYS);
    expect(raw.body.data.content_filter_builtins[0]).toEqual({
      slug: 'email',
      action: 'redact',
      label: 'Email addresses',
    });
    expect(raw.body.data.content_filter_builtins[2]).not.toHaveProperty('scan_scope');

    expect((await sdk.guardrails.get({ id: g.id })).data).toEqual(g);

    const listed = await sdk.guardrails.list({});
    expect(listed.result.data.map((x) => x.id)).toContain(g.id);
    expect(listed.result.totalCount).toBeGreaterThanOrEqual(1);

    const updated = await sdk.guardrails.update({
      id: g.id,
      updateGuardrailRequest: { name: 'Renamed', limitUsd: 40, includeByokInBudgets: false },
    });
    expect(updated.data).toMatchObject({
      name: 'Renamed',
      limitUsd: 40,
      resetInterval: 'monthly',
      includeByokInBudgets: false,
      allowedProviders: ['openai', 'anthropic'],
      createdAt: g.createdAt,
    });

    expect(await sdk.guardrails.delete({ id: g.id })).toEqual({ deleted: true });
    const gone = await client(gw.url, gw.managementKey)('GET', `/guardrails/${g.id}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ error: { code: 404, message: 'Guardrail not found' } });
    expect((await client(gw.url, gw.managementKey)('DELETE', `/guardrails/${g.id}`)).status).toBe(404);
  });

  it('creates a minimal guardrail with every nullable field present as null', async () => {
    const call = client(gw.url, gw.managementKey);
    const res = await call('POST', '/guardrails', { name: 'Bare' });
    expect(res.status).toBe(201);
    expect(res.body.data).toEqual({
      id: expect.any(String),
      workspace_id: workspaceId,
      name: 'Bare',
      description: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
      limit_usd: null,
      reset_interval: null,
      allowed_data_regions: null,
      allowed_models: null,
      allowed_providers: null,
      ignored_models: null,
      ignored_providers: null,
      include_byok_in_budgets: false,
      rpm_limit: null,
      tpm_limit: null,
      concurrency_limit: null,
      content_filters: null,
      content_filter_builtins: null,
      enable_free_model_publication: false,
      enable_free_model_training: false,
      enable_paid_model_training: false,
      enforce_zdr: null,
      enforce_zdr_anthropic: false,
      enforce_zdr_google: false,
      enforce_zdr_openai: false,
      enforce_zdr_other: false,
      enforce_zdr_xai: false,
    });
    // Both budget halves null together is fine.
    expect(
      (await call('POST', '/guardrails', { name: 'x', limit_usd: null, reset_interval: null })).status,
    ).toBe(201);
  });

  it('copies enforce_zdr into the per-vendor flags the same request leaves out', async () => {
    const created = await sdk.guardrails.create({
      createGuardrailRequest: { name: 'zdr', enforceZdr: true, enforceZdrOpenai: false },
    });
    expect(created.data).toMatchObject({
      enforceZdr: true,
      enforceZdrAnthropic: true,
      enforceZdrGoogle: true,
      enforceZdrOpenai: false,
      enforceZdrOther: true,
      enforceZdrXai: true,
    });
    const patched = await sdk.guardrails.update({
      id: created.data.id,
      updateGuardrailRequest: { enforceZdr: false, enforceZdrXai: true },
    });
    expect(patched.data).toMatchObject({
      enforceZdr: false,
      enforceZdrAnthropic: false,
      enforceZdrGoogle: false,
      enforceZdrOpenai: false,
      enforceZdrOther: false,
      enforceZdrXai: true,
    });
    // A patch without enforce_zdr leaves every flag alone; a per-vendor flag changes only itself.
    const renamed = await sdk.guardrails.update({
      id: created.data.id,
      updateGuardrailRequest: { name: 'zdr 2', enforceZdrGoogle: true },
    });
    expect(renamed.data).toMatchObject({
      enforceZdr: false,
      enforceZdrAnthropic: false,
      enforceZdrGoogle: true,
      enforceZdrXai: true,
    });
  });

  it('replaces lists wholesale, clears with null and leaves absent fields alone on PATCH', async () => {
    const call = client(gw.url, gw.managementKey);
    const { body } = await call('POST', '/guardrails', {
      name: 'lists',
      description: 'd',
      allowed_models: ['a/one', 'a/two'],
      allowed_providers: ['openai'],
      content_filters: [{ pattern: 'x', action: 'block' }],
      content_filter_builtins: [{ slug: 'phone', action: 'flag' }],
      allowed_data_regions: ['global'],
    });
    const id = body.data.id;
    const replaced = await call('PATCH', `/guardrails/${id}`, {
      allowed_models: ['b/three'],
      content_filter_builtins: [{ slug: 'ssn', action: 'redact' }],
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body.data).toMatchObject({
      name: 'lists',
      description: 'd',
      allowed_models: ['b/three'],
      allowed_providers: ['openai'],
      content_filters: [{ pattern: 'x', action: 'block', label: null }],
      content_filter_builtins: [{ slug: 'ssn', action: 'redact', label: 'Social Security numbers' }],
      allowed_data_regions: ['global'],
    });
    const cleared = await call('PATCH', `/guardrails/${id}`, {
      description: null,
      allowed_models: null,
      content_filters: null,
      content_filter_builtins: null,
      allowed_data_regions: null,
    });
    expect(cleared.body.data).toMatchObject({
      description: null,
      allowed_models: null,
      content_filters: null,
      content_filter_builtins: null,
      allowed_data_regions: null,
      allowed_providers: ['openai'],
    });
    // An empty list is kept as an empty list (not null).
    const empty = await call('PATCH', `/guardrails/${id}`, { allowed_providers: [] });
    expect(empty.body.data.allowed_providers).toEqual([]);
    expect(Date.parse(empty.body.data.updated_at)).toBeGreaterThanOrEqual(Date.parse(body.data.created_at));
  });

  it('rejects invalid guardrails with 400 naming the problem', async () => {
    const call = client(gw.url, gw.managementKey);
    const bad = async (method: string, path: string, payload: unknown, pattern?: RegExp) => {
      const res = await call(method, path, payload);
      expect(res.status, JSON.stringify(payload)).toBe(400);
      expect(res.body).toEqual({
        error: {
          code: 400,
          message: expect.any(String),
          ...(res.body.error.metadata ? { metadata: expect.any(Object) } : {}),
        },
      });
      if (pattern) expect(res.body.error.message).toMatch(pattern);
      return res;
    };
    await bad('POST', '/guardrails', {});
    await bad('POST', '/guardrails', { name: '' });
    await bad('POST', '/guardrails', { name: '   ' }, /name/);
    await bad('POST', '/guardrails', { name: 'x', limit_usd: 10 }, /limit_usd and reset_interval/);
    await bad('POST', '/guardrails', { name: 'x', reset_interval: 'daily' }, /limit_usd and reset_interval/);
    await bad('POST', '/guardrails', { name: 'x', limit_usd: 10, reset_interval: null }, /together/);
    await bad('POST', '/guardrails', { name: 'x', limit_usd: 10, reset_interval: 'hourly' });
    await bad('POST', '/guardrails', { name: 'x', limit_usd: -1, reset_interval: 'daily' });
    const slug = await bad(
      'POST',
      '/guardrails',
      { name: 'x', allowed_providers: ['openai', 'not-a-provider'] },
      /not-a-provider/,
    );
    expect(slug.body.error.message).not.toMatch(/openai,/);
    await bad(
      'POST',
      '/guardrails',
      { name: 'x', ignored_providers: ['nope-ai'] },
      /ignored_providers.*nope-ai/,
    );
    await bad(
      'POST',
      '/guardrails',
      { name: 'x', content_filters: [{ pattern: '(unclosed', action: 'block' }] },
      /content_filters\[0\]\.pattern/,
    );
    await bad('POST', '/guardrails', { name: 'x', content_filters: [{ pattern: 'a', action: 'shout' }] });
    await bad('POST', '/guardrails', {
      name: 'x',
      content_filter_builtins: [{ slug: 'dna', action: 'block' }],
    });
    await bad('POST', '/guardrails', {
      name: 'x',
      content_filter_builtins: [
        { slug: 'regex-prompt-injection', action: 'block', scan_scope: 'everything' },
      ],
    });
    await bad('POST', '/guardrails', {
      name: 'x',
      content_filter_builtins: [
        { slug: 'email', action: 'block' },
        { slug: 'email', action: 'flag' },
      ],
    });
    await bad('POST', '/guardrails', { name: 'x', allowed_data_regions: ['mars'] });
    await bad('POST', '/guardrails', { name: 'x', workspace_id: 'no-such-workspace' }, /workspace/);

    // PATCH checks the budget on the merged guardrail; a failed patch changes nothing.
    const { body } = await call('POST', '/guardrails', {
      name: 'budget',
      limit_usd: 5,
      reset_interval: 'weekly',
    });
    const id = body.data.id;
    await bad('PATCH', `/guardrails/${id}`, { reset_interval: null }, /together/);
    await bad('PATCH', `/guardrails/${id}`, { name: '' });
    await bad('PATCH', `/guardrails/${id}`, { allowed_providers: ['bogus'] }, /bogus/);
    const after = await call('GET', `/guardrails/${id}`);
    expect(after.body.data).toMatchObject({ name: 'budget', limit_usd: 5, reset_interval: 'weekly' });
    const onlyLimit = await call('PATCH', `/guardrails/${id}`, { limit_usd: 7.5 });
    expect(onlyLimit.body.data).toMatchObject({ limit_usd: 7.5, reset_interval: 'weekly' });
    const bothCleared = await call('PATCH', `/guardrails/${id}`, { limit_usd: null, reset_interval: null });
    expect(bothCleared.body.data).toMatchObject({ limit_usd: null, reset_interval: null });
  });

  it("materialises a workspace's default guardrail on PATCH", async () => {
    const call = client(gw.url, gw.managementKey);
    const id = defaultGuardrailId(workspaceId);
    expect((await call('GET', `/guardrails/${id}`)).status).toBe(404);
    // A patch that fails validation does not materialise it.
    expect((await call('PATCH', `/guardrails/${id}`, { limit_usd: 1 })).status).toBe(400);
    expect((await call('GET', `/guardrails/${id}`)).status).toBe(404);
    // Another organization cannot materialise it.
    const other = await makeOrganization(gw.url, `Default grabber ${db}`);
    expect(
      (await client(gw.url, other.managementKey)('PATCH', `/guardrails/${id}`, { name: 'mine' })).status,
    ).toBe(404);

    const made = await sdk.guardrails.update({
      id,
      updateGuardrailRequest: { limitUsd: 100, resetInterval: 'daily' },
    });
    expect(made.data).toMatchObject({
      id,
      name: 'Default guardrail',
      workspaceId,
      limitUsd: 100,
      resetInterval: 'daily',
    });
    expect((await sdk.guardrails.get({ id })).data.limitUsd).toBe(100);
    const again = await sdk.guardrails.update({ id, updateGuardrailRequest: { name: 'House rules' } });
    expect(again.data).toMatchObject({ id, name: 'House rules', limitUsd: 100 });
    const listed = await call('GET', '/guardrails?limit=100');
    expect(listed.body.data.filter((g: { id: string }) => g.id === id)).toHaveLength(1);

    // Deleting it returns it to its unmaterialised state; the next PATCH creates it afresh.
    expect((await call('DELETE', `/guardrails/${id}`)).status).toBe(200);
    expect((await call('GET', `/guardrails/${id}`)).status).toBe(404);
    const fresh = await call('PATCH', `/guardrails/${id}`, {});
    expect(fresh.status).toBe(200);
    expect(fresh.body.data).toMatchObject({ name: 'Default guardrail', limit_usd: null });
    // Unknown ids that are not default-guardrail ids stay 404.
    expect(
      (await call('PATCH', '/guardrails/00000000-0000-4000-8000-000000000000', { name: 'x' })).status,
    ).toBe(404);
  });

  it('lists a workspace by UUID or slug, with offset/limit pagination and total_count', async () => {
    // A fresh organization gives exact counts.
    const org = await makeOrganization(gw.url, `Pager ${db}`);
    const call = client(gw.url, org.managementKey);
    const ids: string[] = [];
    for (const name of ['g1', 'g2', 'g3']) {
      const res = await call('POST', '/guardrails', { name });
      expect(res.status).toBe(201);
      ids.push(res.body.data.id);
    }
    const all = await call('GET', '/guardrails');
    expect(all.body).toEqual({ data: expect.any(Array), total_count: 3 });
    expect(all.body.data.map((g: { id: string }) => g.id)).toEqual(ids);
    for (const ref of [org.workspaceId, 'default']) {
      const byRef = await call('GET', `/guardrails?workspace_id=${ref}`);
      expect(byRef.body.total_count).toBe(3);
    }
    const page = async (q: string) => (await call('GET', `/guardrails?${q}`)).body;
    expect(await page('offset=3')).toEqual({ data: [], total_count: 3 });
    expect(await page('offset=50&limit=10')).toEqual({ data: [], total_count: 3 });
    const one = await page('offset=1&limit=1');
    expect(one.data.map((g: { id: string }) => g.id)).toEqual([ids[1]]);
    expect(one.total_count).toBe(3);
    expect((await page('limit=100')).data).toHaveLength(3);
    for (const q of ['limit=0', 'limit=101', 'offset=-1', 'limit=abc', 'workspace_id=nowhere']) {
      const res = await call('GET', `/guardrails?${q}`);
      expect(res.status, q).toBe(400);
      expect(res.body.error.code).toBe(400);
    }

    // The official client's iterator walks the pages.
    const orgSdk = sdkFor(gw, org.managementKey);
    const seen: string[] = [];
    for await (const p of await orgSdk.guardrails.list({ limit: 2 })) {
      seen.push(...p.result.data.map((g) => g.id));
      expect(p.result.totalCount).toBe(3);
    }
    expect(seen).toEqual(ids);
  });

  it('creates guardrails in a named workspace', async () => {
    const call = client(gw.url, gw.managementKey);
    const ws = await call('POST', '/workspaces', { name: `Team ${db}`, slug: `team-${db}` });
    expect(ws.status).toBe(201);
    const created = await call('POST', '/guardrails', { name: 'team rail', workspace_id: `team-${db}` });
    expect(created.status).toBe(201);
    expect(created.body.data.workspace_id).toBe(ws.body.data.id);
    const inTeam = await call('GET', `/guardrails?workspace_id=${ws.body.data.id}`);
    expect(inTeam.body).toEqual({ data: [created.body.data], total_count: 1 });
    const inDefault = await call('GET', '/guardrails?limit=100');
    expect(inDefault.body.data.map((g: { id: string }) => g.id)).not.toContain(created.body.data.id);
  });

  it("never shows one organization another's guardrails (404)", async () => {
    const other = await makeOrganization(gw.url, `Snoop ${db}`);
    const mine = await sdk.guardrails.create({ createGuardrailRequest: { name: 'private' } });
    const theirs = client(gw.url, other.managementKey);
    for (const [method, body] of [['GET'], ['PATCH', { name: 'x' }], ['DELETE']] as const) {
      const res = await theirs(method, `/guardrails/${mine.data.id}`, body);
      expect(res.status, method).toBe(404);
      expect(res.body).toEqual({ error: { code: 404, message: 'Guardrail not found' } });
    }
    const list = await theirs('GET', '/guardrails?limit=100');
    expect(list.body.data.map((g: { id: string }) => g.id)).not.toContain(mine.data.id);
    expect((await theirs('GET', `/guardrails?workspace_id=${workspaceId}`)).status).toBe(400);
    expect((await theirs('POST', '/guardrails', { name: 'x', workspace_id: workspaceId })).status).toBe(400);
    expect((await sdk.guardrails.get({ id: mine.data.id })).data.name).toBe('private');
  });

  it('requires a management key', async () => {
    expect((await client(gw.url)('GET', '/guardrails')).status).toBe(401);
    const asApi = await client(gw.url, gw.apiKey)('POST', '/guardrails', { name: 'x' });
    expect(asApi.status).toBe(403);
    expect(asApi.body.error.code).toBe(403);
  });

  it('keeps guardrails across a restart', async () => {
    const { data } = await sdk.guardrails.create({
      createGuardrailRequest: {
        name: 'durable',
        limitUsd: 3,
        resetInterval: 'weekly',
        contentFilterBuiltins: [{ slug: 'regex-prompt-injection', action: 'flag', scanScope: 'user_only' }],
      },
    });
    gw = await gw.restart();
    sdk = sdkFor(gw);
    const again = await sdk.guardrails.get({ id: data.id });
    expect(again.data).toEqual(data);
    expect(again.data.contentFilterBuiltins).toEqual([
      { slug: 'regex-prompt-injection', action: 'flag', label: 'Prompt injection', scanScope: 'user_only' },
    ]);
  });
});
