import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { OpenRouter } from '@openrouter/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decrypt, encrypt, sha256Hex } from '../src/lib/crypto.js';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client, makeOrganization } from './support/http.js';

/** A provider-looking secret; its middle part (never in the masked label) must appear nowhere. */
const newSecret = () => `sk-proj-${randomBytes(24).toString('hex')}`;
const hidden = (secret: string) => secret.slice(12, -3);

const WIRE_KEYS = [
  'allowed_api_key_hashes',
  'allowed_models',
  'allowed_user_ids',
  'created_at',
  'declared_zdr',
  'disabled',
  'id',
  'is_byok_only',
  'is_fallback',
  'is_required',
  'label',
  'name',
  'provider',
  'sort_order',
  'updated_at',
  'weight',
  'workspace_id',
];

describe('BYOK secret sealing (unit)', () => {
  const masterKey = randomBytes(32);
  const idA = '11111111-1111-4111-8111-111111111111';
  const idB = '22222222-2222-4222-8222-222222222222';

  it('opens only under the same master key and the same credential id (AAD)', () => {
    const sealed = encrypt(masterKey, 'sk-secret-value', idA);
    expect(sealed).not.toContain('sk-secret-value');
    expect(decrypt(masterKey, sealed, idA)).toBe('sk-secret-value');
    expect(() => decrypt(masterKey, sealed, idB)).toThrow();
    expect(() => decrypt(randomBytes(32), sealed, idA)).toThrow();
    const [v, iv, tag, body] = sealed.split('.');
    const flipped = Buffer.from(body!, 'base64');
    flipped[0] = (flipped[0] ?? 0) ^ 1;
    expect(() => decrypt(masterKey, [v, iv, tag, flipped.toString('base64')].join('.'), idA)).toThrow();
  });
});

