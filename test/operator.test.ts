import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { sha256Hex } from '../src/lib/crypto.js';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';

const run = promisify(execFile);

describe.each(databases)('operator API and bootstrap (%s)', (db) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(db);
  });
  afterAll(() => gw?.stop());

  it('creates organizations with a default workspace and lists them oldest first', async () => {
    const admin = adminClient(gw.url);
    const a = await admin('POST', '/admin/organizations', { name: 'Acme' });
    const b = await admin('POST', '/admin/organizations', { name: 'Globex' });
    expect(a.status).toBe(201);
    expect(a.body.data).toMatchObject({
      id: expect.any(String),
      name: 'Acme',
      default_workspace_id: expect.any(String),
    });
    const list = await admin('GET', '/admin/organizations');
    const names = list.body.data.map((o: { name: string }) => o.name);
    expect(names.slice(-2)).toEqual(['Acme', 'Globex']);
    expect(names[0]).toBe('Default Organization');
    expect(list.body.data.find((o: { id: string }) => o.id === b.body.data.id).default_workspace_id).toBe(
      b.body.data.default_workspace_id,
    );
  });

  it('creates users and keys acting as a user or as the organization', async () => {
    const admin = adminClient(gw.url);
    const org = (await admin('POST', '/admin/organizations', { name: 'Initech' })).body.data;
    const user = await admin('POST', '/admin/users', {
      email: `peter-${db}@initech.test`,
      organization_id: org.id,
      role: 'admin',
      interns_programme: true,
    });
    expect(user.status).toBe(201);
    expect(user.body.data).toMatchObject({ organization_id: org.id, role: 'admin', interns_programme: true });
    const again = await admin('POST', '/admin/users', {
      email: `peter-${db}@initech.test`,
      organization_id: org.id,
      role: 'admin',
    });
    expect(again.status).toBe(409);

    const userKey = await admin('POST', '/admin/keys', {
      name: 'peter',
      user_id: user.body.data.id,
      management: true,
    });
    expect(userKey.status).toBe(201);
    expect(userKey.body.data.hash).toBe(sha256Hex(userKey.body.key));
    expect(userKey.body.data.creator_user_id).toBe(user.body.data.id);
    expect(userKey.body.data.workspace_id).toBe(org.default_workspace_id);
    const me = await client(gw.url, userKey.body.key)('GET', '/key');
    expect(me.body.data).toMatchObject({ is_management_key: true, organization_id: org.id });

    const orgKey = await admin('POST', '/admin/keys', { name: 'org', organization_id: org.id });
    expect(orgKey.body.data.creator_user_id).toBeNull();
    const orgMe = await client(gw.url, orgKey.body.key)('GET', '/key');
    expect(orgMe.body.data).toMatchObject({
      is_management_key: false,
      creator_user_id: null,
      organization_id: org.id,
    });

    expect((await admin('POST', '/admin/keys', { name: 'x' })).status).toBe(400);
    expect(
      (await admin('POST', '/admin/users', { email: 'not-an-email', organization_id: org.id, role: 'x' }))
        .status,
    ).toBe(400);
  });

  it('refuses a wrong operator token and keys that are not the operator token', async () => {
    expect((await client(gw.url, 'wrong')('GET', '/admin/organizations')).status).toBe(401);
    expect((await client(gw.url, gw.managementKey)('GET', '/admin/organizations')).status).toBe(401);
    expect((await client(gw.url)('GET', '/admin/organizations')).status).toBe(401);
  });

  it('keeps exactly the configured bootstrap keys across restarts', async () => {
    const before = await adminClient(gw.url)('GET', '/admin/organizations');
    gw = await gw.restart();
    const after = await adminClient(gw.url)('GET', '/admin/organizations');
    expect(after.body.data).toEqual(before.body.data); // no second default organization
    // Configured keys are not written anywhere either.
    expect(gw.bootstrap.keysFile).toBeNull();
    expect(existsSync(join(gw.services.config.dataDir, 'bootstrap-keys.env'))).toBe(false);
    const keys = await gw.services.db
      .selectFrom('api_keys')
      .select(['hash', 'is_management'])
      .where('organization_id', '=', gw.organizationId)
      .execute();
    expect(keys.map((k) => k.hash).sort()).toEqual(
      [sha256Hex(gw.managementKey), sha256Hex(gw.apiKey)].sort(),
    );
    const owner = await gw.services.db
      .selectFrom('users')
      .selectAll()
      .where('id', '=', gw.ownerUserId)
      .executeTakeFirst();
    expect(owner?.interns_programme).toBe(1);
  });
});

describe('operator API disabled without GATEHOUSE_ADMIN_TOKEN', () => {
  it('answers 404 on /admin routes', async () => {
    const gw = await startTestGateway('sqlite', { env: { GATEHOUSE_ADMIN_TOKEN: '' } });
    try {
      const res = await client(gw.url, 'anything')('GET', '/admin/organizations');
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe(404);
    } finally {
      await gw.stop();
    }
  });
});

