import { OpenRouter } from '@openrouter/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { client, makeOrganization } from './support/http.js';

describe.each(databases)('API keys (%s)', (db) => {
  let gw: TestGateway;
  let sdk: OpenRouter;
  beforeAll(async () => {
    gw = await startTestGateway(db);
    sdk = new OpenRouter({
      serverURL: `${gw.url}/api/v1`,
      apiKey: gw.managementKey,
      retryConfig: { strategy: 'none' },
    });
  });
  afterAll(() => gw?.stop());

  it('creates a key shown once, stored as its SHA-256 hash, with a masked label', async () => {
    const created = await sdk.apiKeys.create({
      requestBody: { name: 'ci', limit: 10, limitReset: 'weekly' },
    });
    expect(created.key).toMatch(/^sk-gh-v1-[0-9a-f]{64}$/);
    const { createHash } = await import('node:crypto');
    expect(created.data.hash).toBe(createHash('sha256').update(created.key).digest('hex'));
    expect(created.data.label).not.toContain(created.key.slice(12, -3));
    expect(created.data.limit).toBe(10);
    expect(created.data.limitRemaining).toBe(10);
    expect(created.data.limitReset).toBe('weekly');
    expect(created.data.usage).toBe(0);

    const got = await sdk.apiKeys.get({ hash: created.data.hash });
    expect(got.data.name).toBe('ci');
    expect(JSON.stringify(got)).not.toContain(created.key);

    // The new key authenticates, and is an API key (not management).
    const asKey = new OpenRouter({
      serverURL: `${gw.url}/api/v1`,
      apiKey: created.key,
      retryConfig: { strategy: 'none' },
    });
    const current = await asKey.apiKeys.getCurrentKeyMetadata();
    expect(current.data.isManagementKey).toBe(false);
    expect(current.data.workspaceId).toBe(created.data.workspaceId);
    const forbidden = await client(gw.url, created.key)('GET', '/credits');
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toEqual({
      error: { code: 403, message: 'Only management keys can perform this operation' },
    });
  });

  it('updates, disables (the key stops working), lists and deletes keys', async () => {
    const call = client(gw.url, gw.managementKey);
    const { data, key } = await sdk.apiKeys.create({ requestBody: { name: 'to-disable' } });
    const updated = await sdk.apiKeys.update({
      hash: data.hash,
      requestBody: { name: 'renamed', disabled: true, limit: 3, includeByokInLimit: true },
    });
    expect(updated.data).toMatchObject({
      name: 'renamed',
      disabled: true,
      limit: 3,
      includeByokInLimit: true,
    });
    expect((await client(gw.url, key)('GET', '/key')).status).toBe(401);

    const listed = await sdk.apiKeys.list({});
    expect(listed.data.map((k) => k.hash)).not.toContain(data.hash);
    const withDisabled = await sdk.apiKeys.list({ includeDisabled: true });
    expect(withDisabled.data.map((k) => k.hash)).toContain(data.hash);

    // null clears the limit.
    const cleared = await call('PATCH', `/keys/${data.hash}`, { limit: null, limit_reset: null });
    expect(cleared.body.data.limit).toBeNull();
    expect(cleared.body.data.limit_remaining).toBeNull();

    expect(await sdk.apiKeys.delete({ hash: data.hash })).toEqual({ deleted: true });
    expect((await call('GET', `/keys/${data.hash}`)).status).toBe(404);
  });

  it('validates bodies and rejects expired or past expiry', async () => {
    const call = client(gw.url, gw.managementKey);
    expect((await call('POST', '/keys', {})).status).toBe(400);
    expect((await call('POST', '/keys', { name: 'x', limit_reset: 'hourly' })).status).toBe(400);
    expect((await call('POST', '/keys', { name: 'x', expires_at: '2001-01-01T00:00:00Z' })).status).toBe(400);
    expect((await call('POST', '/keys', { name: 'x', expires_at: '2030-01-01T00:00Z' })).status).toBe(400);
    const future = await sdk.apiKeys.create({
      requestBody: { name: 'exp', expiresAt: new Date('2030-01-01T00:00:00Z') },
    });
    expect(future.data.expiresAt?.toISOString()).toBe('2030-01-01T00:00:00.000Z');
  });

  it('answers every error in the standard envelope', async () => {
    const call = client(gw.url, gw.managementKey);
    const anon = client(gw.url);
    const cases = [
      [await anon('GET', '/keys'), 401],
      [await client(gw.url, 'sk-gh-v1-nope')('GET', '/keys'), 401],
      [await call('POST', '/keys', '{"name":'), 400],
      [await call('GET', '/nowhere'), 404],
      [await call('PUT', '/keys'), 405],
      [await call('POST', '/keys', JSON.stringify({ name: 'x'.repeat(2_000_000) })), 413],
      [await call('POST', '/keys', 'name=x', { 'content-type': 'application/x-www-form-urlencoded' }), 415],
      [await call('GET', `/keys/${'0'.repeat(64)}`), 404],
    ] as const;
    for (const [res, status] of cases) {
      expect(res.status).toBe(status);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.body).toEqual({ error: { code: status, message: expect.any(String) } });
    }
  });

  it('never shows one organization the keys of another (404, not 403)', async () => {
    const other = await makeOrganization(gw.url, `Org ${db}`);
    const mine = await sdk.apiKeys.create({ requestBody: { name: 'mine' } });
    const theirs = client(gw.url, other.managementKey);
    for (const [method, body] of [['GET'], ['PATCH', { name: 'x' }], ['DELETE']] as const) {
      const res = await theirs(method, `/keys/${mine.data.hash}`, body);
      expect(res.status).toBe(404);
    }
    const list = await theirs('GET', '/keys');
    expect(list.body.data.map((k: { hash: string }) => k.hash)).not.toContain(mine.data.hash);
    expect((await theirs('GET', `/keys?workspace_id=${mine.data.workspaceId}`)).status).toBe(400);
  });

  it('keeps keys across a restart', async () => {
    const { data } = await sdk.apiKeys.create({ requestBody: { name: 'durable' } });
    gw = await gw.restart();
    const again = await client(gw.url, gw.managementKey)('GET', `/keys/${data.hash}`);
    expect(again.status).toBe(200);
    expect(again.body.data.name).toBe('durable');
  });
});
