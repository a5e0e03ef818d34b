import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../src/lib/crypto.js';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';

/** Vault writes: fingerprints are no oracle for other members, and writes are rate limited. */
describe.each(databases)('vault hardening (%s)', (db) => {
  const LIMIT = 4;
  let gw: TestGateway;
  let organizationId: string;
  let workspaceId: string;

  /** An intern of `owner` (a row written directly) with its private vault. */
  async function internOf(owner: { userId: string; key: string }) {
    const id = randomUUID();
    const now = new Date().toISOString();
    await gw.services.db
      .insertInto('interns')
      .values({
        id,
        organization_id: organizationId,
        workspace_id: workspaceId,
        creator_user_id: owner.userId,
        owner_key_hash: sha256Hex(owner.key),
        name: `h${randomBytes(5).toString('hex')}`,
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
    const vaultId = await gw.services.vault.createInternVault(workspaceId, id);
    await gw.services.db.updateTable('interns').set({ vault_id: vaultId }).where('id', '=', id).execute();
    return id;
  }

  /** A member of the organization, in the interns programme, with a new API key. */
  async function member(role: 'owner' | 'member' = 'member') {
    const admin = adminClient(gw.url);
    const user = await admin('POST', '/admin/users', {
      email: `m-${randomBytes(6).toString('hex')}@example.com`,
      organization_id: organizationId,
      role,
      interns_programme: true,
    });
    expect(user.status).toBe(201);
    const newKey = async () =>
      (await admin('POST', '/admin/keys', { name: 'api', user_id: user.body.data.id })).body.key as string;
    const key = await newKey();
    return { call: client(gw.url, key), newKey, key, userId: user.body.data.id as string };
  }

  beforeAll(async () => {
    gw = await startTestGateway(db, {
      env: { GATEHOUSE_VAULT_WRITE_LIMIT: String(LIMIT), GATEHOUSE_VAULT_WRITE_WINDOW: '60' },
    });
    const org = await adminClient(gw.url)('POST', '/admin/organizations', { name: 'hardening' });
    organizationId = org.body.data.id;
    workspaceId = org.body.data.default_workspace_id;
  });
  afterAll(() => gw?.stop());

  it("another member writing guesses never reproduces the owner's fingerprint", async () => {
    const owner = await member('owner');
    const guesser = await member();
    const pin = '73914062';
    const stored = await owner.call('PUT', '/vault/secrets/door_pin', {
      value: pin,
      hosts: ['door.example'],
    });
    expect(stored.status).toBe(200);
    const target = stored.body.data.fingerprint as string;

    // The right guess, under another name: a different fingerprint.
    const guess = await guesser.call('PUT', '/vault/secrets/guess', { value: pin, hosts: ['x.example'] });
    expect(guess.status).toBe(200);
    expect(guess.body.data.fingerprint).not.toBe(target);
    // Even written over the owner's secret itself, the right value does not give its fingerprint back.
    const over = await guesser.call('PUT', '/vault/secrets/door_pin', {
      value: pin,
      hosts: ['door.example'],
    });
    expect(over.status).toBe(200);
    expect(over.body.data.fingerprint).not.toBe(target);
    // The owner rewriting the same value keeps it.
    const again = await owner.call('PUT', '/vault/secrets/door_pin', { value: pin, hosts: ['door.example'] });
    expect(again.body.data.fingerprint).toBe(target);
  });

  it("copying the owner's secret and writing guesses over the copy does not make an oracle either", async () => {
    const owner = await member('owner');
    const guesser = await member();
    const intern = await internOf(guesser);
    const pin = '55028817';
    expect(
      (await owner.call('PUT', '/vault/secrets/safe_code', { value: pin, hosts: ['safe.example'] })).status,
    ).toBe(200);
    const copy = await guesser.call('POST', `/vault/interns/${intern}/secrets/copy`, {
      names: ['safe_code'],
    });
    expect(copy.status).toBe(200);
    const target = copy.body.data[0].fingerprint as string;
    // The right value written over the copy by the copier: another fingerprint.
    const over = await guesser.call('PUT', `/vault/interns/${intern}/secrets/safe_code`, {
      value: pin,
      hosts: ['safe.example'],
    });
    expect(over.status).toBe(200);
    expect(over.body.data.fingerprint).not.toBe(target);
    // Nor by writing it over the workspace secret and copying that.
    expect(
      (await guesser.call('PUT', '/vault/secrets/safe_code', { value: pin, hosts: ['safe.example'] })).status,
    ).toBe(200);
    const again = await guesser.call('POST', `/vault/interns/${intern}/secrets/copy`, {
      names: ['safe_code'],
    });
    expect(again.status).toBe(200);
    expect(again.body.data[0].fingerprint).not.toBe(target);
  });

  it(`the ${LIMIT + 1}th write of a member within the window is 429 with Retry-After, and stores nothing`, async () => {
    const m = await member();
    const other = await member();
    for (let i = 0; i < LIMIT; i++) {
      const ok = await m.call('PUT', '/vault/secrets/limited', {
        value: `value-number-${i}`,
        hosts: ['a.example'],
      });
      expect(ok.status).toBe(200);
    }
    const before = (await m.call('GET', '/vault/secrets')).body.data.find((s: any) => s.name === 'limited');
    const refused = await m.call('PUT', '/vault/secrets/limited', {
      value: 'value-number-x',
      hosts: ['b.example'],
    });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toMatch(/^application\/json/);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect(refused.body.error.code).toBe(429);
    expect(refused.body.error.message).toMatch(/Too many vault writes \(at most 4 per 60 s/);
    expect(refused.text).not.toContain('value-number');
    // Deletes and copies count too; so does a new key of the same member.
    expect((await m.call('DELETE', '/vault/secrets/limited')).status).toBe(429);
    expect((await client(gw.url, await m.newKey())('DELETE', '/vault/secrets/limited')).status).toBe(429);
    // Nothing changed; reads are not limited, and another member still writes.
    const after = (await m.call('GET', '/vault/secrets')).body.data.find((s: any) => s.name === 'limited');
    expect(after).toEqual(before);
    expect(after.hosts).toEqual(['a.example']);
    expect(
      (await other.call('PUT', '/vault/secrets/mine', { value: 'other-value', hosts: ['a.example'] })).status,
    ).toBe(200);
  });
});