describe.each(databases)('BYOK provider credentials (%s)', (db) => {
  let gw: TestGateway;
  let sdk: OpenRouter;
  const logLines: string[] = [];
  /** Every secret sent in this suite; none may ever appear in a log line. */
  const secrets: string[] = [];
  const secret = () => {
    const s = newSecret();
    secrets.push(s);
    return s;
  };
  const call = () => client(gw.url, gw.managementKey);
  const expectNoSecret = (text: string, s: string) => {
    expect(text).not.toContain(s);
    expect(text).not.toContain(hidden(s));
  };
  const storedRow = (id: string) =>
    gw.services.db.selectFrom('byok_credentials').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  beforeAll(async () => {
    const logStream = new Writable({
      write(chunk, _enc, done) {
        logLines.push(...chunk.toString().split('\n').filter(Boolean));
        done();
      },
    });
    gw = await startTestGateway(db, { logStream });
    sdk = new OpenRouter({
      serverURL: `${gw.url}/api/v1`,
      apiKey: gw.managementKey,
      retryConfig: { strategy: 'none' },
    });
  });
  afterAll(() => gw?.stop());

  it('round-trips through the official SDK (its response validation passes)', async () => {
    const key = secret();
    const created = await sdk.byok.create({
      createBYOKKeyRequest: {
        provider: 'openai',
        key,
        name: 'prod openai',
        declaredZdr: true,
        allowedModels: ['openai/gpt-4o'],
        allowedApiKeyHashes: [sha256Hex(gw.apiKey)],
        allowedUserIds: [gw.ownerUserId],
      },
    });
    expect(created.data).toMatchObject({
      provider: 'openai',
      name: 'prod openai',
      disabled: false,
      isFallback: false,
      isByokOnly: false,
      isRequired: false,
      declaredZdr: true,
      sortOrder: 0,
      allowedModels: ['openai/gpt-4o'],
      allowedApiKeyHashes: [sha256Hex(gw.apiKey)],
      allowedUserIds: [gw.ownerUserId],
    });
    expect(created.data.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.data.label).toBe(`${key.slice(0, 12)}...${key.slice(-3)}`);
    const ws = await client(gw.url, gw.apiKey)('GET', '/key');
    expect(created.data.workspaceId).toBe(ws.body.data.workspace_id);

    const got = await sdk.byok.get({ id: created.data.id });
    expect(got.data).toEqual(created.data);

    const listed = await sdk.byok.list({ provider: 'openai' });
    expect(listed.result.totalCount).toBe(1);
    expect(listed.result.data[0]).toEqual(created.data);

    const updated = await sdk.byok.update({
      id: created.data.id,
      updateBYOKKeyRequest: {
        name: null,
        disabled: true,
        isFallback: true,
        isRequired: true,
        declaredZdr: null,
        allowedModels: null,
        allowedApiKeyHashes: null,
        allowedUserIds: null,
      },
    });
    expect(updated.data).toMatchObject({
      disabled: true,
      isFallback: true,
      isRequired: true,
      declaredZdr: null,
      allowedModels: null,
      allowedApiKeyHashes: null,
      allowedUserIds: null,
      label: created.data.label,
    });
    expect(updated.data.name ?? null).toBeNull();

    expect(await sdk.byok.delete({ id: created.data.id })).toEqual({ deleted: true });
    await expect(sdk.byok.get({ id: created.data.id })).rejects.toMatchObject({ statusCode: 404 });
  });

  it('answers the exact wire shape: every key present, nullable ones as null', async () => {
    const res = await call()('POST', '/byok', { provider: 'anthropic', key: secret() });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(['data']);
    expect(Object.keys(res.body.data).sort()).toEqual(WIRE_KEYS);
    expect(res.body.data).toMatchObject({
      name: null,
      declared_zdr: null,
      allowed_api_key_hashes: null,
      allowed_models: null,
      allowed_user_ids: null,
      disabled: false,
      is_fallback: false,
      is_byok_only: false,
      is_required: false,
      sort_order: 0,
      weight: 1,
    });
    expect(res.body.data.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it('never returns the secret: create, get, list, update, delete and error bodies', async () => {
    const key = secret();
    const c = call();
    const created = await c('POST', '/byok', { provider: 'mistral', key, name: 'm' });
    expect(created.status).toBe(201);
    const id = created.body.data.id;
    const rotated = secret();
    const bodies = [
      created,
      await c('GET', `/byok/${id}`),
      await c('GET', '/byok'),
      await c('GET', '/byok?provider=mistral'),
      await c('PATCH', `/byok/${id}`, { name: 'n' }),
      await c('PATCH', `/byok/${id}`, { key: rotated }),
    ];
    // Failing requests carrying a secret, in every body field that could plausibly be echoed.
    const s = secret();
    // In the URL a value is request metadata: it is logged with the request line (so not registered
    // for the log check below), but must not be echoed in the response either.
    const u = newSecret();
    const failing = [
      await c('POST', '/byok', { provider: 'no-such-provider', key: s }),
      await c('POST', '/byok', { provider: s, key: 'openai' }),
      await c('POST', '/byok', { provider: 'openai', key: s, workspace_id: s }),
      await c('POST', '/byok', { provider: 'openai', key: s, is_fallback: true, is_byok_only: true }),
      await c('POST', '/byok', { provider: 'openai', key: s, allowed_api_key_hashes: [s] }),
      await c('POST', '/byok', { provider: 'openai', key: s, allowed_user_ids: [s] }),
      await c('POST', '/byok', { provider: 'openai', key: s, sort_order: -1 }),
      await c('POST', '/byok', { provider: 'openai', key: s, disabled: 'maybe' }),
      await c('POST', '/byok', { provider: 'openai', key: s, name: '   ' }),
      await c('POST', '/byok', `{"provider":"openai","key":"${s}",`),
      await c('POST', '/byok', { key: s }),
      await c('PATCH', `/byok/${id}`, { key: s, is_fallback: true, is_byok_only: true }),
      await c('PATCH', `/byok/${id}`, { key: s, allowed_api_key_hashes: [] }),
      await c('PATCH', `/byok/${crypto.randomUUID()}`, { key: s }),
      await c('PATCH', `/byok/${u}`, { key: s }),
      await c('GET', `/byok?workspace_id=${u}`),
      await c('GET', `/byok?provider=${u}`),
      await client(gw.url, gw.apiKey)('POST', '/byok', { provider: 'openai', key: s }),
    ];
    expect(failing.map((r) => r.status)).toEqual([
      400, 400, 400, 400, 400, 400, 400, 400, 400, 400, 400, 400, 400, 404, 404, 400, 400, 403,
    ]);
    for (const r of failing) {
      expect(r.body).toEqual({ error: { code: r.status, message: expect.any(String) } });
      expectNoSecret(r.text, s);
      expectNoSecret(r.text, u);
    }
    bodies.push(await c('DELETE', `/byok/${id}`));
    for (const r of bodies) {
      expect(r.status).toBe(200 + (r === created ? 1 : 0));
      expectNoSecret(r.text, key);
      expectNoSecret(r.text, rotated);
    }
  });

  it('stores only ciphertext, which opens under the master key bound to the credential id', async () => {
    const key = secret();
    const { data } = await sdk.byok.create({ createBYOKKeyRequest: { provider: 'deepseek', key } });
    const row = await storedRow(data.id);
    expect(row.secret_ciphertext).toBeTruthy();
    expect(row.secret_ciphertext).not.toContain(key);
    expect(row.secret_ciphertext).not.toContain(hidden(key));
    expect(row.secret_ciphertext).not.toContain(Buffer.from(key).toString('base64').slice(0, 20));
    for (const [col, value] of Object.entries(row)) {
      if (typeof value === 'string') expect(value, col).not.toContain(hidden(key));
    }
    expect(decrypt(gw.services.config.masterKey, row.secret_ciphertext!, data.id)).toBe(key);
    expect(await gw.services.byok.secretFor(gw.organizationId, data.id)).toBe(key);

    // Bound to its row: a ciphertext moved onto another credential does not open there.
    const other = await sdk.byok.create({ createBYOKKeyRequest: { provider: 'deepseek', key: secret() } });
    await gw.services.db
      .updateTable('byok_credentials')
      .set({ secret_ciphertext: row.secret_ciphertext })
      .where('id', '=', other.data.id)
      .execute();
    await expect(gw.services.byok.secretFor(gw.organizationId, other.data.id)).rejects.toThrow(
      /cannot be decrypted/,
    );
    await expect(gw.services.byok.secretFor(gw.organizationId, crypto.randomUUID())).rejects.toMatchObject({
      status: 404,
    });
  });

  it('rotates the secret in place with PATCH key (new label, new ciphertext, same id)', async () => {
    const first = secret();
    const { data } = await sdk.byok.create({ createBYOKKeyRequest: { provider: 'together', key: first } });
    const before = await storedRow(data.id);
    const second = secret();
    const updated = await sdk.byok.update({ id: data.id, updateBYOKKeyRequest: { key: second } });
    expect(updated.data.id).toBe(data.id);
    expect(updated.data.label).not.toBe(data.label);
    expect(updated.data.label).toBe(`${second.slice(0, 12)}...${second.slice(-3)}`);
    const after = await storedRow(data.id);
    expect(after.secret_ciphertext).not.toBe(before.secret_ciphertext);
    expect(await gw.services.byok.secretFor(gw.organizationId, data.id)).toBe(second);
    // Other fields untouched by a rotation.
    expect({ ...updated.data, label: data.label }).toEqual(data);
  });

  it('validates provider, is_byok_only with is_fallback, sort_order and key', async () => {
    const c = call();
    const unknown = await c('POST', '/byok', { provider: 'not-a-provider', key: secret() });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.message).toMatch(/provider/);
    await expect(
      sdk.byok.create({ createBYOKKeyRequest: { provider: 'nope' as any, key: secret() } }),
    ).rejects.toMatchObject({ statusCode: 400 });
    expect((await c('POST', '/byok', { provider: 'openai' })).status).toBe(400);
    expect((await c('POST', '/byok', { provider: 'openai', key: '' })).status).toBe(400);
    expect((await c('POST', '/byok', { provider: 'openai', key: '   ' })).status).toBe(400);
    expect((await c('POST', '/byok', { provider: 'openai', key: secret(), sort_order: 1.5 })).status).toBe(
      400,
    );

    const both = await c('POST', '/byok', {
      provider: 'openai',
      key: secret(),
      is_fallback: true,
      is_byok_only: true,
    });
    expect(both.status).toBe(400);
    expect(both.body.error.message).toMatch(/is_byok_only/);

    // The conflict is checked on the resulting state of an update.
    const fb = await c('POST', '/byok', { provider: 'cohere', key: secret(), is_fallback: true });
    expect(fb.status).toBe(201);
    expect((await c('PATCH', `/byok/${fb.body.data.id}`, { is_byok_only: true })).status).toBe(400);
    const switched = await c('PATCH', `/byok/${fb.body.data.id}`, { is_byok_only: true, is_fallback: false });
    expect(switched.status).toBe(200);
    expect(switched.body.data).toMatchObject({ is_byok_only: true, is_fallback: false });
    expect((await c('PATCH', `/byok/${fb.body.data.id}`, { is_fallback: true })).status).toBe(400);
    expect((await c('PATCH', `/byok/${fb.body.data.id}`, { sort_order: -1 })).status).toBe(400);
    expect((await c('PATCH', `/byok/${fb.body.data.id}`, { key: '' })).status).toBe(400);
  });

  it('stores a weight per credential (default 1): set on create, changed on update, whole numbers from 1', async () => {
    const c = call();
    const heavy = await c('POST', '/byok', { provider: 'openai', key: secret(), weight: 5 });
    expect(heavy.status, heavy.text).toBe(201);
    expect(heavy.body.data.weight).toBe(5);
    const id = heavy.body.data.id;
    expect((await c('GET', `/byok/${id}`)).body.data.weight).toBe(5);
    const changed = await c('PATCH', `/byok/${id}`, { weight: 2 });
    expect(changed.status).toBe(200);
    expect(changed.body.data.weight).toBe(2);
    expect((await c('GET', `/byok/${id}`)).body.data.weight).toBe(2);
    for (const weight of [0, -1, 1.5, 'heavy', 1_000_001]) {
      expect((await c('POST', '/byok', { provider: 'openai', key: secret(), weight })).status).toBe(400);
      expect((await c('PATCH', `/byok/${id}`, { weight })).status).toBe(400);
    }
    expect((await c('GET', `/byok/${id}`)).body.data.weight).toBe(2);
  });

  it('accepts only API keys and members of this organization in the allowed_* lists', async () => {
    const c = call();
    const other = await makeOrganization(gw.url, `Allow ${db}`);
    const own = sha256Hex(gw.apiKey);
    const cases: [Record<string, unknown>, number][] = [
      [{ allowed_api_key_hashes: [own] }, 201],
      [{ allowed_api_key_hashes: [sha256Hex(other.apiKey)] }, 400],
      [{ allowed_api_key_hashes: [own, sha256Hex(other.apiKey)] }, 400],
      [{ allowed_api_key_hashes: ['0'.repeat(64)] }, 400],
      [{ allowed_api_key_hashes: [sha256Hex(gw.managementKey)] }, 400],
      [{ allowed_api_key_hashes: [] }, 400],
      [{ allowed_api_key_hashes: null }, 201],
      [{ allowed_user_ids: [gw.ownerUserId] }, 201],
      [{ allowed_user_ids: [other.userId] }, 400],
      [{ allowed_user_ids: ['nobody'] }, 400],
      [{ allowed_models: ['openai/gpt-4o', 'openai/gpt-4o'] }, 201],
      [{ allowed_models: [''] }, 400],
    ];
    for (const [fields, status] of cases) {
      const res = await c('POST', '/byok', { provider: 'fireworks', key: secret(), ...fields });
      expect(res.status, JSON.stringify(fields)).toBe(status);
      if (status === 400) expect(res.body.error.message).toMatch(/allowed_/);
    }
    const deduped = await c('GET', '/byok?provider=fireworks&limit=100');
    expect(deduped.body.data.at(-1).allowed_models).toEqual(['openai/gpt-4o']);

    // Same rules on update; null clears.
    const id = deduped.body.data[0].id;
    expect(
      (await c('PATCH', `/byok/${id}`, { allowed_api_key_hashes: [sha256Hex(other.apiKey)] })).status,
    ).toBe(400);
    expect((await c('PATCH', `/byok/${id}`, { allowed_user_ids: [other.userId] })).status).toBe(400);
    const set = await c('PATCH', `/byok/${id}`, { allowed_api_key_hashes: [own], allowed_models: ['m'] });
    expect(set.body.data).toMatchObject({ allowed_api_key_hashes: [own], allowed_models: ['m'] });
    const cleared = await c('PATCH', `/byok/${id}`, { allowed_api_key_hashes: null, allowed_models: null });
    expect(cleared.body.data).toMatchObject({ allowed_api_key_hashes: null, allowed_models: null });
  });

  it('pages, filters by provider and orders by provider, sort_order, created_at', async () => {
    const c = call();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await c('POST', '/byok', { provider: 'groq', key: secret(), name: `g${i}` });
      expect(res.body.data.sort_order).toBe(i);
      ids.push(res.body.data.id);
    }
    // An explicit sort_order places it; the next default goes after the largest.
    const explicit = await c('POST', '/byok', { provider: 'groq', key: secret(), sort_order: 10 });
    expect(explicit.body.data.sort_order).toBe(10);
    const after = await c('POST', '/byok', { provider: 'groq', key: secret() });
    expect(after.body.data.sort_order).toBe(11);
    const first = await c('POST', '/byok', { provider: 'groq', key: secret(), sort_order: 0 });
    // Ties on sort_order fall back to created_at.
    const expected = [ids[0], first.body.data.id, ids[1], ids[2], explicit.body.data.id, after.body.data.id];

    const all = await c('GET', '/byok?provider=groq');
    expect(all.status).toBe(200);
    expect(all.body.total_count).toBe(6);
    expect(all.body.data.map((k: { id: string }) => k.id)).toEqual(expected);

    const one = await c('GET', '/byok?provider=groq&limit=1&offset=2');
    expect(one.body.data.map((k: { id: string }) => k.id)).toEqual([expected[2]]);
    expect(one.body.total_count).toBe(6);
    const past = await c('GET', '/byok?provider=groq&offset=50');
    expect(past.body).toEqual({ data: [], total_count: 6 });
    expect((await c('GET', '/byok?provider=groq&limit=100')).body.data).toHaveLength(6);
    for (const q of [
      'limit=0',
      'limit=101',
      'offset=-1',
      'limit=abc',
      'provider=nope',
      'workspace_id=nope',
    ]) {
      const res = await c('GET', `/byok?${q}`);
      expect(res.status, q).toBe(400);
    }
    // The default workspace by slug is the default.
    const bySlug = await c('GET', '/byok?provider=groq&workspace_id=default');
    expect(bySlug.body.total_count).toBe(6);

    // The SDK's offset iterator walks every page.
    const pages = await sdk.byok.list({ provider: 'groq', limit: 4 });
    const seen: string[] = [];
    for await (const page of pages) seen.push(...page.result.data.map((k) => k.id));
    expect(seen).toEqual(expected);

    // Unfiltered: ordered by provider first.
    const everything = await c('GET', '/byok?limit=100');
    const providers = everything.body.data.map((k: { provider: string }) => k.provider);
    const firstGroq = providers.indexOf('groq');
    expect(providers.slice(firstGroq, firstGroq + 6)).toEqual(Array(6).fill('groq'));
    expect(everything.body.total_count).toBe(everything.body.data.length);
  });

  it('soft-deletes: wiped material, then 404 everywhere and absent from lists', async () => {
    const c = call();
    const { data } = await sdk.byok.create({ createBYOKKeyRequest: { provider: 'xai', key: secret() } });
    expect(await sdk.byok.delete({ id: data.id })).toEqual({ deleted: true });
    const row = await storedRow(data.id);
    expect(row.secret_ciphertext).toBeNull();
    expect(row.deleted_at).toBeTruthy();
    for (const [method, body] of [['GET'], ['PATCH', { name: 'x' }], ['DELETE']] as const) {
      const res = await c(method, `/byok/${data.id}`, body);
      expect(res.status, method).toBe(404);
      expect(res.body).toEqual({ error: { code: 404, message: 'BYOK credential not found' } });
    }
    const list = await c('GET', '/byok?provider=xai');
    expect(list.body).toEqual({ data: [], total_count: 0 });
    await expect(gw.services.byok.secretFor(gw.organizationId, data.id)).rejects.toMatchObject({
      status: 404,
    });
    // A new credential for the same provider starts the order afresh.
    const next = await sdk.byok.create({ createBYOKKeyRequest: { provider: 'xai', key: secret() } });
    expect(next.data.sortOrder).toBe(0);
  });

  it('never shows one organization the credentials of another (404, not 403)', async () => {
    const other = await makeOrganization(gw.url, `BYOK ${db}`);
    const mine = await sdk.byok.create({ createBYOKKeyRequest: { provider: 'perplexity', key: secret() } });
    const theirs = client(gw.url, other.managementKey);
    for (const [method, body] of [['GET'], ['PATCH', { name: 'x' }], ['DELETE']] as const) {
      const res = await theirs(method, `/byok/${mine.data.id}`, body);
      expect(res.status, method).toBe(404);
    }
    const list = await theirs('GET', '/byok?limit=100');
    expect(list.body).toEqual({ data: [], total_count: 0 });
    expect((await theirs('GET', `/byok?workspace_id=${mine.data.workspaceId}`)).status).toBe(400);
    expect(
      (
        await theirs('POST', '/byok', {
          provider: 'openai',
          key: secret(),
          workspace_id: mine.data.workspaceId,
        })
      ).status,
    ).toBe(400);
    await expect(gw.services.byok.secretFor(other.organizationId, mine.data.id)).rejects.toMatchObject({
      status: 404,
    });
    // Their own credential lands in their default workspace and is invisible to us.
    const own = await theirs('POST', '/byok', { provider: 'perplexity', key: secret() });
    expect(own.status).toBe(201);
    expect(own.body.data.workspace_id).toBe(other.workspaceId);
    expect(own.body.data.sort_order).toBe(0);
    expect((await call()('GET', `/byok/${own.body.data.id}`)).status).toBe(404);
    // Still intact for us after their attempts.
    expect((await sdk.byok.get({ id: mine.data.id })).data).toEqual(mine.data);
  });

  it('requires a management key', async () => {
    expect((await client(gw.url)('GET', '/byok')).status).toBe(401);
    expect((await client(gw.url, gw.apiKey)('GET', '/byok')).status).toBe(403);
  });

  it('keeps credentials, and their decryptability, across a restart', async () => {
    const key = secret();
    const { data } = await sdk.byok.create({
      createBYOKKeyRequest: { provider: 'nebius', key, name: 'durable' },
    });
    gw = await gw.restart();
    const again = await client(gw.url, gw.managementKey)('GET', `/byok/${data.id}`);
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ name: 'durable', label: data.label, provider: 'nebius' });
    expect(await gw.services.byok.secretFor(gw.organizationId, data.id)).toBe(key);
  });

  it('logs no secret, from any request of this suite, successful or failing', async () => {
    // A fresh failing request with the secret in the body, then the whole log.
    const key = secret();
    const res = await client(gw.url, gw.managementKey)('POST', '/byok', {
      provider: 'openai',
      key,
      is_fallback: true,
      is_byok_only: true,
    });
    expect(res.status).toBe(400);
    await adminClient(gw.url)('GET', '/admin/organizations');
    await new Promise((r) => setTimeout(r, 50));
    expect(logLines.length).toBeGreaterThan(10);
    expect(logLines.some((l) => l.includes('"url":"/api/v1/byok"'))).toBe(true);
    expect(secrets.length).toBeGreaterThan(20);
    for (const s of secrets) {
      for (const line of logLines) {
        expect(line).not.toContain(s);
        expect(line).not.toContain(hidden(s));
      }
    }
  });
});