describe('operator token strength', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-token-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
  const withToken = (token: string) => () =>
    loadConfig({ GATEHOUSE_DATA_DIR: dataDir, GATEHOUSE_ADMIN_TOKEN: token });

  it('refuses to start with a short or predictable token, saying why without quoting it', () => {
    expect(withToken('admin')).toThrow(/GATEHOUSE_ADMIN_TOKEN is too short: it needs at least 24 characters/);
    expect(withToken('operator-secret')).toThrow(/too short/);
    for (const weak of ['a'.repeat(40), 'ab'.repeat(20), `inproc-admin-${'x'.repeat(24)}`]) {
      let message = '';
      try {
        withToken(weak)();
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message, weak).toMatch(
        /GATEHOUSE_ADMIN_TOKEN is too predictable: about \d+ bits estimated, at least 80/,
      );
      expect(message).not.toContain(weak);
    }
  });

  it('refuses a token longer than the 1 KB any credential header may be', () => {
    expect(withToken(randomBytes(600).toString('hex'))).toThrow(/GATEHOUSE_ADMIN_TOKEN is too long/);
  });

  it('starts with a random token and with none (operator API off)', () => {
    expect(withToken(randomBytes(32).toString('hex'))().adminToken).toHaveLength(64);
    expect(withToken(randomBytes(18).toString('base64'))().adminToken).toHaveLength(24);
    expect(withToken('')().adminToken).toBeNull();
  });

  it('refuses a weak token when the gateway starts', async () => {
    await expect(startTestGateway('sqlite', { env: { GATEHOUSE_ADMIN_TOKEN: 'admin' } })).rejects.toThrow(
      /GATEHOUSE_ADMIN_TOKEN is too short/,
    );
  });
});

describe('CLI', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-cli-'));
  const env = { ...process.env, GATEHOUSE_DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'silent' };
  const cli = (...args: string[]) =>
    run(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { env, cwd: process.cwd() });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('bootstraps once, writing generated keys to a 0600 file (never printed), and runs the operator commands', async () => {
    const first = await cli('bootstrap');
    const file = join(dataDir, 'bootstrap-keys.env');
    // Only the file's path is printed, on stderr; the keys appear on neither stream.
    expect(first.stderr).toContain(file);
    expect(`${first.stdout}${first.stderr}`).not.toMatch(/sk-gh-v1-/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const written = readFileSync(file, 'utf8');
    const management = /^GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY=(sk-gh-v1-[0-9a-f]{64})$/m.exec(written)?.[1];
    const api = /^GATEHOUSE_BOOTSTRAP_API_KEY=(sk-gh-v1-[0-9a-f]{64})$/m.exec(written)?.[1];
    expect(management && api).toBeTruthy();
    const hashes = new Database(join(dataDir, 'gatehouse.db'), { readonly: true });
    const stored = hashes.prepare('select hash, is_management from api_keys').all();
    hashes.close();
    expect(stored).toEqual(
      expect.arrayContaining([
        { hash: sha256Hex(management as string), is_management: 1 },
        { hash: sha256Hex(api as string), is_management: 0 },
      ]),
    );
    const second = await cli('bootstrap');
    expect(`${second.stdout}${second.stderr}`).not.toMatch(/sk-gh-v1-|bootstrap-keys/);
    expect(readFileSync(file, 'utf8')).toBe(written);

    const org = JSON.parse((await cli('org', 'create', '--name', 'Umbrella')).stdout).data;
    const user = JSON.parse(
      (
        await cli(
          'user',
          'create',
          '--email',
          'alice@umbrella.test',
          '--org',
          org.id,
          '--role',
          'member',
          '--interns',
        )
      ).stdout,
    ).data;
    expect(user.interns_programme).toBe(true);
    const key = JSON.parse((await cli('key', 'create', '--name', 'alice', '--user', user.id)).stdout);
    expect(key.data.hash).toBe(sha256Hex(key.key));
    const credit = JSON.parse((await cli('credits', 'add', '--org', org.id, '--amount', '12.5')).stdout).data;
    expect(credit.amount_usd).toBe(12.5);
    const list = JSON.parse((await cli('org', 'list')).stdout).data;
    expect(list.map((o: { name: string }) => o.name)).toEqual(['Default Organization', 'Umbrella']);
    await expect(cli('nonsense')).rejects.toMatchObject({ stderr: expect.stringMatching(/Unknown command/) });
  }, 90_000); // eight CLI processes in a row, each compiling through tsx: ~3 s apiece on a busy 2-core box

  it('replaces a bootstrap key whose configured value changed, so exactly the configured keys exist', async () => {
    const withKey = (api: string) =>
      run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'bootstrap'], {
        env: { ...env, GATEHOUSE_BOOTSTRAP_API_KEY: api },
        cwd: process.cwd(),
      });
    const hashes = () => {
      const file = new Database(join(dataDir, 'gatehouse.db'), { readonly: true });
      const rows = file.prepare('select hash from api_keys where is_management = 0').all() as {
        hash: string;
      }[];
      file.close();
      return rows.map((r) => r.hash);
    };
    const out = await withKey('sk-gh-v1-first-configured-api-key-000000');
    expect(`${out.stdout}${out.stderr}`).not.toContain('first-configured'); // configured keys are never printed
    await withKey('sk-gh-v1-first-configured-api-key-000000');
    const first = hashes();
    expect(first).toContain(sha256Hex('sk-gh-v1-first-configured-api-key-000000'));
    await withKey('sk-gh-v1-second-configured-api-key-00000');
    const second = hashes();
    expect(second).toContain(sha256Hex('sk-gh-v1-second-configured-api-key-00000'));
    expect(second).not.toContain(sha256Hex('sk-gh-v1-first-configured-api-key-000000'));
    expect(second.length).toBe(first.length);
  }, 90_000);
});
