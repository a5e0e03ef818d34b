import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { Writable } from 'node:stream';
import { OpenRouter } from '@openrouter/sdk';
import { HTTPClient } from '@openrouter/sdk/lib/http.js';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InternStatus } from '../src/db/schema.js';
import { decrypt, sha256Hex } from '../src/lib/crypto.js';
import { secretAad } from '../src/vault/service.js';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client, type JsonResponse } from './support/http.js';

/** The SDK's VaultSecret datetime rule (zod iso.datetime({offset:true})). */
const STRICT_DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;
const SECRET_KEYS = ['created_at', 'fingerprint', 'hosts', 'name'];
const REGIONAL = 'eu.example.test';

type Call = ReturnType<typeof client>;

describe.each(databases)('vault API (%s)', (db) => {
  let gw: TestGateway;
  let call: Call;
  let workspaceId: string;
  /** Every secret value sent by this suite: none may appear in any response body or log line. */
  const values: string[] = [];
  const bodies: string[] = [];
  const logLines: string[] = [];

  const secret = (prefix = 'vault-secret') => {
    const v = `${prefix}-${randomBytes(16).toString('hex')}`;
    values.push(v);
    return v;
  };

  /** A JSON client whose every response body is kept for the final no-leak check. */
  const recorded =
    (key?: string): Call =>
    async (method, path, body, headers) => {
      const res = await client(gw.url, key)(method, path, body, headers);
      bodies.push(res.text);
      return res;
    };

  /** A request with a chosen Host header (fetch does not let one be set). */
  const withHost = (host: string, key: string, method: string, path: string, body?: unknown) =>
    new Promise<JsonResponse>((resolve, reject) => {
      const url = new URL(`${gw.url}/api/v1${path}`);
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = httpRequest(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname + url.search,
          method,
          headers: {
            host,
            authorization: `Bearer ${key}`,
            ...(payload ? { 'content-type': 'application/json' } : {}),
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c) => {
            text += c;
          });
          res.on('end', () => {
            bodies.push(text);
            resolve({
              status: res.statusCode ?? 0,
              headers: new Headers(res.headers as Record<string, string>),
              body: text ? JSON.parse(text) : null,
              text,
            });
          });
        },
      );
      req.on('error', reject);
      req.end(payload);
    });

  /** A new organization whose owner (in the programme unless told) has an API and a management key. */
  async function tenant(opts: { programme?: boolean } = {}) {
    const admin = adminClient(gw.url);
    const org = await admin('POST', '/admin/organizations', {
      name: `vault-${randomBytes(4).toString('hex')}`,
    });
    const user = await admin('POST', '/admin/users', {
      email: `v-${randomBytes(6).toString('hex')}@example.com`,
      organization_id: org.body.data.id,
      role: 'owner',
      interns_programme: opts.programme ?? true,
    });
    expect(user.status).toBe(201);
    const api = await admin('POST', '/admin/keys', { name: 'api', user_id: user.body.data.id });
    const mgmt = await admin('POST', '/admin/keys', {
      name: 'mgmt',
      user_id: user.body.data.id,
      management: true,
    });
    return {
      organizationId: org.body.data.id as string,
      workspaceId: org.body.data.default_workspace_id as string,
      userId: user.body.data.id as string,
      apiKey: api.body.key as string,
      managementKey: mgmt.body.key as string,
      call: recorded(api.body.key),
    };
  }

  /** An intern row written directly (the interns API is built elsewhere), with its private vault. */
  async function intern(
    opts: {
      workspaceId?: string;
      organizationId?: string;
      status?: InternStatus;
      vault?: boolean;
      attachedVaultId?: string | null;
    } = {},
  ) {
    const id = randomUUID();
    const now = new Date().toISOString();
    const ws = opts.workspaceId ?? workspaceId;
    await gw.services.db
      .insertInto('interns')
      .values({
        id,
        organization_id: opts.organizationId ?? gw.organizationId,
        workspace_id: ws,
        creator_user_id: gw.ownerUserId,
        owner_key_hash: sha256Hex(gw.apiKey),
        name: `v${randomBytes(5).toString('hex')}`,
        description: null,
        instructions: null,
        model: null,
        status: opts.status ?? 'stopped',
        last_failure_message: null,
        progress_step: null,
        progress_total: null,
        progress_label: null,
        hostname: null,
        vault_id: null,
        attached_vault_id: opts.attachedVaultId ?? null,
        provisioned_model: null,
        created_at: now,
        updated_at: now,
      })
      .execute();
    let vaultId: string | null = null;
    if (opts.vault ?? true) {
      vaultId = await gw.services.vault.createInternVault(ws, id);
      await gw.services.db.updateTable('interns').set({ vault_id: vaultId }).where('id', '=', id).execute();
    }
    return { id, vaultId: vaultId as string };
  }

  const storedRows = (vaultId: string) =>
    gw.services.db.selectFrom('vault_secrets').selectAll().where('vault_id', '=', vaultId).execute();
  const storedRow = (vaultId: string, name: string) =>
    gw.services.db
      .selectFrom('vault_secrets')
      .selectAll()
      .where('vault_id', '=', vaultId)
      .where('name', '=', name)
      .executeTakeFirstOrThrow();
  const workspaceVaults = (ws: string) =>
    gw.services.db
      .selectFrom('vaults')
      .selectAll()
      .where('workspace_id', '=', ws)
      .where('owner_intern_id', 'is', null)
      .execute();
  /**
   * The fingerprint a value must have in a vault: hex HMAC-SHA-256 under the vault's own key of
   * [name, writer, value]: writer `user:<id>` of the member behind the key, or `copy-of:<source
   * fingerprint>` for a copy.
   */
  const expectedFingerprint = async (vaultId: string, name: string, writer: string, value: string) => {
    const vault = await gw.services.db
      .selectFrom('vaults')
      .selectAll()
      .where('id', '=', vaultId)
      .executeTakeFirstOrThrow();
    const key = Buffer.from(
      decrypt(gw.services.config.masterKey, vault.hmac_key_sealed, `vault-key:${vaultId}`),
      'base64',
    );
    return createHmac('sha256', key)
      .update(JSON.stringify([name, writer, value]))
      .digest('hex');
  };
  const expectError = (res: JsonResponse, status: number, message?: RegExp | string) => {
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.body.error.code).toBe(status);
    expect(typeof res.body.error.message).toBe('string');
    if (message !== undefined) expect(res.body.error.message).toMatch(message);
  };
  const put = (c: Call, path: string, value: string, hosts: string[] = ['api.example.com']) =>
    c('PUT', path, { value, hosts });

  beforeAll(async () => {
    const logStream = new Writable({
      write(chunk, _enc, done) {
        logLines.push(...chunk.toString().split('\n').filter(Boolean));
        done();
      },
    });
    // This suite writes far more than a member may in a minute; the write limit has its own suite.
    gw = await startTestGateway(db, {
      env: { GATEHOUSE_REGIONAL_HOSTS: REGIONAL, GATEHOUSE_VAULT_WRITE_LIMIT: '100000' },
      logStream,
    });
    call = recorded(gw.apiKey);
    workspaceId = (await call('GET', '/key')).body.data.workspace_id;
  });
  afterAll(() => gw?.stop());

  it('round-trips through the official SDK (its response validation passes)', async () => {
    const t = await tenant();
    const s = new OpenRouter({
      serverURL: `${gw.url}/api/v1`,
      apiKey: t.apiKey,
      retryConfig: { strategy: 'none' },
      httpClient: new HTTPClient({
        fetcher: async (input, init) => {
          const res = await fetch(input, init);
          bodies.push(await res.clone().text());
          return res;
        },
      }),
    });
    const value = secret();
    const stored = await s.vault.storeVaultSecret({
      name: 'sdk_token',
      vaultSecretWriteRequest: { value, hosts: ['API.Example.com.'] },
    });
    expect(stored.data).toMatchObject({ name: 'sdk_token', hosts: ['api.example.com'] });
    expect(stored.data.createdAt).toBeInstanceOf(Date);
    expect(stored.data.fingerprint).toMatch(/^[0-9a-f]{64}$/);

    const listed = await s.vault.listVaultSecrets({ limit: 10, offset: 0 });
    expect(listed.data.map((x) => x.name)).toEqual(['sdk_token']);
    expect(listed.hasMore).toBe(false);

    const i = await intern({ workspaceId: t.workspaceId, organizationId: t.organizationId });
    const copied = await s.vault.copyVaultSecretsToIntern({
      internId: i.id,
      vaultSecretCopyRequest: { names: ['sdk_token'] },
    });
    expect(copied.data).toHaveLength(1);
    expect(copied.data[0]?.fingerprint).not.toBe(stored.data.fingerprint);
    const own = await s.vault.storeInternVaultSecret({
      internId: i.id,
      name: 'own',
      vaultSecretWriteRequest: { value: secret(), hosts: ['10.0.0.1'] },
    });
    expect(own.data.hosts).toEqual(['10.0.0.1']);
    const internList = await s.vault.listInternVaultSecrets({ internId: i.id });
    expect(internList.data.map((x) => x.name)).toEqual(['own', 'sdk_token']);
    await s.vault.deleteInternVaultSecret({ internId: i.id, name: 'own' });
    await s.vault.deleteVaultSecret({ name: 'sdk_token' });
    expect((await s.vault.listVaultSecrets()).data).toEqual([]);
  });

  it('creates the workspace vault lazily, once, with no owner', async () => {
    const t = await tenant();
    const empty = await t.call('GET', '/vault/secrets');
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ data: [], has_more: false });
    expect(await workspaceVaults(t.workspaceId)).toHaveLength(0);

    const results = await Promise.all(
      ['one', 'two', 'three', 'four'].map((name) => put(t.call, `/vault/secrets/${name}`, secret())),
    );
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    const vaults = await workspaceVaults(t.workspaceId);
    expect(vaults).toHaveLength(1);
    expect(vaults[0]?.owner_intern_id).toBeNull();
    expect((await storedRows(vaults[0]!.id)).map((r) => r.name).sort()).toEqual([
      'four',
      'one',
      'three',
      'two',
    ]);
  });

  it('PUT creates and replaces a workspace secret: metadata only, hosts normalized, created_at kept', async () => {
    const value = secret();
    const created = await put(call, '/vault/secrets/openai_key', value, [
      'API.OpenAI.com',
      'api.openai.com.',
      'localhost',
      '127.0.0.1',
      'LOCALHOST.',
    ]);
    expect(created.status).toBe(200);
    expect(Object.keys(created.body)).toEqual(['data']);
    expect(Object.keys(created.body.data).sort()).toEqual(SECRET_KEYS);
    expect(created.body.data).toMatchObject({
      name: 'openai_key',
      hosts: ['api.openai.com', 'localhost', '127.0.0.1'],
    });
    expect(created.body.data.created_at).toMatch(STRICT_DATETIME);
    expect(created.body.data.fingerprint).toMatch(/^[0-9a-f]{64}$/);

    await new Promise((r) => setTimeout(r, 5));
    const replaced = await put(call, '/vault/secrets/openai_key', secret(), ['other.example.com']);
    expect(replaced.status).toBe(200);
    expect(replaced.body.data.hosts).toEqual(['other.example.com']);
    expect(replaced.body.data.created_at).toBe(created.body.data.created_at);
    expect(replaced.body.data.fingerprint).not.toBe(created.body.data.fingerprint);

    const listed = await call('GET', '/vault/secrets');
    expect(listed.body.data.filter((s: any) => s.name === 'openai_key')).toEqual([replaced.body.data]);
  });

  it('seals values at rest, bound to vault and name; never stores plaintext', async () => {
    const value = secret();
    expect((await put(call, '/vault/secrets/sealed_one', value)).status).toBe(200);
    const [vault] = await workspaceVaults(workspaceId);
    const row = await storedRow(vault!.id, 'sealed_one');
    expect(row.value_sealed).not.toContain(value);
    expect(row.value_sealed).not.toContain(Buffer.from(value).toString('base64'));
    expect(JSON.stringify(row)).not.toContain(value);
    expect(row.value_sealed.startsWith('v1.')).toBe(true);
    const { masterKey } = gw.services.config;
    expect(decrypt(masterKey, row.value_sealed, secretAad(vault!.id, 'sealed_one'))).toBe(value);
    expect(() => decrypt(masterKey, row.value_sealed, secretAad(vault!.id, 'other'))).toThrow();
    expect(JSON.parse(row.hosts_json!)).toEqual(['api.example.com']);
  });

  it('fingerprints: HMAC under the vault key of name, writer and value; stable when the same member rewrites', async () => {
    const value = secret();
    const a = await put(call, '/vault/secrets/fp_a', value);
    const b = await put(call, '/vault/secrets/fp_b', value, ['x.example.com']);
    const again = await put(call, '/vault/secrets/fp_a', value, ['y.example.com']);
    const other = await put(call, '/vault/secrets/fp_c', secret());
    // The same value under another name does not reproduce a secret's fingerprint.
    expect(b.body.data.fingerprint).not.toBe(a.body.data.fingerprint);
    expect(again.body.data.fingerprint).toBe(a.body.data.fingerprint);
    expect(other.body.data.fingerprint).not.toBe(a.body.data.fingerprint);
    const [vault] = await workspaceVaults(workspaceId);
    expect(a.body.data.fingerprint).toBe(
      await expectedFingerprint(vault!.id, 'fp_a', `user:${gw.ownerUserId}`, value),
    );
    expect(a.body.data.fingerprint).not.toBe(sha256Hex(value));

    // The same value in an intern's vault, and in another workspace's vault, fingerprints otherwise.
    const i = await intern();
    const inIntern = await put(call, `/vault/interns/${i.id}/secrets/fp_a`, value);
    expect(inIntern.status).toBe(200);
    expect(inIntern.body.data.fingerprint).toBe(
      await expectedFingerprint(i.vaultId, 'fp_a', `user:${gw.ownerUserId}`, value),
    );
    expect(inIntern.body.data.fingerprint).not.toBe(a.body.data.fingerprint);
    const t = await tenant();
    const elsewhere = await put(t.call, '/vault/secrets/fp_a', value);
    expect(elsewhere.body.data.fingerprint).not.toBe(a.body.data.fingerprint);
  });

  it('allow_http and ports: stored, shown only when set, copied into an intern vault; bad values 400', async () => {
    const t = await tenant();
    const plain = await put(t.call, '/vault/secrets/tls_only', secret());
    expect(Object.keys(plain.body.data).sort()).toEqual(SECRET_KEYS);
    const open = await t.call('PUT', '/vault/secrets/plain_http', {
      value: secret(),
      hosts: ['legacy.example'],
      allow_http: true,
      ports: [8443, 8080, 8443],
    });
    expect(open.status).toBe(200);
    expect(open.body.data).toMatchObject({ name: 'plain_http', allow_http: true, ports: [8080, 8443] });
    const [vault] = await workspaceVaults(t.workspaceId);
    expect(await storedRow(vault!.id, 'plain_http')).toMatchObject({
      allow_http: 1,
      ports_json: '[8080,8443]',
    });
    // allow_http false and no ports are the default, and not shown.
    const closed = await t.call('PUT', '/vault/secrets/plain_http', {
      value: secret(),
      hosts: ['legacy.example'],
      allow_http: false,
      ports: [],
    });
    expect(Object.keys(closed.body.data).sort()).toEqual(SECRET_KEYS);
    await t.call('PUT', '/vault/secrets/plain_http', {
      value: secret(),
      hosts: ['a.example'],
      allow_http: true,
    });

    const i = await intern({ workspaceId: t.workspaceId, organizationId: t.organizationId });
    const copied = await t.call('POST', `/vault/interns/${i.id}/secrets/copy`, { names: ['plain_http'] });
    expect(copied.body.data[0]).toMatchObject({ allow_http: true });
    expect(copied.body.data[0].ports).toBeUndefined();

    const bad: [unknown, string][] = [
      [{ allow_http: 'yes' }, 'allow_http must be true or false'],
      [{ ports: [0] }, 'ports[0] must be an integer from 1 to 65535'],
      [{ ports: [443, 65_536] }, 'ports[1] must be an integer from 1 to 65535'],
      [{ ports: [80.5] }, 'ports[0] must be an integer from 1 to 65535'],
      [{ ports: '8080' }, 'ports must be an array of at most 20 port numbers'],
      [
        { ports: Array.from({ length: 21 }, (_, n) => 8000 + n) },
        'ports must be an array of at most 20 port numbers',
      ],
    ];
    for (const [extra, message] of bad) {
      expectError(
        await t.call('PUT', '/vault/secrets/bad_transport', {
          value: secret(),
          hosts: ['a.example'],
          ...(extra as object),
        }),
        400,
        message,
      );
    }
  });

  it('lists by name (byte order) with limit, offset and has_more', async () => {
    const t = await tenant();
    const names = ['b', 'ab', 'a_b', 'a1', 'a', 'z9_x'];
    for (const name of names)
      expect((await put(t.call, `/vault/secrets/${name}`, secret())).status).toBe(200);
    const sorted = ['a', 'a1', 'a_b', 'ab', 'b', 'z9_x'];

    const all = await t.call('GET', '/vault/secrets');
    expect(all.body.data.map((s: any) => s.name)).toEqual(sorted);
    expect(all.body.has_more).toBe(false);
    for (const s of all.body.data) {
      expect(Object.keys(s).sort()).toEqual(SECRET_KEYS);
      expect(s.created_at).toMatch(STRICT_DATETIME);
    }

    const p1 = await t.call('GET', '/vault/secrets?limit=4');
    expect(p1.body.data.map((s: any) => s.name)).toEqual(sorted.slice(0, 4));
    expect(p1.body.has_more).toBe(true);
    const p2 = await t.call('GET', '/vault/secrets?limit=4&offset=4');
    expect(p2.body.data.map((s: any) => s.name)).toEqual(sorted.slice(4));
    expect(p2.body.has_more).toBe(false);
    const exact = await t.call('GET', '/vault/secrets?limit=6');
    expect(exact.body.has_more).toBe(false);
    const under = await t.call('GET', '/vault/secrets?limit=5');
    expect(under.body.has_more).toBe(true);
    const past = await t.call('GET', '/vault/secrets?offset=10000');
    expect(past.body).toEqual({ data: [], has_more: false });
    const bounds = await t.call('GET', '/vault/secrets?limit=100&offset=0');
    expect(bounds.status).toBe(200);

    for (const q of [
      'limit=0',
      'limit=101',
      'limit=abc',
      'limit=1.5',
      'offset=-1',
      'offset=10001',
      'offset=x',
    ]) {
      const res = await t.call('GET', `/vault/secrets?${q}`);
      expectError(res, 400, q.startsWith('limit') ? /limit must be an integer from 1 to 100/ : /offset/);
    }
  });

  it('defaults to 100 secrets per page', async () => {
    const t = await tenant();
    for (let i = 0; i < 101; i += 20) {
      const batch = Array.from(
        { length: Math.min(20, 101 - i) },
        (_, j) => `s${String(i + j).padStart(3, '0')}`,
      );
      const res = await Promise.all(batch.map((name) => put(t.call, `/vault/secrets/${name}`, secret())));
      expect(res.every((r) => r.status === 200)).toBe(true);
    }
    const first = await t.call('GET', '/vault/secrets');
    expect(first.body.data).toHaveLength(100);
    expect(first.body.has_more).toBe(true);
    const second = await t.call('GET', '/vault/secrets?offset=100');
    expect(second.body.data.map((s: any) => s.name)).toEqual(['s100']);
    expect(second.body.has_more).toBe(false);
  });

  it('DELETE answers 204 with no body, then 404', async () => {
    expect((await put(call, '/vault/secrets/to_delete', secret())).status).toBe(200);
    const res = await call('DELETE', '/vault/secrets/to_delete');
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    const listed = await call('GET', '/vault/secrets');
    expect(listed.body.data.map((s: any) => s.name)).not.toContain('to_delete');
    expectError(await call('DELETE', '/vault/secrets/to_delete'), 404, 'Secret to_delete not found');
    expectError(await call('DELETE', '/vault/secrets/never_was'), 404);
    // A tenant without a workspace vault yet: 404, and no vault is made.
    const t = await tenant();
    expectError(await t.call('DELETE', '/vault/secrets/nothing'), 404);
    expect(await workspaceVaults(t.workspaceId)).toHaveLength(0);
  });

  it('keeps workspaces apart: a key sees and deletes only its own workspace secrets', async () => {
    const t = await tenant();
    expect((await put(t.call, '/vault/secrets/shared_name', secret())).status).toBe(200);
    expect((await put(call, '/vault/secrets/shared_name', secret())).status).toBe(200);
    expect((await call('DELETE', '/vault/secrets/shared_name')).status).toBe(204);
    const theirs = await t.call('GET', '/vault/secrets');
    expect(theirs.body.data.map((s: any) => s.name)).toEqual(['shared_name']);
  });

  describe('intern vaults', () => {
    it('lists, writes and deletes in the intern own vault only', async () => {
      const i = await intern();
      expectError(await call('DELETE', `/vault/interns/${i.id}/secrets/absent`), 404);
      expect((await call('GET', `/vault/interns/${i.id}/secrets`)).body).toEqual({
        data: [],
        has_more: false,
      });
      const value = secret();
      const created = await put(call, `/vault/interns/${i.id}/secrets/github_token`, value, [
        'API.GitHub.com.',
      ]);
      expect(created.status).toBe(200);
      expect(Object.keys(created.body.data).sort()).toEqual(SECRET_KEYS);
      expect(created.body.data).toMatchObject({ name: 'github_token', hosts: ['api.github.com'] });
      expect(created.body.data.created_at).toMatch(STRICT_DATETIME);
      const row = await storedRow(i.vaultId, 'github_token');
      expect(row.value_sealed).not.toContain(value);
      expect(
        decrypt(gw.services.config.masterKey, row.value_sealed, secretAad(i.vaultId, 'github_token')),
      ).toBe(value);

      const replaced = await put(call, `/vault/interns/${i.id}/secrets/github_token`, value, [
        'x.example.com',
      ]);
      expect(replaced.body.data.created_at).toBe(created.body.data.created_at);
      expect(replaced.body.data.fingerprint).toBe(created.body.data.fingerprint);

      // Uppercase UUIDs name the same intern.
      const upper = await call('GET', `/vault/interns/${i.id.toUpperCase()}/secrets?limit=1`);
      expect(upper.body).toEqual({ data: [replaced.body.data], has_more: false });
      // Nothing leaked into the workspace vault.
      const ws = await call('GET', '/vault/secrets?limit=100');
      expect(ws.body.data.map((s: any) => s.name)).not.toContain('github_token');

      const del = await call('DELETE', `/vault/interns/${i.id}/secrets/github_token`);
      expect(del.status).toBe(204);
      expect(del.text).toBe('');
      expectError(await call('DELETE', `/vault/interns/${i.id}/secrets/github_token`), 404);
    });

    it('paginates an intern vault', async () => {
      const i = await intern();
      for (const name of ['c', 'a', 'b']) await put(call, `/vault/interns/${i.id}/secrets/${name}`, secret());
      const p1 = await call('GET', `/vault/interns/${i.id}/secrets?limit=2`);
      expect(p1.body.data.map((s: any) => s.name)).toEqual(['a', 'b']);
      expect(p1.body.has_more).toBe(true);
      const p2 = await call('GET', `/vault/interns/${i.id}/secrets?limit=2&offset=2`);
      expect(p2.body.data.map((s: any) => s.name)).toEqual(['c']);
      expect(p2.body.has_more).toBe(false);
      expectError(await call('GET', `/vault/interns/${i.id}/secrets?limit=101`), 400);
      expectError(await call('GET', `/vault/interns/${i.id}/secrets?offset=10001`), 400);
    });

    it('404s for interns of other workspaces and unknown ids; 400 for a malformed id', async () => {
      const t = await tenant();
      const foreign = await intern({ workspaceId: t.workspaceId, organizationId: t.organizationId });
      await put(t.call, `/vault/interns/${foreign.id}/secrets/theirs`, secret());
      const unknown = randomUUID();
      for (const id of [foreign.id, unknown]) {
        expectError(await call('GET', `/vault/interns/${id}/secrets`), 404, 'Intern not found');
        expectError(await put(call, `/vault/interns/${id}/secrets/x`, secret()), 404, 'Intern not found');
        expectError(await call('DELETE', `/vault/interns/${id}/secrets/theirs`), 404, 'Intern not found');
        expectError(
          await call('POST', `/vault/interns/${id}/secrets/copy`, { names: ['x'] }),
          404,
          'Intern not found',
        );
      }
      expect((await storedRows(foreign.vaultId)).map((r) => r.name)).toEqual(['theirs']);

      for (const id of ['not-a-uuid', '1234', `${unknown}x`]) {
        expectError(await call('GET', `/vault/interns/${id}/secrets`), 400, 'internId must be a UUID');
        expectError(
          await put(call, `/vault/interns/${id}/secrets/x`, secret()),
          400,
          'internId must be a UUID',
        );
        expectError(await call('DELETE', `/vault/interns/${id}/secrets/x`), 400, 'internId must be a UUID');
        expectError(
          await call('POST', `/vault/interns/${id}/secrets/copy`, { names: ['x'] }),
          400,
          'internId must be a UUID',
        );
      }
    });

    it('409 on writes to an intern being destroyed or without a private vault', async () => {
      await put(call, '/vault/secrets/copy_src', secret());
      for (const status of ['destroying', 'destroy_failed'] as const) {
        const i = await intern({ status });
        expectError(await put(call, `/vault/interns/${i.id}/secrets/x`, secret()), 409, new RegExp(status));
        expectError(await call('POST', `/vault/interns/${i.id}/secrets/copy`, { names: ['copy_src'] }), 409);
        expect(await storedRows(i.vaultId)).toEqual([]);
        // Reads and deletes still answer.
        expect((await call('GET', `/vault/interns/${i.id}/secrets`)).status).toBe(200);
        expectError(await call('DELETE', `/vault/interns/${i.id}/secrets/x`), 404);
      }
      const bare = await intern({ vault: false });
      expectError(await put(call, `/vault/interns/${bare.id}/secrets/x`, secret()), 409, /no private vault/);
      expectError(await call('POST', `/vault/interns/${bare.id}/secrets/copy`, { names: ['copy_src'] }), 409);
      expect((await call('GET', `/vault/interns/${bare.id}/secrets`)).body).toEqual({
        data: [],
        has_more: false,
      });
      expectError(await call('DELETE', `/vault/interns/${bare.id}/secrets/x`), 404);
    });

    it('never writes a borrowed vault through its borrower', async () => {
      const lender = await intern();
      await put(call, `/vault/interns/${lender.id}/secrets/lent`, secret());
      // A borrower with no vault of its own: writes 409, its list does not show the lender's secrets.
      const borrower = await intern({ vault: false, attachedVaultId: lender.vaultId });
      expectError(await put(call, `/vault/interns/${borrower.id}/secrets/lent`, secret()), 409);
      expectError(await call('DELETE', `/vault/interns/${borrower.id}/secrets/lent`), 404);
      expect((await call('GET', `/vault/interns/${borrower.id}/secrets`)).body.data).toEqual([]);
      // A borrower with its own vault writes there.
      const both = await intern({ attachedVaultId: lender.vaultId });
      expect((await put(call, `/vault/interns/${both.id}/secrets/lent`, secret())).status).toBe(200);
      expect((await storedRows(both.vaultId)).map((r) => r.name)).toEqual(['lent']);
      expect((await storedRows(lender.vaultId)).map((r) => r.name)).toEqual(['lent']);
      expect((await call('DELETE', `/vault/interns/${both.id}/secrets/lent`)).status).toBe(204);
      expect((await storedRows(lender.vaultId)).map((r) => r.name)).toEqual(['lent']);
    });
  });

  describe('copy into an intern vault', () => {
    it('copies value and hosts, re-sealed and re-fingerprinted for the intern vault, replacing same names', async () => {
      const t = await tenant();
      const i = await intern({ workspaceId: t.workspaceId, organizationId: t.organizationId });
      const a = secret();
      const b = secret();
      await put(t.call, '/vault/secrets/alpha', a, ['a.example.com', 'b.example.com']);
      await put(t.call, '/vault/secrets/beta', b, ['10.1.2.3']);
      await put(t.call, '/vault/secrets/gamma', secret());
      const old = await put(t.call, `/vault/interns/${i.id}/secrets/beta`, secret(), ['old.example.com']);
      await put(t.call, `/vault/interns/${i.id}/secrets/kept`, secret());

      const res = await t.call('POST', `/vault/interns/${i.id}/secrets/copy`, { names: ['beta', 'alpha'] });
      expect(res.status).toBe(200);
      expect(Object.keys(res.body)).toEqual(['data']);
      expect(res.body.data.map((s: any) => s.name)).toEqual(['beta', 'alpha']);
      const [beta, alpha] = res.body.data;
      expect(alpha.hosts).toEqual(['a.example.com', 'b.example.com']);
      expect(beta.hosts).toEqual(['10.1.2.3']);
      expect(beta.created_at).toBe(old.body.data.created_at);
      for (const s of res.body.data) {
        expect(Object.keys(s).sort()).toEqual(SECRET_KEYS);
        expect(s.created_at).toMatch(STRICT_DATETIME);
      }
      // A copy's fingerprint is keyed to its source's (so to whoever wrote the source).
      const [wsVault] = await workspaceVaults(t.workspaceId);
      const source = await storedRow(wsVault!.id, 'alpha');
      expect(source.fingerprint).toBe(await expectedFingerprint(wsVault!.id, 'alpha', `user:${t.userId}`, a));
      expect(alpha.fingerprint).toBe(
        await expectedFingerprint(i.vaultId, 'alpha', `copy-of:${source.fingerprint}`, a),
      );
      const betaSource = (await storedRow(wsVault!.id, 'beta')).fingerprint;
      expect(beta.fingerprint).toBe(await expectedFingerprint(i.vaultId, 'beta', `copy-of:${betaSource}`, b));
      expect(alpha.fingerprint).not.toBe(source.fingerprint);

      const { masterKey } = gw.services.config;
      const row = await storedRow(i.vaultId, 'alpha');
      expect(row.value_sealed).not.toContain(a);
      expect(decrypt(masterKey, row.value_sealed, secretAad(i.vaultId, 'alpha'))).toBe(a);
      expect(
        decrypt(masterKey, (await storedRow(i.vaultId, 'beta')).value_sealed, secretAad(i.vaultId, 'beta')),
      ).toBe(b);
      const listed = await t.call('GET', `/vault/interns/${i.id}/secrets`);
      expect(listed.body.data.map((s: any) => s.name)).toEqual(['alpha', 'beta', 'kept']);
      // The workspace secrets are untouched.
      expect((await t.call('GET', '/vault/secrets')).body.data.map((s: any) => s.name)).toEqual([
        'alpha',
        'beta',
        'gamma',
      ]);
    });

    it('is all or nothing: one missing name is a 404 naming it, and nothing is copied', async () => {
      const t = await tenant();
      const i = await intern({ workspaceId: t.workspaceId, organizationId: t.organizationId });
      const before = await put(t.call, `/vault/interns/${i.id}/secrets/one`, secret(), ['keep.example.com']);
      await put(t.call, '/vault/secrets/one', secret());
      await put(t.call, '/vault/secrets/two', secret());
      const res = await t.call('POST', `/vault/interns/${i.id}/secrets/copy`, {
        names: ['one', 'missing_x', 'two', 'missing_y'],
      });
      expectError(res, 404, 'Workspace secrets not found: missing_x, missing_y');
      const after = await t.call('GET', `/vault/interns/${i.id}/secrets`);
      expect(after.body.data).toEqual([before.body.data]);

      // A tenant with no workspace vault at all: every name is missing.
      const empty = await tenant();
      const j = await intern({ workspaceId: empty.workspaceId, organizationId: empty.organizationId });
      expectError(
        await empty.call('POST', `/vault/interns/${j.id}/secrets/copy`, { names: ['nope'] }),
        404,
        'Workspace secret not found: nope',
      );
    });

    it('409s on a legacy source without hosts, and copies nothing', async () => {
      const t = await tenant();
      const i = await intern({ workspaceId: t.workspaceId, organizationId: t.organizationId });
      await put(t.call, '/vault/secrets/modern', secret());
      const [vault] = await workspaceVaults(t.workspaceId);
      // A row stored before host binding: hosts and fingerprint null, a created_at without a zone.
      await gw.services.db
        .insertInto('vault_secrets')
        .values({
          vault_id: vault!.id,
          name: 'legacy',
          value_sealed: 'v1.AAAA.AAAA.AAAA',
          hosts_json: null,
          fingerprint: null,
          created_at: '2024-01-02 03:04:05',
          updated_at: '2024-01-02 03:04:05',
        })
        .execute();
      const listed = await t.call('GET', '/vault/secrets');
      const legacy = listed.body.data.find((s: any) => s.name === 'legacy');
      expect(legacy).toEqual({
        name: 'legacy',
        hosts: null,
        fingerprint: null,
        created_at: '2024-01-02T03:04:05.000Z',
      });

      const res = await t.call('POST', `/vault/interns/${i.id}/secrets/copy`, {
        names: ['modern', 'legacy'],
      });
      expectError(res, 409, /legacy has no hosts/);
      expect(await storedRows(i.vaultId)).toEqual([]);

      // Written again with hosts, it copies.
      await put(t.call, '/vault/secrets/legacy', secret());
      const ok = await t.call('POST', `/vault/interns/${i.id}/secrets/copy`, { names: ['modern', 'legacy'] });
      expect(ok.status).toBe(200);
      expect(ok.body.data.map((s: any) => s.name)).toEqual(['modern', 'legacy']);
    });

    it('validates the names list', async () => {
      const i = await intern();
      const copy = (body: unknown) => call('POST', `/vault/interns/${i.id}/secrets/copy`, body);
      expectError(await copy({ names: [] }), 400, /names must be an array of 1 to 100/);
      expectError(
        await copy({ names: Array.from({ length: 101 }, (_, n) => `n${n}`) }),
        400,
        /names must be an array of 1 to 100/,
      );
      expectError(await copy({ names: ['a', 'b', 'a'] }), 400, 'names lists a more than once');
      expectError(await copy({ names: ['ok', 'Bad'] }), 400, /^names\[1\] contains uppercase letters/);
      expectError(await copy({ names: ['a__b'] }), 400, /^names\[0\] contains consecutive underscores/);
      expectError(await copy({ names: ['ok', 3] }), 400, /names\[1\]/);
      expectError(await copy({ names: 'ok' }), 400, /names must be an array/);
      expectError(await copy({}), 400, 'names is required');
      expectError(await copy({ names: ['ok'], extra: true }), 400, 'Unknown field extra in the body');
      expectError(await copy([]), 400, 'The body must be a JSON object');
      expect(await storedRows(i.vaultId)).toEqual([]);
    });
  });

  describe('request validation', () => {
    const paths = (internId: string) => [
      (name: string) => `/vault/secrets/${name}`,
      (name: string) => `/vault/interns/${internId}/secrets/${name}`,
    ];

    it('400s on a bad secret name (PUT and DELETE, both scopes), without echoing it', async () => {
      const i = await intern();
      const bad: [string, RegExp][] = [
        ['Upper', /uppercase/],
        ['a__b', /consecutive underscores/],
        ['trailing_', /ends with an underscore/],
        ['1abc', /start with a letter/],
        ['_abc', /start with a letter/],
        ['with-dash', /other than a-z/],
        ['dot.ted', /other than a-z/],
        ['sp%20ace', /other than a-z/],
        ['a'.repeat(256), /longer than 255/],
      ];
      for (const path of paths(i.id)) {
        for (const [name, why] of bad) {
          const res = await put(call, path(name), secret());
          expectError(res, 400, why);
          expect(res.body.error.message).toMatch(/^name /);
          expectError(await call('DELETE', path(name)), 400, why);
        }
        // A slash makes another path (no route); names past Fastify's default 100-character
        // parameter limit still reach the API (a 255-character name is valid).
        expect((await put(call, path('a/b'), secret())).status).toBe(404);
        expectError(await call('DELETE', path('b'.repeat(200))), 404, `Secret ${'b'.repeat(200)} not found`);
        expect((await put(call, path('a'.repeat(255)), secret())).status).toBe(200);
      }
      expect(await storedRows(i.vaultId).then((r) => r.map((x) => x.name))).toEqual(['a'.repeat(255)]);
    });

    it('400s on a bad body: fields, types, sizes, extras', async () => {
      const i = await intern();
      const ok = secret();
      const cases: [unknown, RegExp | string][] = [
        [{ hosts: ['a.example'] }, 'value is required'],
        [{ value: ok }, 'hosts is required'],
        [
          { value: '', hosts: ['a.example'] },
          'value must be at least 8 characters long; shorter secrets are refused',
        ],
        [{ value: '1234', hosts: ['a.example'] }, /value must be at least 8 characters/],
        [{ value: 'x'.repeat(7), hosts: ['a.example'] }, /value must be at least 8 characters/],
        [{ value: 'x'.repeat(65_537), hosts: ['a.example'] }, /value must be a string of 8 to 65536/],
        [{ value: 42, hosts: ['a.example'] }, /value must be a string/],
        [{ value: null, hosts: ['a.example'] }, /value must be a string/],
        [{ value: ok, hosts: [] }, /hosts must be an array of 1 to 100 hostnames/],
        [{ value: ok, hosts: 'a.example' }, /hosts must be an array/],
        [{ value: ok, hosts: Array.from({ length: 101 }, (_, n) => `h${n}.example`) }, /1 to 100 hostnames/],
        [{ value: ok, hosts: ['a.example', 7] }, 'hosts[1] must be a string'],
        [{ value: ok, hosts: ['a.example'], extra: 1 }, 'Unknown field extra in the body'],
        [{ value: ok, hosts: ['a.example'], name: 'x' }, 'Unknown field name in the body'],
        [[ok], 'The body must be a JSON object'],
        ['"just a string"', 'The body must be a JSON object'],
      ];
      for (const path of paths(i.id)) {
        for (const [body, message] of cases)
          expectError(await call('PUT', path('body_check'), body), 400, message);
        // Malformed JSON, and no body at all.
        expectError(await call('PUT', path('body_check'), '{"value":'), 400);
        expectError(await call('PUT', path('body_check')), 400);
      }
      expect(await storedRows(i.vaultId)).toEqual([]);
    });

    it('accepts a value of exactly 65,536 characters; 413 beyond the body limit', async () => {
      const big = secret('big').padEnd(65_536, 'q');
      values.push(big);
      const res = await put(call, '/vault/secrets/big_value', big);
      expect(res.status).toBe(200);
      const [vault] = await workspaceVaults(workspaceId);
      const row = await storedRow(vault!.id, 'big_value');
      expect(decrypt(gw.services.config.masterKey, row.value_sealed, secretAad(vault!.id, 'big_value'))).toBe(
        big,
      );
      const huge = await call('PUT', '/vault/secrets/huge', {
        value: 'h'.repeat(1_100_000),
        hosts: ['a.example'],
      });
      expectError(huge, 413);
    });

    it('400s on each kind of bad host, naming the entry', async () => {
      const i = await intern();
      const bad: [string, string][] = [
        ['https://api.example.com', 'has a scheme'],
        ['api.example.com:443', 'has a port'],
        ['api.example.com/v1', 'has a path'],
        ['*.example.com', 'is a wildcard'],
        ['', 'is empty'],
        [' api.example.com', 'contains whitespace'],
        ['api example.com', 'contains whitespace'],
        ['[::1]', 'IPv6'],
        ['300.1.1.1', 'not a valid IPv4 address'],
        ['api_x.example.com', 'other than a-z'],
        ['-api.example.com', 'hyphen'],
        ['a..b', 'empty label'],
        ['user@host.example', 'user information'],
      ];
      for (const path of paths(i.id)) {
        for (const [host, why] of bad) {
          const res = await put(call, path('host_check'), secret(), ['ok.example.com', host]);
          expectError(res, 400, `hosts[1] ${JSON.stringify(host)} `);
          expect(res.body.error.message).toContain(why);
        }
      }
      expect(await storedRows(i.vaultId)).toEqual([]);
    });
  });

  describe('access', () => {
    const routes = (internId: string): [string, string, unknown?][] => [
      ['GET', '/vault/secrets'],
      ['PUT', '/vault/secrets/access_check', { value: 'not-a-secret-value', hosts: ['a.example'] }],
      ['DELETE', '/vault/secrets/access_check'],
      ['GET', `/vault/interns/${internId}/secrets`],
      [
        'PUT',
        `/vault/interns/${internId}/secrets/access_check`,
        { value: 'not-a-secret-value', hosts: ['a.example'] },
      ],
      ['DELETE', `/vault/interns/${internId}/secrets/access_check`],
      ['POST', `/vault/interns/${internId}/secrets/copy`, { names: ['access_check'] }],
    ];

    it('401 without a key or with an unknown one', async () => {
      const i = await intern();
      for (const [method, path, body] of routes(i.id)) {
        expectError(await recorded()(method, path, body), 401);
        expectError(await recorded(`sk-gh-v1-${'0'.repeat(64)}`)(method, path, body), 401);
      }
    });

    it('401 for a management key (the seed: provisioning keys get 401)', async () => {
      const i = await intern();
      const mgmt = recorded(gw.managementKey);
      for (const [method, path, body] of routes(i.id)) {
        expectError(await mgmt(method, path, body), 401, /Management keys cannot use the vault API/);
      }
      expect(await storedRows(i.vaultId)).toEqual([]);
    });

    it('403 on a regional hostname', async () => {
      const i = await intern();
      for (const [method, path, body] of routes(i.id)) {
        expectError(await withHost(REGIONAL, gw.apiKey, method, path, body), 403, new RegExp(REGIONAL));
        expectError(await withHost(`${REGIONAL.toUpperCase()}.`, gw.apiKey, method, path, body), 403);
      }
      expect(await storedRows(i.vaultId)).toEqual([]);
      // The main hostname still answers.
      expect((await withHost('127.0.0.1', gw.apiKey, 'GET', '/vault/secrets')).status).toBe(200);
    });

    it('404 on every route, reads included, for a caller outside the interns programme', async () => {
      const outsider = await tenant({ programme: false });
      const i = await intern({ workspaceId: outsider.workspaceId, organizationId: outsider.organizationId });
      for (const [method, path, body] of routes(i.id)) {
        expectError(await outsider.call(method, path, body), 404, 'Not found');
      }
      expect(await storedRows(i.vaultId)).toEqual([]);
      expect(await workspaceVaults(outsider.workspaceId)).toEqual([]);
    });
  });

  it('no response body or log line ever contained a secret value', () => {
    expect(values.length).toBeGreaterThan(50);
    expect(bodies.length).toBeGreaterThan(100);
    const responses = bodies.join('\n');
    const logs = logLines.join('\n');
    expect(values.filter((v) => responses.includes(v))).toEqual([]);
    expect(values.filter((v) => logs.includes(v))).toEqual([]);
  });
});

