import { randomBytes, randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { OpenRouter } from '@openrouter/sdk';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LocalProvisioner } from '../src/interns/local-provisioner.js';
import { INTERN_STATUSES } from '../src/interns/model.js';
import { ProvisionError, type ProvisionTarget } from '../src/interns/provisioner.js';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';

/** The 14 keys of an Intern (digest §6.1), every one always present. */
const INTERN_KEYS = [
  'attached_vault_id',
  'created_at',
  'description',
  'hostname',
  'id',
  'instructions',
  'last_failure_message',
  'model',
  'name',
  'progress',
  'status',
  'updated_at',
  'vault_id',
  'workspace_id',
];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` until `ok` holds (every 15 ms), failing with the last value after `timeoutMs`. */
async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, what: string, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(v)}`);
    await sleep(15);
  }
}

let nameSeq = 0;
/** A fresh valid intern name (2–17 chars). */
const freshName = (prefix = 'in') => `${prefix}${(nameSeq++).toString(36)}${randomBytes(3).toString('hex')}`;

/** A member of the gateway's organization with an API key (in its default workspace). */
async function member(gw: TestGateway, opts: { programme?: boolean } = {}) {
  const admin = adminClient(gw.url);
  const user = await admin('POST', '/admin/users', {
    email: `m-${randomBytes(6).toString('hex')}@example.com`,
    organization_id: gw.organizationId,
    role: 'member',
    interns_programme: opts.programme ?? true,
  });
  expect(user.status).toBe(201);
  const key = await admin('POST', '/admin/keys', { name: 'member', user_id: user.body.data.id });
  expect(key.status).toBe(201);
  const call = client(gw.url, key.body.key);
  const ws = await call('GET', '/key');
  return {
    userId: user.body.data.id as string,
    key: key.body.key as string,
    call,
    workspaceId: ws.body.data.workspace_id,
  };
}

/** A new organization (its own default workspace) with a programme member's API key. */
async function isolatedMember(gw: TestGateway) {
  const admin = adminClient(gw.url);
  const org = await admin('POST', '/admin/organizations', { name: `org-${randomBytes(4).toString('hex')}` });
  const user = await admin('POST', '/admin/users', {
    email: `o-${randomBytes(6).toString('hex')}@example.com`,
    organization_id: org.body.data.id,
    role: 'owner',
    interns_programme: true,
  });
  const key = await admin('POST', '/admin/keys', { name: 'owner', user_id: user.body.data.id });
  const orgKey = await admin('POST', '/admin/keys', { name: 'org', organization_id: org.body.data.id });
  return {
    organizationId: org.body.data.id as string,
    workspaceId: org.body.data.default_workspace_id as string,
    key: key.body.key as string,
    orgKey: orgKey.body.key as string,
    call: client(gw.url, key.body.key),
  };
}

/** A scriptable stand-in for the provisioner's work, installed on the gateway's own instance. */
function fakeProvisioner(gw: TestGateway) {
  const p = gw.services.provisioner;
  const fake = {
    /** Delay of every step, ms. */
    stepMs: 0,
    /** intern name → the step index that fails and its message. */
    failing: new Map<string, { index: number; message: string; plain?: boolean }>(),
    /** intern id → a promise destroy waits for. */
    destroyGate: new Map<string, Promise<void>>(),
    /** intern ids whose destroy fails (archive failed). */
    destroyFails: new Set<string>(),
    steps: [] as { id: string; name: string; index: number; model: string; hostname: string }[],
    stops: [] as string[],
    destroys: [] as { id: string; discard: boolean }[],
  };
  p.runStep = async (target: ProvisionTarget, index: number, signal: AbortSignal) => {
    fake.steps.push({
      id: target.id,
      name: target.name,
      index,
      model: target.model,
      hostname: target.hostname,
    });
    if (fake.stepMs > 0) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, fake.stepMs);
        signal.addEventListener('abort', () => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    const f = fake.failing.get(target.name);
    if (f && f.index === index) throw f.plain ? new Error(f.message) : new ProvisionError(f.message);
  };
  p.stop = async (id: string) => {
    fake.stops.push(id);
  };
  p.destroy = async (id: string, opts: { discard: boolean }) => {
    fake.destroys.push({ id, discard: opts.discard });
    await fake.destroyGate.get(id);
    if (fake.destroyFails.has(id))
      throw new ProvisionError('archiving the working directory failed: disk full');
  };
  return fake;
}

