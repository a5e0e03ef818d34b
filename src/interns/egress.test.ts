import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { UsableSecret } from '../vault/service.js';
import { EGRESS_BODY_CAP, sendEgress } from './egress.js';
import { MIN_REFLECTED } from './redaction.js';

interface Seen {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

const TOKEN = 'tok-1234567890-secret';
const OTHER = 'other-secret-value';
/** The mock host is plain HTTP on a random port: these secrets allow both (the port once known). */
const toMock = { allowHttp: true, ports: [] as number[] };
const httpsOnly = { allowHttp: false, ports: [] };
const secrets: UsableSecret[] = [
  { name: 'api_token', value: TOKEN, hosts: ['127.0.0.1'], ...toMock },
  { name: 'other', value: OTHER, hosts: ['example.com'], ...toMock },
  { name: 'legacy', value: 'legacy-value', hosts: null, ...toMock },
  { name: 'tiny', value: 'abc', hosts: ['127.0.0.1'], ...toMock },
  { name: 'strict', value: 'strict-secret-value', hosts: ['127.0.0.1'], ...httpsOnly },
  { name: 'http_only', value: 'http-secret-value', hosts: ['127.0.0.1'], allowHttp: true, ports: [] },
];

/** The forms a reflecting host can send a secret back in (or a piece of it: `piece:<from>:<to>`). */
function reflect(how: string, v: string): string {
  const b = Buffer.from(v);
  const piece = /^piece:(\d+):(\d+)$/.exec(how);
  if (piece) return v.slice(Number(piece[1]), Number(piece[2]));
  const forms: Record<string, string> = {
    json: JSON.stringify({ v }),
    url: encodeURIComponent(v),
    form: new URLSearchParams({ v }).toString(),
    base64: b.toString('base64'),
    base64url: b.toString('base64url'),
    base64_offset1: Buffer.concat([Buffer.from('x'), b]).toString('base64'),
    base64_offset2: Buffer.concat([Buffer.from('xy'), b]).toString('base64'),
    hex: b.toString('hex'),
    HEX: b.toString('hex').toUpperCase(),
    upper: v.toUpperCase(),
    lower: v.toLowerCase(),
  };
  return forms[how] ?? v;
}

let server: Server;
let base: string;
let port: number;
const seen: Seen[] = [];

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const s: Seen = {
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      body: Buffer.concat(chunks).toString(),
    };
    seen.push(s);
    if (req.url?.startsWith('/big')) {
      // The cap falls in the middle of the token: it must not leak cut in half.
      const head = 'a'.repeat(EGRESS_BODY_CAP - 5);
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`${head}${TOKEN}${'b'.repeat(100_000)}`);
      return;
    }
    if (req.url?.startsWith('/compressed/')) {
      // Compressed whatever the request asked for (the coding named in the path).
      const coding = req.url.slice('/compressed/'.length);
      const text = Buffer.from(`value: ${String(req.headers['x-key'])} (end)`);
      const packed =
        coding === 'br'
          ? brotliCompressSync(text)
          : coding === 'deflate'
            ? deflateSync(text)
            : gzipSync(text);
      res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': coding });
      res.end(packed);
      return;
    }
    if (req.url?.startsWith('/reflect/')) {
      // A bound host reflecting the secret it was sent (x-key) in the form the path names,
      // in a header and in a body written a few bytes at a time.
      const form = reflect(
        decodeURIComponent(req.url.slice('/reflect/'.length)),
        String(req.headers['x-key']),
      );
      res.writeHead(200, { 'content-type': 'text/plain', 'x-reflected': form });
      const body = Buffer.from(`value: ${form} (end)`);
      for (let i = 0; i < body.length; i += 3) {
        res.write(body.subarray(i, i + 3));
        await new Promise((r) => setImmediate(r));
      }
      res.end();
      return;
    }
    if (req.url?.startsWith('/redirect')) {
      res.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' }).end();
      return;
    }
    res.writeHead(200, {
      'content-type': 'application/json',
      'x-echo-auth': String(req.headers.authorization ?? ''),
    });
    res.end(JSON.stringify({ ...s, leak: OTHER, tiny: 'abc' }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
  toMock.ports.push(port, 1); // 1: a closed port, for the unreachable case
  base = `http://127.0.0.1:${port}`;
});
afterAll(() => new Promise((r) => server.close(r)));
beforeEach(() => {
  seen.length = 0;
});

const send = (req: unknown, allowPrivate = true) => sendEgress(req, { secrets, allowPrivate });