describe.each(databases)('vault API with writes disabled and a short deadline (%s)', (db) => {
  let gw: TestGateway;
  let call: Call;
  const logLines: string[] = [];

  beforeAll(async () => {
    const logStream = new Writable({
      write(chunk, _enc, done) {
        logLines.push(...chunk.toString().split('\n').filter(Boolean));
        done();
      },
    });
    gw = await startTestGateway(db, {
      env: { GATEHOUSE_VAULT_WRITES: 'off', GATEHOUSE_INTERNS_DEADLINE_MS: '300' },
      logStream,
    });
    call = client(gw.url, gw.apiKey);
  });
  afterAll(() => gw?.stop());

  it('answers 503 on PUT, DELETE and copy in both scopes; reads still work', async () => {
    expect(gw.services.config.interns.vaultWrites).toBe(false);
    const workspaceId = (await call('GET', '/key')).body.data.workspace_id;
    const internId = randomUUID();
    const now = new Date().toISOString();
    await gw.services.db
      .insertInto('interns')
      .values({
        id: internId,
        organization_id: gw.organizationId,
        workspace_id: workspaceId,
        creator_user_id: gw.ownerUserId,
        owner_key_hash: sha256Hex(gw.apiKey),
        name: 'readonly',
        description: null,
        instructions: null,
        model: null,
        status: 'stopped',
        last_failure_message: null,
        progress_step: null,
        progress_total: null,
        progress_label: null,
        hostname: null,
        vault_id: null,
        attached_vault_id: null,
        provisioned_model: null,
        created_at: now,
        updated_at: now,
      })
      .execute();
    const vaultId = await gw.services.vault.createInternVault(workspaceId, internId);
    await gw.services.db
      .updateTable('interns')
      .set({ vault_id: vaultId })
      .where('id', '=', internId)
      .execute();

    const body = { value: 'not-a-secret-value', hosts: ['a.example'] };
    const writes: [string, string, unknown?][] = [
      ['PUT', '/vault/secrets/x', body],
      ['PUT', '/vault/secrets/x', { bad: true }],
      ['DELETE', '/vault/secrets/x'],
      ['PUT', `/vault/interns/${internId}/secrets/x`, body],
      ['DELETE', `/vault/interns/${internId}/secrets/x`],
      ['POST', `/vault/interns/${internId}/secrets/copy`, { names: ['x'] }],
    ];
    for (const [method, path, b] of writes) {
      const res = await call(method, path, b);
      expect(res.status).toBe(503);
      expect(res.body.error).toMatchObject({ code: 503, message: expect.stringMatching(/disabled/) });
    }
    expect((await call('GET', '/vault/secrets')).body).toEqual({ data: [], has_more: false });
    expect((await call('GET', `/vault/interns/${internId}/secrets`)).body).toEqual({
      data: [],
      has_more: false,
    });
    expect(await gw.services.db.selectFrom('vault_secrets').selectAll().execute()).toEqual([]);
  });

  it('answers 408 when a request outlives the route deadline, and keeps serving', async () => {
    let release = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    let locked = () => {};
    const lockTaken = new Promise<void>((r) => {
      locked = r;
    });
    // Warm the key and programme caches (5 s), so that only the route's own queries wait.
    expect((await call('GET', '/vault/secrets')).status).toBe(200);
    // Hold the vaults table: SQLite's one connection is busy, PostgreSQL's table is locked.
    const holder = gw.services.db.transaction().execute(async (tx) => {
      if (db === 'postgres') await sql`lock table vaults in access exclusive mode`.execute(tx);
      else await tx.selectFrom('vaults').select('id').execute();
      locked();
      await held;
    });
    await lockTaken;
    const started = Date.now();
    const res = await call('GET', '/vault/secrets');
    release();
    await holder;
    expect(res.status).toBe(408);
    expect(res.body).toEqual({ error: { code: 408, message: expect.stringMatching(/deadline of 300 ms/) } });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect((await call('GET', '/vault/secrets')).status).toBe(200);
    // The late outcome was dropped, not sent a second time.
    await new Promise((r) => setTimeout(r, 50));
    expect(logLines.filter((l) => /already sent|serializer|unhandled/i.test(l))).toEqual([]);
  });
});