/** One request with an explicit Host header (fetch does not let a caller set it). */
function rawRequest(url: string, opts: { method: string; path: string; headers: Record<string, string> }) {
  const u = new URL(url);
  return new Promise<{ status: number; body: any }>((resolve, reject) => {
    const req = httpRequest(
      {
        host: u.hostname,
        port: u.port,
        method: opts.method,
        path: `/api/v1${opts.path}`,
        headers: opts.headers,
      },
      (res) => {
        let text = '';
        res.on('data', (c) => {
          text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe.each(databases)('interns lifecycle API (%s)', (db) => {
  let gw: TestGateway;
  let fake: ReturnType<typeof fakeProvisioner>;
  const api = () => client(gw.url, gw.apiKey);
  const row = (id: string) =>
    gw.services.db.selectFrom('interns').selectAll().where('id', '=', id).executeTakeFirst();

  beforeAll(async () => {
    gw = await startTestGateway(db);
    fake = fakeProvisioner(gw);
  });
  afterAll(() => gw?.stop());

  it('creates an intern: 201, all 14 keys, stopped, with its private vault', async () => {
    const m = await member(gw);
    const name = freshName();
    const res = await m.call('POST', '/interns', {
      name,
      workspace_id: m.workspaceId,
      description: 'answers questions',
      instructions: 'be brief',
    });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(INTERN_KEYS);
    expect(res.body).toMatchObject({
      name,
      description: 'answers questions',
      instructions: 'be brief',
      model: null,
      status: 'stopped',
      last_failure_message: null,
      progress: null,
      hostname: null,
      workspace_id: m.workspaceId,
      attached_vault_id: null,
    });
    expect(res.body.id).toMatch(UUID);
    expect(res.body.vault_id).toMatch(UUID);
    expect(Number.isNaN(Date.parse(res.body.created_at))).toBe(false);
    const vault = await gw.services.db
      .selectFrom('vaults')
      .selectAll()
      .where('id', '=', res.body.vault_id)
      .executeTakeFirstOrThrow();
    expect(vault.owner_intern_id).toBe(res.body.id);
    const stored = await row(res.body.id);
    expect(stored).toMatchObject({ creator_user_id: m.userId, status: 'stopped' });

    const got = await m.call('GET', `/interns/${res.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
    // workspace_id is optional: the key's workspace is used.
    const bare = await m.call('POST', '/interns', { name: freshName() });
    expect(bare.status).toBe(201);
    expect(bare.body.workspace_id).toBe(m.workspaceId);
  });

  it('round-trips through the official SDK (its response validation passes)', async () => {
    const m = await member(gw);
    const sdk = new OpenRouter({
      serverURL: `${gw.url}/api/v1`,
      apiKey: m.key,
      retryConfig: { strategy: 'none' },
    });
    const name = freshName('sdk');
    const created = await sdk.interns.createIntern({
      idempotencyKey: `sdk-${name}`,
      createInternRequest: { name, workspaceId: m.workspaceId, description: null, provision: false },
    });
    expect(created).toMatchObject({ name, status: 'stopped', workspaceId: m.workspaceId, progress: null });
    const replay = await sdk.interns.createIntern({
      idempotencyKey: `sdk-${name}`,
      createInternRequest: { name, workspaceId: m.workspaceId, description: null, provision: false },
    });
    expect(replay.id).toBe(created.id);
    expect((await sdk.interns.getIntern({ internId: created.id })).id).toBe(created.id);
    const listed = await sdk.interns.listInterns({ limit: 500, status: ['stopped', 'stopped'] });
    expect(listed.data.map((i) => i.id)).toContain(created.id);
    const updated = await sdk.interns.updateIntern({
      internId: created.id,
      updateInternRequest: { description: 'now described', model: 'openai/gpt-4o' },
    });
    expect(updated).toMatchObject({ description: 'now described', model: 'openai/gpt-4o' });
    expect(await sdk.interns.provisionIntern({ internId: created.id })).toEqual({ provisioning: true });
    await until(
      () => sdk.interns.getIntern({ internId: created.id }),
      (i) => i.status === 'running',
      'running',
    );
    expect(await sdk.interns.suspendIntern({ internId: created.id })).toEqual({ suspended: true });
    expect(await sdk.interns.deleteIntern({ internId: created.id, deleteInternRequest: {} })).toEqual({
      deleting: true,
    });
    await until(
      () => m.call('GET', `/interns/${created.id}`),
      (r) => r.status === 404,
      'gone',
    );
  });

  it('refuses invalid bodies with 400 invalid_body', async () => {
    const m = await member(gw);
    const other = randomUUID();
    const bodies: unknown[] = [
      {},
      { name: freshName(), extra: true },
      { name: 'a' },
      { name: 'abcdefghijklmnopqr' }, // 18 characters
      { name: 'Upper' },
      { name: '1abc' },
      { name: 'ab--cd' },
      { name: 'ab-' },
      { name: 'ab_cd' },
      { name: 42 },
      { name: null },
      { name: freshName(), description: 'x'.repeat(2001) },
      { name: freshName(), description: 7 },
      { name: freshName(), instructions: 'x'.repeat(100_001) },
      { name: freshName(), provision: 'yes' },
      { name: freshName(), provision: 1 },
      { name: freshName(), vault_id: 'not-a-uuid' },
      { name: freshName(), workspace_id: 'not-a-uuid' },
      { name: freshName(), workspace_id: other },
      [],
      'null',
      '"text"',
      '{"name": ',
    ];
    for (const body of bodies) {
      const res = await m.call('POST', '/interns', body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(res.body.error.code).toBe('invalid_body');
      expect(typeof res.body.error.message).toBe('string');
    }
    const ws = await m.call('POST', '/interns', { name: freshName(), workspace_id: other });
    expect(ws.body.error.message).toMatch(/workspace_id/);
    const extra = await m.call('POST', '/interns', { name: freshName(), extra: true });
    expect(extra.body.error.message).toMatch(/extra|Unexpected property/);
    // An empty body with the JSON content type is no body at all.
    const empty = await m.call('POST', '/interns', '');
    expect(empty.status).toBe(400);
    // Limits are inclusive; nullable fields take null.
    const edge = await m.call('POST', '/interns', {
      name: 'ab',
      description: 'x'.repeat(2000),
      instructions: 'y'.repeat(100_000),
    });
    expect(edge.status).toBe(201);
    const longest = await m.call('POST', '/interns', {
      name: 'a-very-long-name1',
      description: null,
      instructions: null,
    });
    expect(longest.status).toBe(201);
    expect(longest.body).toMatchObject({ name: 'a-very-long-name1', description: null, instructions: null });
    // Idempotency-Key: 1 to 255 characters.
    const longKey = await m.call(
      'POST',
      '/interns',
      { name: freshName() },
      { 'idempotency-key': 'k'.repeat(256) },
    );
    expect(longKey.status).toBe(400);
    expect(longKey.body.error.code).toBe('invalid_body');
    const emptyKey = await m.call('POST', '/interns', { name: freshName() }, { 'idempotency-key': '' });
    expect(emptyKey.status).toBe(400);
    expect(emptyKey.body.error.code).toBe('invalid_body');
    const ok255 = await m.call(
      'POST',
      '/interns',
      { name: freshName() },
      { 'idempotency-key': 'k'.repeat(255) },
    );
    expect(ok255.status).toBe(201);
  });

  it('answers 401 (integer code) for missing, unknown and management keys', async () => {
    const none = await client(gw.url)('POST', '/interns', { name: freshName() });
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe(401);
    const unknown = await client(gw.url, 'sk-gh-v1-nope')('GET', '/interns');
    expect(unknown.status).toBe(401);
    expect(unknown.body.error.code).toBe(401);
    const mgmt = await client(gw.url, gw.managementKey)('POST', '/interns', { name: freshName() });
    expect(mgmt.status).toBe(401);
    expect(mgmt.body.error.code).toBe(401);
  });

  it('refuses an organization-acting key with 403 no_acting_user (it can still read)', async () => {
    const org = await adminClient(gw.url)('POST', '/admin/keys', {
      name: 'org',
      organization_id: gw.organizationId,
    });
    expect(org.status).toBe(201);
    const call = client(gw.url, org.body.key);
    const res = await call('POST', '/interns', { name: freshName() });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('no_acting_user');
    // Validation comes first.
    const invalid = await call('POST', '/interns', { name: 'X' });
    expect(invalid.status).toBe(400);
    expect((await call('GET', '/interns')).status).toBe(200);
  });

  it('hides every route from callers outside the programme (404 not_found)', async () => {
    const outsider = await member(gw, { programme: false });
    const mine = await (await member(gw)).call('POST', '/interns', { name: freshName() });
    for (const [method, path, body] of [
      ['POST', '/interns', { name: freshName() }],
      ['GET', '/interns', undefined],
      ['GET', `/interns/${mine.body.id}`, undefined],
      ['PATCH', `/interns/${mine.body.id}`, { description: 'x' }],
      ['POST', `/interns/${mine.body.id}/provision`, undefined],
      ['POST', `/interns/${mine.body.id}/suspend`, undefined],
      ['DELETE', `/interns/${mine.body.id}`, {}],
    ] as const) {
      const res = await outsider.call(method, path, body);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
  });

  it('answers 413 payload_too_large and 415 unsupported_media_type', async () => {
    const m = await member(gw);
    const big = await m.call('POST', '/interns', { name: freshName(), instructions: 'x'.repeat(1_048_600) });
    expect(big.status).toBe(413);
    expect(big.body.error.code).toBe('payload_too_large');
    const text = await m.call('POST', '/interns', JSON.stringify({ name: freshName() }), {
      'content-type': 'text/plain',
    });
    expect(text.status).toBe(415);
    expect(text.body.error.code).toBe('unsupported_media_type');
    const created = await m.call('POST', '/interns', { name: freshName() });
    const patch = await m.call('PATCH', `/interns/${created.body.id}`, 'description=x', {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(patch.status).toBe(415);
    expect(patch.body.error.code).toBe('unsupported_media_type');
  });

  it('replays a create: same key and body → 200 same intern; other body → 409 idempotency_key_reused', async () => {
    const m = await member(gw);
    const name = freshName();
    const key = { 'idempotency-key': `create-${name}` };
    const first = await m.call('POST', '/interns', { name, description: 'd', provision: false }, key);
    expect(first.status).toBe(201);
    // Key order does not matter.
    const again = await m.call(
      'POST',
      '/interns',
      JSON.stringify({ provision: false, description: 'd', name }),
      key,
    );
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(first.body.id);
    const reused = await m.call('POST', '/interns', { name, description: 'other' }, key);
    expect(reused.status).toBe(409);
    expect(reused.body.error.code).toBe('idempotency_key_reused');
    // The key is scoped to its creator: another member's same key is a different operation.
    const other = await member(gw);
    const theirs = await other.call('POST', '/interns', { name, description: 'd', provision: false }, key);
    expect(theirs.status).toBe(201);
    expect(theirs.body.id).not.toBe(first.body.id);
  });

  it('derives the key from the body when no Idempotency-Key is sent', async () => {
    const m = await member(gw);
    const body = { name: freshName(), description: 'same body' };
    const first = await m.call('POST', '/interns', body);
    expect(first.status).toBe(201);
    const second = await m.call('POST', '/interns', { description: 'same body', name: body.name });
    expect(second.status).toBe(200);
    expect(second.body.id).toBe(first.body.id);
    // A different body with the same name is a new operation: the name is taken.
    const taken = await m.call('POST', '/interns', { name: body.name, description: 'another' });
    expect(taken.status).toBe(409);
    expect(taken.body.error.code).toBe('name_taken');
  });

  it('keeps names unique per creator within the workspace (409 name_taken, race-safe)', async () => {
    const m = await member(gw);
    const name = freshName();
    expect((await m.call('POST', '/interns', { name }, { 'idempotency-key': 'a' })).status).toBe(201);
    const dup = await m.call('POST', '/interns', { name }, { 'idempotency-key': 'b' });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('name_taken');
    // Another member may use the same name.
    expect((await (await member(gw)).call('POST', '/interns', { name })).status).toBe(201);
    // Concurrent creates of one name: exactly one wins.
    const raced = freshName();
    const results = await Promise.all(
      [1, 2, 3, 4].map((i) =>
        m.call('POST', '/interns', { name: raced }, { 'idempotency-key': `race-${i}` }),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409]);
    // Concurrent creates with one key and body: one intern.
    const same = freshName();
    const replays = await Promise.all(
      [1, 2, 3].map(() => m.call('POST', '/interns', { name: same }, { 'idempotency-key': `same-${same}` })),
    );
    expect(new Set(replays.map((r) => r.body.id)).size).toBe(1);
    for (const r of replays) expect([200, 201]).toContain(r.status);
  });

  it('attaches another intern’s vault, refusing unknown or dying vaults (409 vault_not_attachable)', async () => {
    const m = await member(gw);
    const unknown = await m.call('POST', '/interns', { name: freshName(), vault_id: randomUUID() });
    expect(unknown.status).toBe(409);
    expect(unknown.body.error.code).toBe('vault_not_attachable');

    const owner = await m.call('POST', '/interns', { name: freshName() });
    const borrower = await m.call('POST', '/interns', { name: freshName(), vault_id: owner.body.vault_id });
    expect(borrower.status).toBe(201);
    expect(borrower.body.attached_vault_id).toBe(owner.body.vault_id);
    expect(borrower.body.vault_id).not.toBe(owner.body.vault_id);

    // A vault of another organization's intern is not attachable.
    const foreign = await isolatedMember(gw);
    const theirs = await foreign.call('POST', '/interns', { name: freshName() });
    const cross = await m.call('POST', '/interns', { name: freshName(), vault_id: theirs.body.vault_id });
    expect(cross.status).toBe(409);
    expect(cross.body.error.code).toBe('vault_not_attachable');

    // While the owner is being destroyed its vault cannot be attached.
    let release!: () => void;
    fake.destroyGate.set(
      owner.body.id,
      new Promise<void>((r) => {
        release = r;
      }),
    );
    expect((await m.call('DELETE', `/interns/${owner.body.id}`, {})).status).toBe(202);
    const dying = await m.call('POST', '/interns', { name: freshName(), vault_id: owner.body.vault_id });
    expect(dying.status).toBe(409);
    expect(dying.body.error.code).toBe('vault_not_attachable');
    release();
    await until(
      () => m.call('GET', `/interns/${owner.body.id}`),
      (r) => r.status === 404,
      'owner gone',
    );
    // Borrowers lose the attachment when the owner is destroyed.
    const after = await m.call('GET', `/interns/${borrower.body.id}`);
    expect(after.body.attached_vault_id).toBeNull();
  });

  it('answers 502 upstream_unavailable when the vault step fails; the same request resumes it', async () => {
    const m = await member(gw);
    const vault = gw.services.vault;
    const original = vault.createInternVault;
    let failures = 1;
    vault.createInternVault = async (ws: string, id: string) => {
      if (failures-- > 0) throw new Error('vault store unreachable');
      return original.call(vault, ws, id);
    };
    try {
      const body = { name: freshName(), provision: false };
      const key = { 'idempotency-key': `resume-${body.name}` };
      const failed = await m.call('POST', '/interns', body, key);
      expect(failed.status).toBe(502);
      expect(failed.body.error.code).toBe('upstream_unavailable');
      // The intern exists, without its vault yet.
      const listed = await m.call('GET', '/interns?limit=500');
      const half = listed.body.data.find((i: any) => i.name === body.name);
      expect(half).toMatchObject({ vault_id: null, status: 'stopped' });

      const resumed = await m.call('POST', '/interns', body, key);
      expect(resumed.status).toBe(201);
      expect(resumed.body.id).toBe(half.id);
      expect(resumed.body.vault_id).toMatch(UUID);
      const replayed = await m.call('POST', '/interns', body, key);
      expect(replayed.status).toBe(200);
      expect(replayed.body).toEqual(resumed.body);
    } finally {
      vault.createInternVault = original;
    }
  });

  it('provisions with progress 1..3, then running with a hostname', async () => {
    const m = await member(gw);
    fake.stepMs = 250;
    try {
      const name = freshName('pv');
      const created = await m.call('POST', '/interns', { name, provision: true });
      expect(created.status).toBe(201);
      expect(['queued', 'provisioning']).toContain(created.body.status);
      const seen = new Set<number>();
      const labels = new Set<string>();
      const done = await until(
        async () => {
          const r = await m.call('GET', `/interns/${created.body.id}`);
          if (r.body.progress) {
            seen.add(r.body.progress.step_number);
            labels.add(r.body.progress.step_label);
            expect(r.body.status).toBe('provisioning');
            expect(r.body.progress.total_steps).toBe(gw.services.provisioner.steps.length);
          }
          return r.body;
        },
        (i) => i.status === 'running',
        'running',
      );
      expect([...seen].sort()).toEqual([1, 2, 3]);
      expect([...labels].sort()).toEqual([...gw.services.provisioner.steps].sort());
      expect(done.progress).toBeNull();
      expect(done.last_failure_message).toBeNull();
      expect(done.hostname).toBe(
        `${name}-${created.body.id.replace(/-/g, '').slice(0, 8)}.interns.localhost`,
      );
      const stored = await row(created.body.id);
      expect(stored?.provisioned_model).toBe('gatehouse/echo');
      const steps = fake.steps.filter((s) => s.id === created.body.id);
      expect(steps.map((s) => s.index)).toEqual([0, 1, 2]);
      expect(steps[0]).toMatchObject({ model: 'gatehouse/echo', hostname: done.hostname });
      expect(Date.parse(done.updated_at)).toBeGreaterThan(Date.parse(done.created_at));
    } finally {
      fake.stepMs = 0;
    }
  });

  it('fails on a failing step, provisions again from failed, suspends and refuses invalid transitions', async () => {
    const m = await member(gw);
    const name = freshName('fl');
    fake.failing.set(name, { index: 1, message: 'runtime did not start: port in use' });
    const created = await m.call('POST', '/interns', { name, provision: true });
    const id = created.body.id;
    const failed = await until(
      () => m.call('GET', `/interns/${id}`),
      (r) => r.body.status === 'failed',
      'failed',
    );
    expect(failed.body).toMatchObject({
      last_failure_message: 'runtime did not start: port in use',
      progress: null,
    });
    expect(fake.stops).toContain(id);

    // An unexpected error shows a generic message (the details are logged).
    fake.failing.set(name, { index: 0, message: 'secret internal detail', plain: true });
    expect((await m.call('POST', `/interns/${id}/provision`)).status).toBe(202);
    const generic = await until(
      () => m.call('GET', `/interns/${id}`),
      (r) =>
        r.body.status === 'failed' && r.body.last_failure_message !== 'runtime did not start: port in use',
      'failed again',
    );
    expect(generic.body.last_failure_message).not.toContain('secret internal detail');

    fake.failing.delete(name);
    const again = await m.call('POST', `/interns/${id}/provision`);
    expect(again.status).toBe(202);
    expect(again.body).toEqual({ provisioning: true });
    const running = await until(
      () => m.call('GET', `/interns/${id}`),
      (r) => r.body.status === 'running',
      'running',
    );
    expect(running.body.last_failure_message).toBeNull();

    const twice = await m.call('POST', `/interns/${id}/provision`);
    expect(twice.status).toBe(409);
    expect(twice.body.error.code).toBe('invalid_transition');

    const withBody = await m.call('POST', `/interns/${id}/suspend`, { now: true });
    expect(withBody.status).toBe(400);
    expect(withBody.body.error.code).toBe('invalid_body');

    const suspended = await m.call('POST', `/interns/${id}/suspend`);
    expect(suspended.status).toBe(200);
    expect(suspended.body).toEqual({ suspended: true });
    expect((await m.call('GET', `/interns/${id}`)).body).toMatchObject({ status: 'stopped', progress: null });
    // Suspending a stopped intern is fine; an empty JSON body is no body.
    expect((await m.call('POST', `/interns/${id}/suspend`, '')).status).toBe(200);
    const provBody = await m.call('POST', `/interns/${id}/provision`, { force: true });
    expect(provBody.status).toBe(400);
    expect((await m.call('POST', `/interns/${id}/provision`, {})).status).toBe(202);
    await until(
      () => m.call('GET', `/interns/${id}`),
      (r) => r.body.status === 'running',
      'running again',
    );
  });

  it('suspends a provisioning intern: the loop stops and it stays stopped; provision while under way is 202', async () => {
    const m = await member(gw);
    fake.stepMs = 400;
    try {
      const created = await m.call('POST', '/interns', { name: freshName('sp'), provision: true });
      const id = created.body.id;
      await until(
        () => m.call('GET', `/interns/${id}`),
        (r) => r.body.progress !== null,
        'progress',
      );
      const underWay = await m.call('POST', `/interns/${id}/provision`);
      expect(underWay.status).toBe(202);
      expect((await m.call('POST', `/interns/${id}/suspend`)).status).toBe(200);
      const stopped = await m.call('GET', `/interns/${id}`);
      expect(stopped.body).toMatchObject({ status: 'stopped', progress: null });
      const stepsAtSuspend = fake.steps.filter((s) => s.id === id).length;
      expect(stepsAtSuspend).toBeLessThan(3);
      expect(fake.stops).toContain(id);
      // Suspend waited for the loop to end: nothing moves it on afterwards.
      const later = await m.call('GET', `/interns/${id}`);
      expect(later.body).toMatchObject({ status: 'stopped', progress: null });
      expect(fake.steps.filter((s) => s.id === id).length).toBe(stepsAtSuspend);
    } finally {
      fake.stepMs = 0;
    }
  });

  it('marks a running intern failed when its runtime exits unasked', async () => {
    const m = await member(gw);
    const created = await m.call('POST', '/interns', { name: freshName('ex'), provision: true });
    const id = created.body.id;
    await until(
      () => m.call('GET', `/interns/${id}`),
      (r) => r.body.status === 'running',
      'running',
    );
    await gw.services.interns.runtimeExited(id, 'runtime exited with code 1');
    const failed = await m.call('GET', `/interns/${id}`);
    expect(failed.body).toMatchObject({
      status: 'failed',
      last_failure_message: 'runtime exited with code 1',
    });
    // A stopped intern is not affected.
    await gw.services.interns.runtimeExited(id, 'late exit');
    expect((await m.call('GET', `/interns/${id}`)).body.last_failure_message).toBe(
      'runtime exited with code 1',
    );
  });

  it('deletes: destroying, then gone (404); a repeated delete is 202; the vault goes', async () => {
    const m = await member(gw);
    const created = await m.call('POST', '/interns', { name: freshName('dl'), provision: true });
    const id = created.body.id;
    await until(
      () => m.call('GET', `/interns/${id}`),
      (r) => r.body.status === 'running',
      'running',
    );
    let release!: () => void;
    fake.destroyGate.set(
      id,
      new Promise<void>((r) => {
        release = r;
      }),
    );
    const del = await m.call('DELETE', `/interns/${id}`);
    expect(del.status).toBe(202);
    expect(del.body).toEqual({ deleting: true });
    expect((await m.call('GET', `/interns/${id}`)).body.status).toBe('destroying');
    expect((await m.call('DELETE', `/interns/${id}`, { acknowledge_workspace_loss: false })).status).toBe(
      202,
    );
    for (const [method, path, body] of [
      ['PATCH', `/interns/${id}`, { description: 'x' }],
      ['POST', `/interns/${id}/provision`, undefined],
      ['POST', `/interns/${id}/suspend`, undefined],
    ] as const) {
      const res = await m.call(method, path, body);
      expect(res.status, `${method} ${path}`).toBe(409);
      expect(res.body.error.code).toBe('invalid_transition');
    }
    release();
    const gone = await until(
      () => m.call('GET', `/interns/${id}`),
      (r) => r.status === 404,
      'gone',
    );
    expect(gone.body.error.code).toBe('not_found');
    expect(fake.destroys.filter((d) => d.id === id)).toEqual([{ id, discard: false }]);
    const vaults = await gw.services.db
      .selectFrom('vaults')
      .select('id')
      .where('owner_intern_id', '=', id)
      .execute();
    expect(vaults).toEqual([]);
    const ops = await gw.services.db
      .selectFrom('intern_create_ops')
      .select('intern_id')
      .where('intern_id', '=', id)
      .execute();
    expect(ops).toEqual([]);
    // Its name is free again.
    expect((await m.call('POST', '/interns', { name: created.body.name, description: 'new' })).status).toBe(
      201,
    );
    const bad = await m.call('DELETE', `/interns/${randomUUID()}`, { acknowledge_workspace_loss: 'yes' });
    expect(bad.status).toBe(400);
    const missing = await m.call('DELETE', `/interns/${randomUUID()}`, {});
    expect(missing.status).toBe(404);
  });

  it('leaves destroy_failed when archiving fails; only an acknowledged delete removes it', async () => {
    const m = await member(gw);
    const created = await m.call('POST', '/interns', { name: freshName('df') });
    const id = created.body.id;
    fake.destroyFails.add(id);
    expect((await m.call('DELETE', `/interns/${id}`, {})).status).toBe(202);
    const failed = await until(
      () => m.call('GET', `/interns/${id}`),
      (r) => r.body.status === 'destroy_failed',
      'destroy_failed',
    );
    expect(failed.body.last_failure_message).toMatch(/^workspace_archive_failed: .*disk full/);
    expect((await row(id))?.archive_failed).toBe(1);
    const refused = await m.call('DELETE', `/interns/${id}`, { acknowledge_workspace_loss: false });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('workspace_loss_not_acknowledged');
    expect((await m.call('DELETE', `/interns/${id}`)).status).toBe(409);
    const patch = await m.call('PATCH', `/interns/${id}`, { description: 'x' });
    expect(patch.body.error.code).toBe('invalid_transition');
    fake.destroyFails.delete(id);
    const acked = await m.call('DELETE', `/interns/${id}`, { acknowledge_workspace_loss: true });
    expect(acked.status).toBe(202);
    await until(
      () => m.call('GET', `/interns/${id}`),
      (r) => r.status === 404,
      'gone',
    );
    expect(fake.destroys.filter((d) => d.id === id).map((d) => d.discard)).toEqual([false, true]);
  });

  it('lists newest first with status filters and an opaque cursor', async () => {
    const o = await isolatedMember(gw);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await o.call('POST', '/interns', { name: `list-${i}` });
      expect(r.status).toBe(201);
      ids.push(r.body.id);
    }
    const newestFirst = [...ids].reverse();
    const all = await o.call('GET', '/interns');
    expect(all.status).toBe(200);
    expect(all.body.data.map((i: any) => i.id)).toEqual(newestFirst);
    expect(all.body.has_more).toBe(false);
    expect('next_cursor' in all.body).toBe(false);
    for (const i of all.body.data) expect(Object.keys(i).sort()).toEqual(INTERN_KEYS);

    const pages: string[] = [];
    let cursor: string | undefined;
    const hasMore: boolean[] = [];
    for (;;) {
      const r = await o.call(
        'GET',
        `/interns?limit=2${cursor ? `&starting_after=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(r.status).toBe(200);
      pages.push(...r.body.data.map((i: any) => i.id));
      hasMore.push(r.body.has_more);
      if (!r.body.has_more) {
        expect('next_cursor' in r.body).toBe(false);
        break;
      }
      expect(typeof r.body.next_cursor).toBe('string');
      cursor = r.body.next_cursor;
    }
    expect(pages).toEqual(newestFirst);
    expect(hasMore).toEqual([true, true, false]);

    // Status filters: comma list, duplicates collapsed, repeated parameters too.
    await o.call('POST', `/interns/${ids[0]}/provision`);
    await until(
      () => o.call('GET', `/interns/${ids[0]}`),
      (r) => r.body.status === 'running',
      'running',
    );
    const running = await o.call('GET', '/interns?status=running');
    expect(running.body.data.map((i: any) => i.id)).toEqual([ids[0]]);
    const stopped = await o.call('GET', '/interns?status=stopped,stopped');
    expect(stopped.body.data).toHaveLength(4);
    const both = await o.call('GET', '/interns?status=stopped%2Crunning&limit=500');
    expect(both.body.data).toHaveLength(5);
    const repeated = await o.call('GET', '/interns?status=running&status=failed');
    expect(repeated.body.data).toHaveLength(1);
    const allKnown = await o.call('GET', `/interns?status=${INTERN_STATUSES.join(',')}`);
    expect(allKnown.body.data).toHaveLength(5);
    const own = await o.call('GET', `/interns?workspace_id=${o.workspaceId}`);
    expect(own.body.data).toHaveLength(5);

    for (const q of [
      'status=sleeping',
      'status=running,bogus',
      'limit=0',
      'limit=501',
      'limit=abc',
      'starting_after=not-a-cursor',
      `starting_after=${Buffer.from('["x","y"]').toString('base64url')}`,
      'starting_after=%21%21',
      `workspace_id=${randomUUID()}`,
    ]) {
      const r = await o.call('GET', `/interns?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body.error.code).toBe('invalid_body');
    }
    const max = await o.call('GET', '/interns?limit=500');
    expect(max.status).toBe(200);

    // The organization-acting key of that workspace sees the same interns; other workspaces none.
    const orgView = await client(gw.url, o.orgKey)('GET', '/interns');
    expect(orgView.body.data.map((i: any) => i.id)).toEqual(newestFirst);
    const elsewhere = await api()('GET', '/interns?limit=500');
    expect(elsewhere.body.data.map((i: any) => i.id)).not.toContain(ids[0]);
    const hidden = await api()('GET', `/interns/${ids[0]}`);
    expect(hidden.status).toBe(404);
    expect(hidden.body.error.code).toBe('not_found');
    expect((await api()('PATCH', `/interns/${ids[0]}`, { description: 'x' })).status).toBe(404);
    expect((await api()('DELETE', `/interns/${ids[0]}`, {})).status).toBe(404);
  });

  it('updates name, description, instructions and model (effective on the next provision)', async () => {
    const m = await member(gw);
    const a = await m.call('POST', '/interns', {
      name: freshName('up'),
      description: 'd',
      instructions: 'i',
    });
    const b = await m.call('POST', '/interns', { name: freshName('up') });
    const id = a.body.id;

    const renamed = await m.call('PATCH', `/interns/${id}`, { name: 'renamed-one' });
    expect(renamed.status).toBe(200);
    expect(renamed.body.name).toBe('renamed-one');
    expect(Date.parse(renamed.body.updated_at)).toBeGreaterThan(Date.parse(a.body.updated_at));
    const taken = await m.call('PATCH', `/interns/${id}`, { name: b.body.name });
    expect(taken.status).toBe(409);
    expect(taken.body.error.code).toBe('name_taken');
    expect((await m.call('PATCH', `/interns/${id}`, { name: 'renamed-one' })).status).toBe(200);

    const cleared = await m.call('PATCH', `/interns/${id}`, { description: null, instructions: null });
    expect(cleared.body).toMatchObject({ description: null, instructions: null, name: 'renamed-one' });
    const unchanged = await m.call('PATCH', `/interns/${id}`, {});
    expect(unchanged.status).toBe(200);
    expect(unchanged.body).toEqual(cleared.body);

    for (const model of [
      'openai/gpt-4o',
      'meta-llama/llama-3.1-8b-instruct:free',
      'anthropic/claude-3.5-sonnet',
    ]) {
      const r = await m.call('PATCH', `/interns/${id}`, { model });
      expect(r.status, model).toBe(200);
      expect(r.body.model).toBe(model);
    }
    for (const model of ['gpt-4o', 'a/b/c', '/slug', 'author/', 'author/slug:', 'a b/c', 42, '']) {
      const r = await m.call('PATCH', `/interns/${id}`, { model });
      expect(r.status, String(model)).toBe(400);
      expect(r.body.error.code).toBe('invalid_body');
    }
    for (const body of [
      { extra: 1 },
      { name: 'Bad Name' },
      { description: 'x'.repeat(2001) },
      { status: 'running' },
    ]) {
      const r = await m.call('PATCH', `/interns/${id}`, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.code).toBe('invalid_body');
    }
    expect((await m.call('PATCH', `/interns/${randomUUID()}`, { description: 'x' })).status).toBe(404);

    // The model edit reaches the runtime at the next provision; null goes back to the default.
    await m.call('PATCH', `/interns/${id}`, { model: 'openai/gpt-4o' });
    await m.call('POST', `/interns/${id}/provision`);
    await until(
      () => m.call('GET', `/interns/${id}`),
      (r) => r.body.status === 'running',
      'running',
    );
    expect((await row(id))?.provisioned_model).toBe('openai/gpt-4o');
    const reset = await m.call('PATCH', `/interns/${id}`, { model: null });
    expect(reset.body.model).toBeNull();
    expect((await row(id))?.provisioned_model).toBe('openai/gpt-4o');
    await m.call('POST', `/interns/${id}/suspend`);
    await m.call('POST', `/interns/${id}/provision`);
    await until(
      () => m.call('GET', `/interns/${id}`),
      (r) => r.body.status === 'running',
      'running',
    );
    expect((await row(id))?.provisioned_model).toBe('gatehouse/echo');
  });

  it("provisions with the workspace's default text model when the intern has none", async () => {
    const o = await isolatedMember(gw);
    await gw.services.db
      .updateTable('workspaces')
      .set({ default_text_model: 'anthropic/claude-3.5-sonnet' })
      .where('id', '=', o.workspaceId)
      .execute();
    const created = await o.call('POST', '/interns', { name: 'ws-default', provision: true });
    await until(
      () => o.call('GET', `/interns/${created.body.id}`),
      (r) => r.body.status === 'running',
      'running',
    );
    expect((await row(created.body.id))?.provisioned_model).toBe('anthropic/claude-3.5-sonnet');
    expect((await o.call('GET', `/interns/${created.body.id}`)).body.model).toBeNull();
  });

  it('publishes the routes in the OpenAPI document', async () => {
    const doc = await client(gw.url)('GET', '/openapi.json');
    expect(doc.status).toBe(200);
    expect(Object.keys(doc.body.paths)).toEqual(
      expect.arrayContaining(['/interns', '/interns/{internId}', '/interns/{internId}/provision']),
    );
  });
});

describe.each(databases)('interns limits, regional hosts and restart (%s)', (db) => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startTestGateway(db, {
      env: {
        GATEHOUSE_INTERNS_PER_MEMBER: '2',
        GATEHOUSE_REGIONAL_HOSTS: 'eu.gatehouse.test,ap.gatehouse.test',
      },
    });
    fakeProvisioner(gw);
  });
  afterAll(() => gw?.stop());

  it('caps interns per member (409 intern_limit_reached)', async () => {
    const m = await member(gw);
    expect((await m.call('POST', '/interns', { name: freshName() })).status).toBe(201);
    const second = await m.call('POST', '/interns', { name: freshName() });
    expect(second.status).toBe(201);
    const third = await m.call('POST', '/interns', { name: freshName() });
    expect(third.status).toBe(409);
    expect(third.body.error.code).toBe('intern_limit_reached');
    // Another member has their own allowance; a replay of a finished create still answers 200.
    expect((await (await member(gw)).call('POST', '/interns', { name: freshName() })).status).toBe(201);
    expect((await m.call('POST', '/interns', { name: second.body.name })).status).toBe(200);
  });

  it('refuses regional hostnames with 403', async () => {
    for (const host of ['eu.gatehouse.test', 'AP.gatehouse.test:8080']) {
      const res = await rawRequest(gw.url, {
        method: 'GET',
        path: '/interns',
        headers: { host, authorization: `Bearer ${gw.apiKey}` },
      });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('region_not_allowed');
    }
    const main = await rawRequest(gw.url, {
      method: 'GET',
      path: '/interns',
      headers: { host: 'gatehouse.test', authorization: `Bearer ${gw.apiKey}` },
    });
    expect(main.status).toBe(200);
  });

  it('reconciles at boot: running interns are provisioned again, queued resume, destroying finish', async () => {
    const call = client(gw.url, gw.apiKey);
    const running = await call('POST', '/interns', { name: freshName('rc'), provision: true });
    const before = await until(
      () => call('GET', `/interns/${running.body.id}`),
      (r) => r.body.status === 'running',
      'running',
    );
    const m = await member(gw);
    const queued = await m.call('POST', '/interns', { name: freshName('rq') });
    const doomed = await m.call('POST', '/interns', { name: freshName('rd') });
    await gw.services.db
      .updateTable('interns')
      .set({ status: 'queued' })
      .where('id', '=', queued.body.id)
      .execute();
    await gw.services.db
      .updateTable('interns')
      .set({ status: 'destroying' })
      .where('id', '=', doomed.body.id)
      .execute();

    const runStep = vi.spyOn(LocalProvisioner.prototype, 'runStep').mockImplementation(async () => {});
    const destroy = vi.spyOn(LocalProvisioner.prototype, 'destroy').mockImplementation(async () => {});
    try {
      gw = await gw.restart();
      const again = client(gw.url, gw.apiKey);
      const mine = client(gw.url, m.key);
      await until(
        async () => runStep.mock.calls.filter((c) => c[0].id === running.body.id).length,
        (n) => n === gw.services.provisioner.steps.length,
        'runStep calls for the running intern',
      );
      const back = await until(
        () => again('GET', `/interns/${running.body.id}`),
        (r) => r.body.status === 'running',
        'running after restart',
      );
      expect(back.body.hostname).toBe(before.body.hostname);
      await until(
        () => mine('GET', `/interns/${queued.body.id}`),
        (r) => r.body.status === 'running',
        'queued intern provisioned',
      );
      expect(runStep.mock.calls.filter((c) => c[0].id === queued.body.id).map((c) => c[1])).toEqual([
        0, 1, 2,
      ]);
      await until(
        () => mine('GET', `/interns/${doomed.body.id}`),
        (r) => r.status === 404,
        'destroyed',
      );
      expect(destroy.mock.calls.map((c) => c[0])).toContain(doomed.body.id);
    } finally {
      runStep.mockRestore();
      destroy.mockRestore();
    }
  });
});

describe.each(databases)('interns with lifecycle writes off (%s)', (db) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(db, { env: { GATEHOUSE_INTERNS_WRITES: 'off' } });
  });
  afterAll(() => gw?.stop());

  it('answers 404 not_found on every write, before validating the body; reads still work', async () => {
    const call = client(gw.url, gw.apiKey);
    const id = randomUUID();
    for (const [method, path, body] of [
      ['POST', '/interns', { name: 'valid-name' }],
      ['POST', '/interns', { name: 'X', extra: true }],
      ['PATCH', `/interns/${id}`, { description: 'x' }],
      ['DELETE', `/interns/${id}`, {}],
      ['POST', `/interns/${id}/provision`, undefined],
      ['POST', `/interns/${id}/suspend`, undefined],
    ] as const) {
      const res = await call(method, path, body);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    const list = await call('GET', '/interns');
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ data: [], has_more: false });
  });
});