describe('egress', () => {
  it('fills placeholders in a header value and the URL for a bound host, and redacts echoed values', async () => {
    const r = await send({
      method: 'post',
      url: `${base}/echo?key={{vault:api_token}}`,
      headers: { Authorization: 'Bearer {{vault:api_token}}', 'x-plain': 'hello' },
      body: 'payload',
    });
    expect(r.status).toBe(200);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.method).toBe('POST');
    expect(seen[0]?.url).toBe(`/echo?key=${TOKEN}`);
    expect(seen[0]?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(seen[0]?.headers['x-plain']).toBe('hello');
    expect(seen[0]?.body).toBe('payload');
    if (r.status !== 200) throw new Error('unreachable');
    const text = JSON.stringify(r.body);
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain(OTHER); // any secret of the intern, not only those sent
    expect(r.body.headers['x-echo-auth']).toBe('Bearer [REDACTED]');
    const echoed = JSON.parse(r.body.body);
    expect(echoed.url).toBe('/echo?key=[REDACTED]');
    expect(echoed.leak).toBe('[REDACTED]');
    expect(echoed.tiny).toBe('abc'); // values shorter than 4 characters are not redacted
    expect(r.body.truncated).toBe(false);
  });

  it('refuses a secret for a host it is not bound to, and sends nothing', async () => {
    const r = await send({
      method: 'GET',
      url: `http://localhost:${port}/echo`,
      headers: { 'x-key': '{{vault:api_token}}' },
    });
    expect(r).toEqual({
      status: 403,
      body: {
        error: {
          code: 'host_not_allowed',
          message: 'Secret api_token may not be sent to localhost (it is bound to 127.0.0.1)',
        },
      },
    });
    const legacy = await send({
      method: 'GET',
      url: `${base}/echo`,
      headers: { 'x-key': '{{vault:legacy}}' },
    });
    expect(legacy).toMatchObject({ status: 403, body: { error: { code: 'host_not_allowed' } } });
    expect(JSON.stringify(legacy)).not.toContain('legacy-value');
    const inHost = await send({ method: 'GET', url: 'http://{{vault:api_token}}.example.com/' });
    expect(inHost).toMatchObject({ status: 403, body: { error: { code: 'host_not_allowed' } } });
    const inUserinfo = await send({ method: 'GET', url: `http://{{vault:api_token}}@127.0.0.1:${port}/` });
    expect(inUserinfo).toMatchObject({ status: 403, body: { error: { code: 'host_not_allowed' } } });
    expect(seen).toHaveLength(0);
  });

  it('sends a secret over HTTPS to port 443 only, unless it allows plain HTTP or lists the port', async () => {
    const http = await send({ method: 'GET', url: `${base}/echo`, headers: { 'x-key': '{{vault:strict}}' } });
    expect(http).toEqual({
      status: 403,
      body: {
        error: {
          code: 'scheme_not_allowed',
          message:
            'Secret strict is sent over HTTPS only; use an https:// URL (plain http needs allow_http on the secret)',
        },
      },
    });
    const otherPort = await send({
      method: 'GET',
      url: `https://127.0.0.1:${port}/echo`,
      headers: { 'x-key': '{{vault:strict}}' },
    });
    expect(otherPort).toMatchObject({
      status: 403,
      body: {
        error: { code: 'port_not_allowed', message: expect.stringContaining(`port ${port} (allowed: 443;`) },
      },
    });
    // allow_http alone means port 80; this mock's port is not listed.
    const httpOtherPort = await send({ method: 'GET', url: `${base}/echo?k={{vault:http_only}}` });
    expect(httpOtherPort).toMatchObject({ status: 403, body: { error: { code: 'port_not_allowed' } } });
    expect(JSON.stringify([http, otherPort, httpOtherPort])).not.toMatch(/strict-secret|http-secret/);
    expect(seen).toHaveLength(0);
    // Without a secret, plain HTTP to any port is the intern's own business.
    expect((await send({ method: 'GET', url: `${base}/echo` })).status).toBe(200);
  });

  it('refuses an unknown secret name', async () => {
    const r = await send({ method: 'GET', url: `${base}/echo?x={{vault:nope}}` });
    expect(r).toMatchObject({ status: 403, body: { error: { code: 'secret_unknown' } } });
    expect(seen).toHaveLength(0);
  });

  it('refuses loopback and private destinations unless private egress is allowed', async () => {
    for (const url of [
      `${base}/echo`,
      `http://localhost:${port}/echo`,
      'http://[::1]:9/',
      'http://10.1.2.3/',
    ]) {
      const r = await send({ method: 'GET', url }, false);
      expect(r).toMatchObject({ status: 403, body: { error: { code: 'address_not_allowed' } } });
    }
    expect(seen).toHaveLength(0);
  });

  it('caps the response body at 256 KiB (truncated) without leaking a secret cut by the cap', async () => {
    const r = await send({ method: 'GET', url: `${base}/big` });
    if (r.status !== 200) throw new Error(`unexpected ${r.status}`);
    expect(r.body.truncated).toBe(true);
    expect(r.body.body.length).toBe(EGRESS_BODY_CAP);
    expect(r.body.body).not.toContain(TOKEN.slice(0, 5));
    expect(r.body.body.endsWith('[REDA')).toBe(true);
  });

  it('does not follow redirects', async () => {
    const r = await send({ method: 'GET', url: `${base}/redirect` });
    expect(r).toMatchObject({
      status: 200,
      body: { status: 302, headers: { location: 'http://127.0.0.1:1/elsewhere' } },
    });
    expect(seen).toHaveLength(1);
  });

  it('answers 400 for malformed requests and 502 when the destination cannot be reached', async () => {
    expect((await send({ method: 'GET', url: 'ftp://example.com/' })).status).toBe(400);
    expect((await send({ method: 'GET', url: 'not a url' })).status).toBe(400);
    expect((await send({ method: 'GET', url: base, headers: { a: 1 } })).status).toBe(400);
    expect((await send({ url: base })).status).toBe(400);
    const down = await send({ method: 'GET', url: 'http://127.0.0.1:1/?k={{vault:api_token}}' });
    expect(down.status).toBe(502);
    expect(JSON.stringify(down)).not.toContain(TOKEN);
  });

  describe('a bound host reflecting the secret', () => {
    // Spaces, quotes, slashes, non-ASCII and mixed case: every encoding differs from the value.
    const VALUE = 'Ab/cD+eF gH"iJ é&k=L?m0123456789zZ-qRsTuVwXyZ_98765.4321~Qw3Er5';
    const reflecting: UsableSecret[] = [{ name: 'key', value: VALUE, hosts: ['127.0.0.1'], ...toMock }];
    const fetchReflected = async (how: string) => {
      const r = await sendEgress(
        {
          method: 'GET',
          url: `${base}/reflect/${encodeURIComponent(how)}`,
          headers: { 'x-key': '{{vault:key}}' },
        },
        { secrets: reflecting, allowPrivate: true },
      );
      if (r.status !== 200) throw new Error(`unexpected ${r.status}`);
      return r.body;
    };

    it.each([
      'raw',
      'json',
      'url',
      'form',
      'base64',
      'base64url',
      'base64_offset1',
      'base64_offset2',
      'hex',
      'HEX',
      'upper',
      'lower',
    ])('never shows it %s-encoded (header, and a body streamed in small chunks)', async (how) => {
      const got = await fetchReflected(how);
      expect(seen.at(-1)?.headers['x-key']).toBe(VALUE);
      const form = reflect(how, VALUE);
      const shown = `${got.headers['x-reflected']}\n${got.body}`;
      expect(shown).not.toContain(form);
      expect(got.body).toMatch(/^value: .{0,8}\[REDACTED\].{0,4} \(end\)$/);
      expect(got.headers['x-reflected']).toContain('[REDACTED]');
    });

    it.each([
      'gzip',
      'deflate',
      'br',
    ])('asks for an uncompressed answer, and decodes a %s one to redact it', async (coding) => {
      const r = await sendEgress(
        {
          method: 'GET',
          url: `${base}/compressed/${coding}`,
          headers: { 'x-key': '{{vault:key}}', 'Accept-Encoding': 'gzip, br' },
        },
        { secrets: reflecting, allowPrivate: true },
      );
      expect(seen.at(-1)?.headers['accept-encoding']).toBe('identity');
      if (r.status !== 200) throw new Error(`unexpected ${r.status}`);
      expect(r.body.body).toBe('value: [REDACTED] (end)');
      expect(r.body.headers['content-encoding']).toBeUndefined();
    });

    it('answers 502 for a body in an encoding it cannot decode, showing none of it', async () => {
      const r = await sendEgress(
        { method: 'GET', url: `${base}/compressed/x-custom`, headers: { 'x-key': '{{vault:key}}' } },
        { secrets: reflecting, allowPrivate: true },
      );
      expect(r).toEqual({
        status: 502,
        body: {
          error: {
            code: 502,
            message:
              'The response from 127.0.0.1 is compressed with an encoding egress does not decode (x-custom)',
          },
        },
      });
    });

    it('a secret rebuilt piece by piece over nine requests stays hidden', async () => {
      const step = Math.ceil(VALUE.length / 9); // 7 characters a request
      expect(step).toBeGreaterThanOrEqual(MIN_REFLECTED);
      const pieces: string[] = [];
      for (let i = 0; i < 9; i++) {
        const got = await fetchReflected(`piece:${i * step}:${(i + 1) * step}`);
        // (A space next to the piece may go too: the secret has one there.)
        expect(got.body).toMatch(/^value: \[REDACTED\] ?\(end\)$/);
        pieces.push(got.body);
      }
      expect(pieces.join('')).not.toContain(VALUE.slice(0, step));
    });
  });
});
