import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client, makeOrganization } from './support/http.js';

/** GET /keys/{hash}/effective-policy: what the gateway enforces on a key, as its managers see it. */
describe.each(databases)('effective policy of a key (%s)', (db) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(db);
  });
  afterAll(() => gw?.stop());

  it('is empty without guardrails, then combines the guardrails that reach the key', async () => {
    const mgmt = client(gw.url, gw.managementKey);
    const key = (await mgmt('POST', '/keys', { name: 'policy-key' })).body.data;
    const before = await mgmt('GET', `/keys/${key.hash}/effective-policy`);
    expect(before.status).toBe(200);
    expect(before.body.data).toMatchObject({
      key_hash: key.hash,
      guardrails: [],
      allowed_models: null,
      allowed_providers: null,
      budgets: [],
      content_filters: [],
      enforce_zdr: { anthropic: false, google: false, openai: false, xai: false, other: false },
      allow_training: { free_models: true, paid_models: true },
    });

    const strict = (
      await mgmt('POST', '/guardrails', {
        name: 'strict',
        allowed_models: ['anthropic/*', 'openai/gpt-4o'],
        ignored_providers: ['azure'],
        limit_usd: 5,
        reset_interval: 'monthly',
        rpm_limit: 30,
        enforce_zdr_openai: true,
        enable_paid_model_training: false,
        content_filter_builtins: [{ slug: 'email', action: 'redact' }],
      })
    ).body.data;
    const assigned = await mgmt('POST', `/guardrails/${strict.id}/assignments/keys`, {
      key_hashes: [key.hash],
    });
    expect(assigned.body).toEqual({ assigned_count: 1 });
    // The workspace's default guardrail narrows the model list further.
    const ws = (await mgmt('GET', `/workspaces/${key.workspace_id}`)).body.data;
    expect(
      (await mgmt('PATCH', `/guardrails/${ws.default_guardrail_id}`, { allowed_models: ['openai/gpt-4o'] }))
        .status,
    ).toBe(200);

    const after = (await mgmt('GET', `/keys/${key.hash}/effective-policy`)).body.data;
    expect(after.guardrails).toEqual([
      { id: strict.id, name: 'strict', via: ['key'] },
      { id: ws.default_guardrail_id, name: 'Default guardrail', via: ['default'] },
    ]);
    expect(after.allowed_models).toEqual(['openai/gpt-4o']);
    expect(after.ignored_providers).toEqual(['azure']);
    expect(after.enforce_zdr.openai).toBe(true);
    expect(after.allow_training).toEqual({ free_models: true, paid_models: false });
    expect(after.budgets).toEqual([
      {
        guardrail_id: strict.id,
        guardrail_name: 'strict',
        limit_usd: 5,
        reset_interval: 'monthly',
        include_byok: false,
        scope: 'key',
      },
    ]);
    expect(after.usage_limits).toEqual([
      {
        guardrail_id: strict.id,
        guardrail_name: 'strict',
        rpm_limit: 30,
        tpm_limit: null,
        concurrency_limit: null,
      },
    ]);
    expect(after.content_filters).toEqual([
      expect.objectContaining({ kind: 'builtin', action: 'redact', guardrail_id: strict.id }),
    ]);

    // Unassigned: the key's own guardrail no longer counts, at once.
    await mgmt('POST', `/guardrails/${strict.id}/assignments/keys/remove`, { key_hashes: [key.hash] });
    const unassigned = (await mgmt('GET', `/keys/${key.hash}/effective-policy`)).body.data;
    expect(unassigned.guardrails.map((g: { name: string }) => g.name)).toEqual(['Default guardrail']);
    expect(unassigned.budgets).toEqual([]);
  });

  it('is 404 for an unknown hash or another organization’s key, and refused to an API key', async () => {
    const mgmt = client(gw.url, gw.managementKey);
    const unknown = await mgmt('GET', `/keys/${'0'.repeat(64)}/effective-policy`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.message).toMatch(/Key/);
    expect((await mgmt('GET', '/keys/not-a-hash/effective-policy')).status).toBe(404);
    const other = await makeOrganization(gw.url, `Other ${db}`);
    const theirKey = (await client(gw.url, other.managementKey)('POST', '/keys', { name: 'theirs' })).body
      .data;
    expect((await mgmt('GET', `/keys/${theirKey.hash}/effective-policy`)).status).toBe(404);
    // An API key may not read it.
    expect((await client(gw.url, gw.apiKey)('GET', `/keys/${theirKey.hash}/effective-policy`)).status).toBe(
      403,
    );
    expect((await adminClient(gw.url)('GET', `/keys/${theirKey.hash}/effective-policy`)).status).not.toBe(
      200,
    );
  });
});