describe.each(databases)('interns route deadline (%s)', (db) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(db, { env: { GATEHOUSE_INTERNS_DEADLINE_MS: '300' } });
  });
  afterAll(() => gw?.stop());

  it('answers 408 (integer code) past the deadline and stops; the same request then resumes', async () => {
    const call = client(gw.url, gw.apiKey);
    const vault = gw.services.vault;
    const original = vault.createInternVault;
    let finished = 0;
    vault.createInternVault = async (ws: string, id: string) => {
      await sleep(700);
      const v = await original.call(vault, ws, id);
      finished++;
      return v;
    };
    const body = { name: freshName('dd') };
    try {
      const slow = await call('POST', '/interns', body);
      expect(slow.status).toBe(408);
      expect(slow.body.error.code).toBe(408);
      await until(
        async () => finished,
        (n) => n === 1,
        'the slow vault step to finish',
      );
    } finally {
      vault.createInternVault = original;
    }
    // The work stopped at the deadline: the operation is unfinished, the vault id not stored.
    const half = await gw.services.db
      .selectFrom('interns')
      .selectAll()
      .where('name', '=', body.name)
      .executeTakeFirstOrThrow();
    expect(half.vault_id).toBeNull();
    const op = await gw.services.db
      .selectFrom('intern_create_ops')
      .selectAll()
      .where('intern_id', '=', half.id)
      .executeTakeFirstOrThrow();
    expect(op.done).toBe(0);
    const resumed = await call('POST', '/interns', body);
    expect(resumed.status).toBe(201);
    expect(resumed.body.id).toBe(half.id);
    expect(resumed.body.vault_id).toMatch(UUID);
    expect((await call('POST', '/interns', body)).status).toBe(200);
  });
});
