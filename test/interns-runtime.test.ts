/**
 * Interns' runtimes with a real gateway: the runtime callbacks (model calls through the routing
 * engine as the owner key, egress with host-bound vault secrets) and the hostname proxy. The
 * runtime is started by driving LocalProvisioner's steps for an intern row inserted directly.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../src/accounts/caller.js';
import {
  CALLBACK_PATHS,
  RUN_GRANT_HEADER,
  RUNTIME_PATHS,
  RUNTIME_TOKEN_HEADER,
  type RuntimeEvent,
} from '../src/interns/runtime-protocol.js';
import { encrypt } from '../src/lib/crypto.js';
import { secretAad } from '../src/vault/service.js';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient } from './support/http.js';

const SECRET = 'sk-live-0123456789abcdef';
const HTTPS_SECRET = 'sk-tls-only-9876543210fedcba';

interface Seen {
  url: string;
  headers: Record<string, string | string[] | undefined>;
}

/** A GET with an explicit Host header (fetch forbids setting it). */
function getWithHost(url: string, host: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: string }>(
    (resolve, reject) => {
      const req = httpRequest(url, { headers: { ...headers, host } }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => {
          body += c.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      });
      req.on('error', reject);
      req.end();
    },
  );
}

describe.each(databases)('interns runtimes with a real gateway (%s)', (db) => {
  let g: TestGateway;
  let echo: Server;
  let echoUrl: string;
  const seen: Seen[] = [];
  let caller: Caller;
  const internId = randomUUID();
  const hostname = `helper-${internId.slice(0, 8)}.interns.localhost`;
  let runtimeToken = '';
  let grant = '';
  let runtimeUrl = '';

  beforeAll(async () => {
    echo = createServer((req, res) => {
      seen.push({ url: req.url ?? '', headers: req.headers });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ url: req.url, authorization: req.headers.authorization ?? null }));
    });
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    echoUrl = `http://127.0.0.1:${(echo.address() as AddressInfo).port}`;

    g = await startTestGateway(db, {
      env: { GATEHOUSE_INTERNS_EGRESS_PRIVATE: 'on', GATEHOUSE_CREDITS: 'enforce' },
    });
    caller = (await g.services.keys.authenticate(g.apiKey)) as Caller;
    const now = new Date().toISOString();
    await g.services.db
      .insertInto('interns')
      .values({
        id: internId,
        organization_id: caller.organizationId,
        workspace_id: caller.workspaceId,
        creator_user_id: caller.userId ?? g.ownerUserId,
        owner_key_hash: caller.keyHash,
        name: 'helper',
        description: null,
        instructions: 'You help.',
        model: null,
        status: 'running',
        last_failure_message: null,
        progress_step: null,
        progress_total: null,
        progress_label: null,
        hostname,
        vault_id: null,
        attached_vault_id: null,
        provisioned_model: 'gatehouse/scripted',
        created_at: now,
        updated_at: now,
      })
      .execute();
    const vaultId = await g.services.vault.createInternVault(caller.workspaceId, internId);
    await g.services.db
      .updateTable('interns')
      .set({ vault_id: vaultId })
      .where('id', '=', internId)
      .execute();
    await g.services.db
      .insertInto('vault_secrets')
      .values({
        vault_id: vaultId,
        name: 'api_token',
        value_sealed: encrypt(g.services.config.masterKey, SECRET, secretAad(vaultId, 'api_token')),
        hosts_json: JSON.stringify(['127.0.0.1']),
        fingerprint: null,
        created_at: now,
        updated_at: now,
        // The echo host is plain HTTP on a random port: this secret allows both.
        allow_http: 1,
        ports_json: JSON.stringify([Number(new URL(echoUrl).port)]),
      })
      .execute();
    // The same host, but the default transport: HTTPS to port 443 only.
    await g.services.db
      .insertInto('vault_secrets')
      .values({
        vault_id: vaultId,
        name: 'https_token',
        value_sealed: encrypt(g.services.config.masterKey, HTTPS_SECRET, secretAad(vaultId, 'https_token')),
        hosts_json: JSON.stringify(['127.0.0.1']),
        fingerprint: null,
        created_at: now,
        updated_at: now,
      })
      .execute();
    // Runs are billed to the key whose chat request issued the run grant (here, the owner's).
    grant = g.services.interns.grants.issue(internId, caller);

    const signal = new AbortController().signal;
    const target = {
      id: internId,
      name: 'helper',
      workspaceId: caller.workspaceId,
      hostname,
      model: 'gatehouse/scripted',
      instructions: 'You help.',
    };
    for (let i = 0; i < g.services.provisioner.steps.length; i++)
      await g.services.provisioner.runStep(target, i, signal);
    const ep = g.services.provisioner.endpoint(internId);
    if (!ep) throw new Error('the runtime did not start');
    runtimeToken = ep.token;
    runtimeUrl = ep.url;
  }, 60_000);

  afterAll(async () => {
    await g?.stop();
    await new Promise((r) => echo.close(r));
  });

  const callback = (
    path: string,
    body: unknown,
    token: string | null = runtimeToken,
    runGrant: string | null = grant,
  ) =>
    fetch(`${g.url}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(runGrant ? { [RUN_GRANT_HEADER]: runGrant } : {}),
      },
      body: JSON.stringify(body),
    });

  async function turn(content: string, session = `s-${randomUUID()}`) {
    const res = await fetch(`${runtimeUrl}${RUNTIME_PATHS.turns}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [RUNTIME_TOKEN_HEADER]: runtimeToken },
      body: JSON.stringify({
        session_id: session,
        approval_mode: 'self-drive',
        owner: 'test-owner',
        grant,
        message: { role: 'user', content },
      }),
    });
    expect(res.status).toBe(200);
    const events = (await res.text())
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as RuntimeEvent);
    return { session, events };
  }

  it('callbacks need a runtime token', async () => {
    const body = { messages: [{ role: 'user', content: 'hi' }] };
    for (const path of [CALLBACK_PATHS.chat, CALLBACK_PATHS.egress]) {
      expect((await callback(path, body, null)).status).toBe(401);
      expect((await callback(path, body, 'not-a-runtime-token')).status).toBe(401);
      // An API key is not a runtime token either.
      expect((await callback(path, body, g.apiKey)).status).toBe(401);
    }
  });

  it('chat callback: policy applies as for any call of the owner key (no credits → 402, a failed run)', async () => {
    const res = await callback(CALLBACK_PATHS.chat, { messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(402);
    const { events } = await turn('hello');
    expect(events).toEqual([
      { type: 'model', model: 'gatehouse/scripted' },
      {
        type: 'end',
        finish_reason: 'error',
        usage: null,
        error: { code: 402, message: expect.any(String), reason: 'turn_failed', retryable: false },
      },
    ]);
    await adminClient(g.url)('POST', '/admin/credits', {
      organization_id: g.organizationId,
      amount_usd: 100,
    });
  });

  it('chat callback: runs through the routing engine on the intern’s provisioned model', async () => {
    const res = await callback(CALLBACK_PATHS.chat, {
      model: 'someone/else',
      stream: true,
      messages: [{ role: 'user', content: 'hello from the intern' }],
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.model).toBe('gatehouse/scripted');
    expect(body.choices[0].message.content).toBe('hello from the intern');
    expect(body.usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 4, total_tokens: 8 });
    expect(typeof body.usage.cost).toBe('number');
    // Recorded like any call of the owner key.
    await g.services.accountant.flush();
    const row = await g.services.db
      .selectFrom('generations')
      .selectAll()
      .where('id', '=', body.id)
      .executeTakeFirst();
    expect(row).toMatchObject({ key_hash: caller.keyHash, status: 'success', model: 'gatehouse/scripted' });
  });

  it('chat callback: no run grant, a revoked one, another intern’s, or a disabled calling key → 401; a bad body → 400', async () => {
    const hi = { messages: [{ role: 'user', content: 'hi' }] };
    const none = await callback(CALLBACK_PATHS.chat, hi, runtimeToken, null);
    expect(none.status).toBe(401);
    expect(((await none.json()) as any).error.message).toMatch(/run grant/);
    const revoked = g.services.interns.grants.issue(internId, caller);
    g.services.interns.grants.revoke(revoked);
    expect((await callback(CALLBACK_PATHS.chat, hi, runtimeToken, revoked)).status).toBe(401);
    const elsewhere = g.services.interns.grants.issue(randomUUID(), caller);
    expect((await callback(CALLBACK_PATHS.chat, hi, runtimeToken, elsewhere)).status).toBe(401);
    const saved = g.services.interns.grantCaller;
    g.services.interns.grantCaller = async () => null;
    try {
      const res = await callback(CALLBACK_PATHS.chat, hi);
      expect(res.status).toBe(401);
      expect(((await res.json()) as any).error.message).toMatch(/calling key/);
    } finally {
      g.services.interns.grantCaller = saved;
    }
    const bad = await callback(CALLBACK_PATHS.chat, { messages: 'nope' });
    expect(bad.status).toBe(400);
  });

  it('egress callback: substitutes for the bound host, redacts the echo, refuses other hosts', async () => {
    const ok = await callback(CALLBACK_PATHS.egress, {
      method: 'GET',
      url: `${echoUrl}/echo?k={{vault:api_token}}`,
      headers: { authorization: 'Bearer {{vault:api_token}}' },
    });
    expect(ok.status).toBe(200);
    const got = (await ok.json()) as any;
    expect(seen.at(-1)).toMatchObject({
      url: `/echo?k=${SECRET}`,
      headers: { authorization: `Bearer ${SECRET}` },
    });
    expect(JSON.stringify(got)).not.toContain(SECRET);
    expect(JSON.parse(got.body)).toEqual({ url: '/echo?k=[REDACTED]', authorization: 'Bearer [REDACTED]' });

    const before = seen.length;
    const port = new URL(echoUrl).port;
    const refused = await callback(CALLBACK_PATHS.egress, {
      method: 'GET',
      url: `http://localhost:${port}/echo`,
      headers: { 'x-key': '{{vault:api_token}}' },
    });
    expect(refused.status).toBe(403);
    const r = (await refused.json()) as any;
    expect(r.error.code).toBe('host_not_allowed');
    expect(r.error.message).toContain('api_token');
    expect(r.error.message).toContain('localhost');
    expect(JSON.stringify(r)).not.toContain(SECRET);
    const unknown = await callback(CALLBACK_PATHS.egress, {
      method: 'GET',
      url: `${echoUrl}/?k={{vault:missing}}`,
    });
    expect(unknown.status).toBe(403);
    expect(((await unknown.json()) as any).error.code).toBe('secret_unknown');
    // A secret without allow_http never goes over plain http, even to its bound host.
    const plain = await callback(CALLBACK_PATHS.egress, {
      method: 'GET',
      url: `${echoUrl}/echo`,
      headers: { authorization: 'Bearer {{vault:https_token}}' },
    });
    expect(plain.status).toBe(403);
    const p = (await plain.json()) as any;
    expect(p.error).toEqual({
      code: 'scheme_not_allowed',
      message:
        'Secret https_token is sent over HTTPS only; use an https:// URL (plain http needs allow_http on the secret)',
    });
    expect(seen.length).toBe(before);
  });

  it('a run: the dev model calls http_request with a secret; the result is redacted; usage is summed', async () => {
    const args = {
      method: 'GET',
      url: `${echoUrl}/run?k={{vault:api_token}}`,
      headers: { authorization: 'Bearer {{vault:api_token}}' },
    };
    const directive = {
      steps: [{ tool_calls: [{ name: 'http_request', arguments: args }] }, { text: 'All done.' }],
    };
    const { session, events } = await turn(`Fetch it. gatehouse:${JSON.stringify(directive)}`);
    expect(events[0]).toEqual({ type: 'model', model: 'gatehouse/scripted' });
    const lines = events.filter((e) => e.type === 'reasoning').map((e) => (e as { text: string }).text);
    expect(lines.join('')).toMatch(/http_request\(GET .*\/run\?k=\{\{vault:api_token\}\}\) → HTTP 200/);
    expect(events.filter((e) => e.type === 'content')).toEqual([{ type: 'content', text: 'All done.' }]);
    const end = events.at(-1) as Extract<RuntimeEvent, { type: 'end' }>;
    expect(end).toMatchObject({ type: 'end', finish_reason: 'stop' });
    expect(end.usage?.total_tokens).toBeGreaterThan(0);
    expect(typeof end.usage?.cost).toBe('number');
    expect(seen.at(-1)?.headers.authorization).toBe(`Bearer ${SECRET}`);
    const file = readFileSync(
      join(g.services.config.interns.runtimeDir, internId, '.sessions', `${session}.json`),
      'utf8',
    );
    expect(file).not.toContain(SECRET);
    expect(file).toContain('[REDACTED]');
  });

  it('a run: a refused egress is told to the model and in a reasoning line', async () => {
    const port = new URL(echoUrl).port;
    const args = {
      method: 'GET',
      url: `http://localhost:${port}/x`,
      headers: { 'x-key': '{{vault:api_token}}' },
    };
    const directive = {
      steps: [{ tool_calls: [{ name: 'http_request', arguments: args }] }, { text: 'Could not.' }],
    };
    const { events } = await turn(`gatehouse:${JSON.stringify(directive)}`);
    const text = events
      .filter((e) => e.type === 'reasoning')
      .map((e) => (e as { text: string }).text)
      .join('');
    expect(text).toMatch(
      /refused by the gateway — host_not_allowed: Secret api_token may not be sent to localhost/,
    );
    expect(text).not.toContain(SECRET);
    expect(events.at(-1)).toMatchObject({ type: 'end', finish_reason: 'stop' });
  });

  it('host proxy: the intern’s hostname reaches its runtime’s public side, never /_runtime/', async () => {
    const page = await getWithHost(`${g.url}/`, `${hostname.toUpperCase()}:8080`);
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.body).toContain('helper');
    const status = await getWithHost(`${g.url}/status`, hostname);
    expect(JSON.parse(status.body)).toEqual({
      name: 'helper',
      model: 'gatehouse/scripted',
      status: 'running',
    });
    const hidden = await getWithHost(`${g.url}${RUNTIME_PATHS.health}`, hostname, {
      [RUNTIME_TOKEN_HEADER]: runtimeToken,
    });
    expect(hidden.status).toBe(404);
    for (const sneaky of [
      '/./_runtime/health',
      '/%5Fruntime/health',
      '//_runtime/health',
      '/x/../_runtime/turns',
    ]) {
      const r = await getWithHost(`${g.url}${sneaky}`, hostname, { [RUNTIME_TOKEN_HEADER]: runtimeToken });
      expect(r.status, sneaky).toBe(404);
      expect(r.body, sneaky).not.toContain('"ok"');
    }
    const unknown = await getWithHost(`${g.url}/`, 'nobody-1234.interns.localhost');
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.body)).toEqual({
      error: { code: 404, message: 'No intern is served at nobody-1234.interns.localhost' },
    });
    // Other hosts reach the gateway's own routes.
    const health = await getWithHost(`${g.url}/health`, '127.0.0.1');
    expect(JSON.parse(health.body)).toEqual({ status: 'ok' });
    const gatewayStatus = await getWithHost(`${g.url}/status`, 'gateway.example.com');
    expect(gatewayStatus.status).toBe(404);
    expect(gatewayStatus.body).not.toContain('gatehouse/scripted');
  });
});
