/**
 * Vault secrets on the way out and back, end to end: secrets written through the vault API, an
 * intern's http_request sent through the gateway's egress callback, and a bound host (a real
 * server) that reflects the secret it received in every form it can think of.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../src/accounts/caller.js';
import { CALLBACK_PATHS } from '../src/interns/runtime-protocol.js';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { client } from './support/http.js';

/** Spaces, quotes, slashes, non-ASCII and mixed case: each encoding below differs from the value. */
const SECRET = 'Tk/9+qR "zW" é&x=Y?m-0123456789-AbCdEfGhIjKlMnOpQrStUvWxYz_4711';
const HTTPS_SECRET = `tls-only-${randomBytes(12).toString('hex')}`;

/** How the bound host sends back the secret it got in `x-key` (or a piece: `piece:<from>:<to>`). */
function reflect(how: string, v: string): string {
  const b = Buffer.from(v);
  const piece = /^piece:(\d+):(\d+)$/.exec(how);
  if (piece) return v.slice(Number(piece[1]), Number(piece[2]));
  const forms: Record<string, string> = {
    raw: v,
    json: JSON.stringify(v).slice(1, -1),
    url: encodeURIComponent(v),
    form: new URLSearchParams({ v }).toString().slice(2),
    base64: b.toString('base64'),
    base64url: b.toString('base64url'),
    'base64 after 1 byte': Buffer.concat([Buffer.from('!'), b])
      .toString('base64')
      .slice(2),
    'base64 after 2 bytes': Buffer.concat([Buffer.from('!?'), b])
      .toString('base64')
      .slice(3),
    hex: b.toString('hex'),
    HEX: b.toString('hex').toUpperCase(),
    upper: v.toUpperCase(),
    lower: v.toLowerCase(),
  };
  const form = forms[how];
  if (form === undefined) throw new Error(`no form ${how}`);
  return form;
}

describe.each(databases)('vault secrets through egress (%s)', (db) => {
  let g: TestGateway;
  let host: Server;
  let port: number;
  const seen: { url: string; key: string | undefined }[] = [];
  const internId = randomUUID();
  const runtimeToken = `rt-${randomBytes(16).toString('hex')}`;
  const texts: string[] = [];

  /** An egress request as the intern's runtime sends it; every answer is kept for the leak check. */
  async function egress(body: unknown) {
    const res = await fetch(`${g.url}${CALLBACK_PATHS.egress}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${runtimeToken}` },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    texts.push(text);
    return { status: res.status, body: JSON.parse(text) };
  }
  const reflected = (how: string, secret = 'api_key') =>
    egress({
      method: 'GET',
      url: `http://127.0.0.1:${port}/reflect/${encodeURIComponent(how)}`,
      headers: { 'x-key': `{{vault:${secret}}}` },
    });

  beforeAll(async () => {
    host = createServer(async (req, res) => {
      const key = req.headers['x-key'] as string | undefined;
      seen.push({ url: req.url ?? '', key });
      const form = reflect(decodeURIComponent((req.url ?? '').replace(/^\/reflect\//, '')), key ?? '');
      res.writeHead(200, { 'content-type': 'text/plain', 'x-reflected': form });
      // Written a few bytes at a time: a form split across chunks must still be found.
      const body = Buffer.from(`got ${form} ok`);
      for (let i = 0; i < body.length; i += 5) {
        res.write(body.subarray(i, i + 5));
        await new Promise((r) => setImmediate(r));
      }
      res.end();
    });
    await new Promise<void>((r) => host.listen(0, '127.0.0.1', r));
    port = (host.address() as AddressInfo).port;

    g = await startTestGateway(db, { env: { GATEHOUSE_INTERNS_EGRESS_PRIVATE: 'on' } });
    const caller = (await g.services.keys.authenticate(g.apiKey)) as Caller;
    const now = new Date().toISOString();
    await g.services.db
      .insertInto('interns')
      .values({
        id: internId,
        organization_id: caller.organizationId,
        workspace_id: caller.workspaceId,
        creator_user_id: g.ownerUserId,
        owner_key_hash: caller.keyHash,
        name: 'reflector',
        description: null,
        instructions: null,
        model: null,
        status: 'running',
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
    const vaultId = await g.services.vault.createInternVault(caller.workspaceId, internId);
    await g.services.db
      .updateTable('interns')
      .set({ vault_id: vaultId })
      .where('id', '=', internId)
      .execute();
    // The runtime's token is the provisioner's to issue; no runtime process is needed here.
    g.services.provisioner.internOfToken = (t: string) => (t === runtimeToken ? internId : null);

    const call = client(g.url, g.apiKey);
    const put = (name: string, body: object) =>
      call('PUT', `/vault/interns/${internId}/secrets/${name}`, body);
    // The test host is plain HTTP on a random port: this secret allows both.
    const open = await put('api_key', {
      value: SECRET,
      hosts: ['127.0.0.1'],
      allow_http: true,
      ports: [port],
    });
    expect(open.status).toBe(200);
    expect((await put('tls_key', { value: HTTPS_SECRET, hosts: ['127.0.0.1'] })).status).toBe(200);
  });

  afterAll(async () => {
    // Nothing the intern was answered holds a secret, in any form.
    for (const text of texts) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain(HTTPS_SECRET);
    }
    await g?.stop();
    await new Promise((r) => host.close(r));
  });

  it.each([
    'raw',
    'json',
    'url',
    'form',
    'base64',
    'base64url',
    'base64 after 1 byte',
    'base64 after 2 bytes',
    'hex',
    'HEX',
    'upper',
    'lower',
  ])('a host reflecting the secret %s shows the intern [REDACTED], in the header and the body', async (how) => {
    const res = await reflected(how);
    expect(res.status).toBe(200);
    expect(seen.at(-1)?.key).toBe(SECRET);
    const form = reflect(how, SECRET);
    expect(res.body.status).toBe(200);
    expect(res.body.body).not.toContain(form);
    expect(res.body.body).toMatch(/^got .{0,3}\[REDACTED\].{0,3} ok$/);
    expect(res.body.headers['x-reflected']).not.toContain(form);
    expect(res.body.headers['x-reflected']).toContain('[REDACTED]');
  });

  it('rebuilding the secret from nine reflected pieces fails: each piece is redacted', async () => {
    const step = Math.ceil(SECRET.length / 9);
    const shown: string[] = [];
    for (let i = 0; i < 9; i++) {
      const res = await reflected(`piece:${i * step}:${(i + 1) * step}`);
      expect(res.body.body).toMatch(/^got \[REDACTED\] ?ok$/);
      shown.push(res.body.body);
    }
    for (let i = 0; i + 6 <= SECRET.length; i++) expect(shown.join('')).not.toContain(SECRET.slice(i, i + 6));
  });

  it('an http:// request to the bound host does not get an HTTPS-only secret: refused, nothing sent', async () => {
    const before = seen.length;
    const res = await reflected('raw', 'tls_key');
    expect(res).toEqual({
      status: 403,
      body: {
        error: {
          code: 'scheme_not_allowed',
          message:
            'Secret tls_key is sent over HTTPS only; use an https:// URL (plain http needs allow_http on the secret)',
        },
      },
    });
    // https:// on the host's own port: not 443, and the secret lists no ports.
    const otherPort = await egress({
      method: 'GET',
      url: `https://127.0.0.1:${port}/reflect/raw`,
      headers: { 'x-key': '{{vault:tls_key}}' },
    });
    expect(otherPort.status).toBe(403);
    expect(otherPort.body.error.code).toBe('port_not_allowed');
    expect(seen.length).toBe(before);
  });
});
