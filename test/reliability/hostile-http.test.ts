/**
 * Hostile HTTP (issue 8), over raw sockets (node:net) so nothing is normalized or refused by a
 * client library first: header injection, oversized headers, path traversal in media object keys
 * and in vault secret names, and slow clients (slow loris, slow bodies, idle connections) against
 * the configured timeouts — while long responses (a slow SSE stream, a slow model) and a large
 * batch upload still complete. One gateway and one media service run with short timeouts
 * (GATEHOUSE_HEADERS_TIMEOUT_MS=1500, GATEHOUSE_REQUEST_TIMEOUT_MS=3000,
 * GATEHOUSE_KEEP_ALIVE_TIMEOUT_MS=2000) so the slow-client cases take seconds.
 */

import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMediaConfig } from '../../src/media/config.js';
import { type MediaHandle, startMedia } from '../../src/media/server.js';
import { FilesystemStore } from '../../src/media/storage/filesystem.js';
import type { GeneratedOutput, MediaGenerator } from '../../src/media/types.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { adminClient, client } from '../support/http.js';
import { stopHarvesting } from '../support/secrets-audit.js';
import { writeHostileFigures } from './hostile-shared.js';

// Generated strings sent as BYOK keys or vault values are reused in every other field: not secrets.
stopHarvesting();

const TIMEOUTS = { headers: 1500, request: 3000, keepAlive: 2000 };
/** Node looks for expired connections every quarter of the shortest deadline (http-server.ts). */
const CHECK_MS = TIMEOUTS.headers / 4;
/** What a loaded CI machine may add to a deadline before the close is seen. */
const SLACK_MS = 1500;

// ---------------------------------------------------------------------------------------------
// A raw HTTP/1.1 connection: write bytes as they are, read responses as the server sent them.

interface Answer {
  status: number;
  /** Header lines as received, names lowercased. */
  headers: [string, string][];
  body: string;
}

class Raw {
  readonly socket: Socket;
  readonly opened = Date.now();
  private buf = Buffer.alloc(0);
  private waiters: (() => void)[] = [];
  /** Resolves with the time (ms since opening) when the server closed or reset the connection. */
  readonly closed: Promise<number>;
  reset = false;

  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.setNoDelay(true);
    this.socket.on('data', (d) => {
      this.buf = Buffer.concat([this.buf, d]);
      this.wake();
    });
    this.socket.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNRESET' || err.code === 'EPIPE') this.reset = true;
    });
    this.closed = new Promise((resolve) =>
      this.socket.on('close', () => {
        this.wake();
        resolve(Date.now() - this.opened);
      }),
    );
  }

  static async open(port: number): Promise<Raw> {
    const r = new Raw(port);
    await new Promise<void>((resolve, reject) => {
      r.socket.once('connect', resolve);
      r.socket.once('error', reject);
    });
    return r;
  }

  private wake() {
    for (const w of this.waiters.splice(0)) w();
  }

  write(data: string | Buffer): boolean {
    if (this.socket.destroyed || !this.socket.writable) return false;
    this.socket.write(data);
    return true;
  }

  /** The next complete response (content-length or chunked), or null once the connection closed without one. */
  async response(timeoutMs = 10_000): Promise<Answer | null> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const parsed = this.parse();
      if (parsed) return parsed;
      if (this.socket.destroyed || this.socket.readableEnded) return this.parse(true);
      if (Date.now() > deadline)
        throw new Error(`no complete response within ${timeoutMs} ms: ${this.buf.toString().slice(0, 200)}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
  }

  private parse(atClose = false): Answer | null {
    const end = this.buf.indexOf('\r\n\r\n');
    if (end < 0) return null;
    const [statusLine, ...lines] = this.buf.subarray(0, end).toString('latin1').split('\r\n');
    const headers = lines.map((l) => {
      const i = l.indexOf(':');
      return [l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim()] as [string, string];
    });
    const get = (n: string) => headers.find(([k]) => k === n)?.[1];
    let rest = this.buf.subarray(end + 4);
    let body: Buffer;
    const length = get('content-length');
    if (length !== undefined) {
      if (rest.length < Number(length)) return null;
      body = rest.subarray(0, Number(length));
      rest = rest.subarray(Number(length));
    } else if (get('transfer-encoding') === 'chunked') {
      const parts: Buffer[] = [];
      let at = 0;
      for (;;) {
        const eol = rest.indexOf('\r\n', at);
        if (eol < 0) return null;
        const size = Number.parseInt(rest.subarray(at, eol).toString(), 16);
        if (rest.length < eol + 2 + size + 2) return null;
        if (size === 0) {
          at = eol + 4;
          break;
        }
        parts.push(rest.subarray(eol + 2, eol + 2 + size));
        at = eol + 2 + size + 2;
      }
      body = Buffer.concat(parts);
      rest = rest.subarray(at);
    } else if (atClose) {
      body = rest;
      rest = Buffer.alloc(0);
    } else return null;
    this.buf = rest;
    return { status: Number(statusLine?.split(' ')[1]), headers, body: body.toString('utf8') };
  }

  close() {
    this.socket.destroy();
  }
}

/** One request on a fresh connection; its answer (null when the server closed without one). */
async function exchange(
  port: number,
  request: string | Buffer,
): Promise<{ answer: Answer | null; raw: Raw }> {
  const raw = await Raw.open(port);
  raw.write(request);
  const answer = await raw.response();
  return { answer, raw };
}

const json = (text: string): any => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

/** A request in the gateway's envelope, or the media service's. */
function enveloped(a: Answer | null, media = false): boolean {
  if (!a?.headers.some(([k, v]) => k === 'content-type' && v.startsWith('application/json'))) return false;
  const b = json(a.body);
  if (media)
    return b?.success === false && typeof b.message === 'string' && typeof b.error?.code === 'string';
  return (
    typeof b?.error?.message === 'string' && (b.error.code === a.status || typeof b.error.code === 'string')
  );
}

const request = (method: string, path: string, headers: Record<string, string> = {}, body = '') =>
  `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${Object.entries({
    ...headers,
    ...(body ? { 'Content-Length': String(Buffer.byteLength(body)) } : {}),
  })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n${body}`;

// ---------------------------------------------------------------------------------------------

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const fixedGenerator: MediaGenerator = {
  async generate(): Promise<GeneratedOutput[]> {
    return [{ data: PNG, contentType: 'image/png', extension: 'png' }];
  },
};
const SECRET = `outside-the-store-${randomUUID()}`;

const figures = {
  injections: 0,
  injected: 0,
  parser400: 0,
  oversized: 0,
  oversized431: 0,
  traversalHttp: 0,
  traversalStore: 0,
  escapes: 0,
  vaultNames: 0,
  vault400: 0,
  vaultChanged: 0,
  slow: {} as Record<string, number>,
  longResponses: {} as Record<string, number>,
  batchUploadMb: 0,
  batchUploadS: 0,
  reuseAfterRefusal: '',
};

afterAll(() => {
  if (figures.injections === 0) return;
  const s = (ms: number | undefined) => (ms === undefined ? 'not run' : `${(ms / 1000).toFixed(1)} s`);
  writeHostileFigures('http', {
    title: 'raw-socket HTTP: header injection, oversized headers, path traversal, slow clients',
    rows: [
      [
        'header-injection requests (CR, LF, NUL, obs-fold, encoded CRLF; X-Title, HTTP-Referer, Idempotency-Key, X-Request-Id, paths)',
        figures.injections,
      ],
      [
        '— refused by the HTTP parser (bare CR or LF, NUL, obs-fold, CRLF CRLF): 400 in the envelope',
        figures.parser400,
      ],
      ['injected headers seen in responses', figures.injected],
      ['oversized requests (20 KB header, 2,000 headers, 20 KB URL; gateway and media)', figures.oversized],
      ['— answered 431/414 in the service envelope, connection closed', figures.oversized431],
      [
        'media /files traversal requests (../, %2e%2e%2f, %252e, absolute, NUL, backslash, overlong UTF-8)',
        figures.traversalHttp,
      ],
      ['hostile keys opened on the filesystem store directly', figures.traversalStore],
      ['files read outside the store', figures.escapes],
      ['vault requests with hostile secret names (../, %2f, NUL, case, length, unicode)', figures.vaultNames],
      ['— answered 400 naming the rule', figures.vault400],
      ['— secrets created, changed or deleted by them', figures.vaultChanged],
      [
        `silent connection closed after (headers timeout ${TIMEOUTS.headers / 1000} s)`,
        s(figures.slow.silent),
      ],
      ['slow loris (one header byte a second) closed after', s(figures.slow.headers)],
      [
        `slow JSON body (one byte a second) closed after (request timeout ${TIMEOUTS.request / 1000} s)`,
        s(figures.slow.body),
      ],
      ['slow chunked batch body closed after', s(figures.slow.batch)],
      ['slow media multipart body closed after', s(figures.slow.media)],
      [
        `idle keep-alive connection closed after (keep-alive timeout ${TIMEOUTS.keepAlive / 1000} s + Node's 1 s)`,
        s(figures.slow.keepAlive),
      ],
      ['SSE stream longer than the request timeout: completed after', s(figures.longResponses.sse)],
      ['non-streamed answer slower than the request timeout: completed after', s(figures.longResponses.slow)],
      [
        'batch body uploaded under the short request timeout (MB, s)',
        `${figures.batchUploadMb} MB in ${figures.batchUploadS} s`,
      ],
      [
        'next request on a connection whose batch body was refused mid-way',
        figures.reuseAfterRefusal || 'not run',
      ],
    ],
    notes: [
      'A CRLF inside a raw header value only starts another request header; a bare CR or LF, NUL, an obs-fold, or the bytes after a CRLF CRLF that ended the request early are refused by Node’s strict parser before any route runs. Nothing reaches a response header: the gateway echoes no request header (its x-request-id is its own UUID) and percent-encoded CRLF stays in URLs and JSON bodies.',
      'Slow clients are bounded by GATEHOUSE_HEADERS_TIMEOUT_MS (request line and headers), GATEHOUSE_REQUEST_TIMEOUT_MS (the body) and GATEHOUSE_KEEP_ALIVE_TIMEOUT_MS (idle); defaults 30 s, 300 s, 72 s. Only reading is bounded: responses may take as long as they need.',
    ],
  });
});

describe('hostile HTTP over raw sockets', () => {
  let gw: TestGateway;
  let media: MediaHandle;
  let dir: string;
  let storeDir: string;
  let gwPort: number;
  let mediaPort: number;
  const T = {
    GATEHOUSE_HEADERS_TIMEOUT_MS: String(TIMEOUTS.headers),
    GATEHOUSE_REQUEST_TIMEOUT_MS: String(TIMEOUTS.request),
    GATEHOUSE_KEEP_ALIVE_TIMEOUT_MS: String(TIMEOUTS.keepAlive),
  };

  beforeAll(async () => {
    gw = await startTestGateway('sqlite', {
      env: {
        ...T,
        GATEHOUSE_WORKER: 'off',
        GATEHOUSE_BATCH_RATE_LIMIT: '0',
        GATEHOUSE_INTERNS_STEP_DELAY_MS: '20000',
      },
    });
    gwPort = Number(new URL(gw.url).port);
    dir = await mkdtemp(join(tmpdir(), 'hostile-http-'));
    storeDir = join(dir, 'store');
    // Files next to the store a traversal would reach: the parent, and a sibling sharing its prefix.
    await writeFile(join(dir, 'secret.txt'), SECRET);
    await writeFile(join(dir, 'secret.png'), SECRET);
    await mkdir(join(dir, 'store-sibling'), { recursive: true });
    await writeFile(join(dir, 'store-sibling', 'secret.png'), SECRET);
    media = await startMedia(
      loadMediaConfig({
        ...T,
        MEDIA_PORT: '0',
        MEDIA_HOST: '127.0.0.1',
        GATEHOUSE_MEDIA_STORE_DIR: storeDir,
      }),
      { log: false, generator: fixedGenerator, keys: gw.services.keys },
    );
    mediaPort = Number(new URL(media.url).port);
    const credits = await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
    expect(credits.status).toBe(201);
  });

  afterAll(async () => {
    await media?.close();
    await gw?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function alive() {
    for (const base of [gw.url, media.url]) expect((await fetch(`${base}/health`)).status, base).toBe(200);
  }

  it('splits no injected header into a response (CR, LF, NUL, obs-fold, encoded CRLF)', async () => {
    const api = `Bearer ${gw.apiKey}`;
    const chat = JSON.stringify({ model: 'gatehouse/echo', messages: [{ role: 'user', content: 'hi' }] });
    const values = [
      'a\r\nX-Injected: 1',
      'a\nX-Injected: 1',
      'a\rX-Injected: 1',
      'a\r\n X-Injected: 1', // obs-fold
      'a\r\n\r\nX-Injected: 1',
      'a\u0000X-Injected: 1',
      'a%0d%0aX-Injected:%201',
      'é\u00ffX-Injected', // obs-text bytes
    ];
    const targets: [string, (v: string) => string][] = [
      [
        'X-Title',
        (v) =>
          request(
            'POST',
            '/api/v1/chat/completions',
            { Authorization: api, 'Content-Type': 'application/json', 'X-Title': v },
            chat,
          ),
      ],
      [
        'HTTP-Referer',
        (v) =>
          request(
            'POST',
            '/api/v1/chat/completions',
            { Authorization: api, 'Content-Type': 'application/json', 'HTTP-Referer': v },
            chat,
          ),
      ],
      [
        'Idempotency-Key',
        (v) =>
          request(
            'POST',
            '/api/v1/interns',
            { Authorization: api, 'Content-Type': 'application/json', 'Idempotency-Key': v },
            JSON.stringify({ name: `idem-${randomUUID().slice(0, 8)}` }),
          ),
      ],
      ['X-Request-Id', (v) => request('GET', '/health', { 'X-Request-Id': v })],
    ];
    const problems: string[] = [];
    for (const [name, build] of targets)
      for (const v of values) {
        figures.injections++;
        const { answer, raw } = await exchange(gwPort, Buffer.from(build(v), 'latin1'));
        raw.close();
        const label = `${name}: ${JSON.stringify(v)}`;
        if (!answer) {
          problems.push(`${label}: closed without an answer`);
          continue;
        }
        if (answer.headers.some(([k]) => k === 'x-injected')) {
          figures.injected++;
          problems.push(`${label}: X-Injected came back as a header`);
        }
        const requestId = answer.headers.find(([k]) => k === 'x-request-id')?.[1];
        if (requestId !== undefined && !/^[0-9a-f-]{36}$/.test(requestId))
          problems.push(`${label}: x-request-id ${requestId}`);
        // Either refused by the HTTP parser in the standard envelope, or served normally.
        if (answer.status >= 500 || (answer.status >= 400 && !enveloped(answer)))
          problems.push(`${label}: ${answer.status} ${answer.body}`);
        else if (answer.status === 400 && /not valid HTTP/.test(answer.body)) figures.parser400++;
      }

    // Bare LF, bare CR, obs-fold and NUL — and what follows a CRLF CRLF, which ended the request
    // early — are not valid HTTP: refused before any route, for every header.
    expect(figures.parser400).toBe(targets.length * 5);

    // CRLF percent-encoded in a path or a query: it stays in the URL or the JSON body, never a header.
    for (const path of [
      '/api/v1/nope%0d%0aX-Injected:%201',
      '/docs?x=%0d%0aX-Injected:%201',
      '/api/v1/batches/x%0d%0aX-Injected:%201/results',
      '/api/v1/models?%0d%0aX-Injected:%201',
      '/api/v1/keys%0d%0aX-Injected:%201',
    ]) {
      figures.injections++;
      const { answer, raw } = await exchange(gwPort, request('GET', path, { Authorization: api }));
      raw.close();
      if (!answer || answer.status >= 500) problems.push(`${path}: ${answer?.status} ${answer?.body}`);
      else if (answer.headers.some(([k]) => k === 'x-injected')) {
        figures.injected++;
        problems.push(`${path}: X-Injected came back as a header`);
      }
    }
    expect(problems).toEqual([]);
    await alive();
  });

  it('answers oversized headers and URLs with 431/414 in the envelope, closes, and stays up', async () => {
    const cases: [string, number, boolean, string][] = [];
    for (const [port, isMedia] of [
      [gwPort, false],
      [mediaPort, true],
    ] as const) {
      cases.push(
        ['20 KB header', port, isMedia, request('GET', '/health', { 'X-Big': 'a'.repeat(20_000) })],
        [
          '2,000 headers',
          port,
          isMedia,
          request(
            'GET',
            '/health',
            Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`X-H${i}`, 'abcdefgh'])),
          ),
        ],
        ['20 KB URL', port, isMedia, request('GET', `/health?${'q'.repeat(20_000)}`)],
      );
    }
    const problems: string[] = [];
    await Promise.all(
      cases.map(async ([name, port, isMedia, text]) => {
        figures.oversized++;
        const raw = await Raw.open(port);
        raw.write(text);
        const answer = await raw.response();
        const closedAt = await Promise.race([
          raw.closed,
          new Promise<null>((r) => setTimeout(() => r(null), 5000)),
        ]);
        raw.close();
        const label = `${isMedia ? 'media' : 'gateway'} ${name}`;
        if (!answer || ![431, 414].includes(answer.status))
          problems.push(`${label}: ${answer?.status} ${answer?.body}`);
        else if (!enveloped(answer, isMedia)) problems.push(`${label}: envelope ${answer.body}`);
        else if (closedAt === null) problems.push(`${label}: connection left open`);
        else figures.oversized431++;
      }),
    );
    expect(problems).toEqual([]);
    // Under the limit is served.
    const { answer, raw } = await exchange(
      gwPort,
      request('GET', '/health', { 'X-Big': 'a'.repeat(10_000) }),
    );
    raw.close();
    expect(answer?.status).toBe(200);
    await alive();
  });

  it('never serves a file outside the media store, whatever the key', async () => {
    // A real object, so the route is shown to serve what is inside.
    const made = await fetch(`${media.url}/api/t2i/model-a`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'a lighthouse' }),
    });
    expect(made.status).toBe(200);
    const key: string = ((await made.json()) as any).data.outputs[0].key;
    const inside = await exchange(mediaPort, request('GET', `/files/${key}`));
    inside.raw.close();
    expect(inside.answer?.status).toBe(200);
    expect(Buffer.from(inside.answer!.body, 'utf8').length).toBeGreaterThan(0);

    const depth = key.split('/').length; // enough ../ to climb from the key's directory to the parent of the store
    const up = '../'.repeat(depth);
    const paths = [
      '../secret.txt',
      '../../secret.txt',
      `${up}secret.txt`,
      `${key}/../../${up}secret.txt`,
      '%2e%2e/secret.txt',
      '%2e%2e%2fsecret.txt',
      '..%2fsecret.txt',
      '.%2e/secret.txt',
      '%2E%2E%2F%2E%2E%2Fsecret.txt',
      '..%5csecret.txt',
      '..\\secret.txt',
      '%252e%252e%252fsecret.txt',
      '%c0%ae%c0%ae%c0%afsecret.txt',
      '....//secret.txt',
      '../store-sibling/secret.png',
      '%2e%2e%2fstore-sibling%2fsecret.png',
      `/${dir}/secret.txt`,
      `%2f${encodeURIComponent(dir.slice(1))}%2fsecret.txt`,
      `${encodeURIComponent(join(dir, 'secret.txt'))}`,
      '/etc/passwd',
      '%2fetc%2fpasswd',
      `${key}%00.txt`,
      `${key}%00`,
      '%00',
      `./${key}`,
      `${key}/.`,
      '.',
      '..',
      `${'a/'.repeat(300)}x.png`,
      'C:\\Windows\\win.ini',
    ];
    const problems: string[] = [];
    for (const p of paths) {
      figures.traversalHttp++;
      const { answer, raw } = await exchange(mediaPort, request('GET', `/files/${p}`));
      raw.close();
      if (!answer) {
        problems.push(`${p}: no answer`);
        continue;
      }
      if (answer.body.includes(SECRET) || answer.body.includes('root:')) {
        figures.escapes++;
        problems.push(`${p}: served a file outside the store`);
      }
      if (answer.status !== 404 && answer.status !== 400)
        problems.push(`${p}: ${answer.status} ${answer.body.slice(0, 120)}`);
      else if (!enveloped(answer, true)) problems.push(`${p}: envelope ${answer.body.slice(0, 120)}`);
    }

    // The store itself, given the keys the HTTP layer might decode to (and some it never would).
    const store = new FilesystemStore(storeDir, 'http://localhost');
    for (const k of [
      '../secret.txt',
      `${up}secret.txt`,
      '/etc/passwd',
      join(dir, 'secret.txt'),
      `${key}\u0000.txt`,
      '..\\secret.txt',
      `${key}/../../${up}secret.txt`,
      '../store-sibling/secret.png',
      `./${key}`,
      '.',
      '',
      `${key}/`,
      'a'.repeat(600),
    ]) {
      figures.traversalStore++;
      const opened = await store.open(k);
      if (opened) {
        opened.stream.destroy();
        figures.escapes++;
        problems.push(`store.open(${JSON.stringify(k)}) opened a file`);
      }
    }
    expect((await store.open(key))?.size).toBe(PNG.length);
    expect(problems).toEqual([]);
    await alive();
  });

  it('refuses hostile vault secret names with a 400 naming the rule, touching no other secret', async () => {
    const api = client(gw.url, gw.apiKey);
    const intern = await api('POST', '/interns', { name: 'vault-names' });
    expect(intern.status).toBe(201);
    const secret = { value: 'vault-names-value', hosts: ['api.example.com'] };
    for (const path of ['/vault/secrets/target', `/vault/interns/${intern.body.id}/secrets/target`])
      expect((await api('PUT', path, secret)).status).toBe(200);
    const snapshot = async () =>
      JSON.stringify([
        (await api('GET', '/vault/secrets')).body,
        (await api('GET', `/vault/interns/${intern.body.id}/secrets`)).body,
      ]);
    const before = await snapshot();

    const names = [
      '..',
      '%2e%2e',
      '..%2ftarget',
      '..%2f..%2fsecrets%2ftarget',
      `..%2finterns%2f${intern.body.id}%2fsecrets%2ftarget`,
      'a%2fb',
      '%2fetc%2fpasswd',
      'a%5cb',
      'target%00',
      'a%00b',
      '%00',
      'Target',
      '1abc',
      'a__b',
      'a_',
      '_a',
      'a.b',
      'a-b',
      'a%20b',
      '%c3%a9',
      '%e2%80%ae',
      'a'.repeat(256),
    ];
    const problems: string[] = [];
    const auth = (method: string): Record<string, string> => ({
      Authorization: `Bearer ${gw.apiKey}`,
      ...(method === 'PUT' ? { 'Content-Type': 'application/json' } : {}),
    });
    const body = (method: string) => (method === 'PUT' ? JSON.stringify(secret) : '');
    for (const base of ['/api/v1/vault/secrets', `/api/v1/vault/interns/${intern.body.id}/secrets`])
      for (const name of names)
        for (const method of ['PUT', 'DELETE']) {
          figures.vaultNames++;
          const { answer, raw } = await exchange(
            gwPort,
            request(method, `${base}/${name}`, auth(method), body(method)),
          );
          raw.close();
          const label = `${method} ${base}/${name.slice(0, 40)}`;
          const b = json(answer?.body ?? '');
          if (answer?.status === 400 && enveloped(answer) && /^name /.test(b.error.message))
            figures.vault400++;
          else problems.push(`${label}: ${answer?.status} ${answer?.body.slice(0, 160)}`);
        }
    // Raw slashes and dot segments route elsewhere (no such route), never to another secret.
    for (const path of [
      '/api/v1/vault/secrets/../secrets/target',
      '/api/v1/vault/secrets/a/b',
      '/api/v1/vault/secrets//target',
    ])
      for (const method of ['PUT', 'DELETE']) {
        figures.vaultNames++;
        const { answer, raw } = await exchange(gwPort, request(method, path, auth(method), body(method)));
        raw.close();
        if (!answer || answer.status < 400 || answer.status >= 500 || !enveloped(answer))
          problems.push(`${method} ${path}: ${answer?.status} ${answer?.body.slice(0, 160)}`);
        else figures.vault400++;
      }
    if ((await snapshot()) !== before) figures.vaultChanged++;
    expect(problems).toEqual([]);
    expect(await snapshot()).toBe(before);
  });

  it('closes slow and silent connections at the configured timeouts, with a 408 in the envelope', async () => {
    const mgmt = `Bearer ${gw.managementKey}`;
    /** Opens a connection, sends `head`, then one byte of `drip` a second; resolves when the server closes it. */
    async function slow(port: number, head: string, drip: string, isMedia = false) {
      const raw = await Raw.open(port);
      if (head) raw.write(head);
      let i = 0;
      const timer = setInterval(() => {
        if (drip && !raw.write(drip[i++ % drip.length]!)) clearInterval(timer);
      }, 1000);
      const closedAfter = await Promise.race([
        raw.closed,
        new Promise<number>((r) => setTimeout(() => r(-1), 15_000)),
      ]);
      clearInterval(timer);
      const answer = await raw.response(100).catch(() => null);
      raw.close();
      return { closedAfter, answer, isMedia };
    }
    const idle = async () => {
      // One request answered, then nothing: the keep-alive timeout applies.
      const raw = await Raw.open(gwPort);
      raw.write(request('GET', '/health'));
      expect((await raw.response())?.status).toBe(200);
      const answeredAt = Date.now() - raw.opened;
      const closedAfter = await Promise.race([
        raw.closed,
        new Promise<number>((r) => setTimeout(() => r(-1), 15_000)),
      ]);
      raw.close();
      return closedAfter < 0 ? -1 : closedAfter - answeredAt;
    };
    const chunked = (path: string, auth: string, type = 'application/json') =>
      `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${auth}\r\nContent-Type: ${type}\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const [silent, headers, body, batch, mediaBody, keepAlive] = await Promise.all([
      slow(gwPort, '', ''),
      slow(gwPort, 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ', 'abcdefghijklmnopqrstuvwxyz'),
      slow(
        gwPort,
        `POST /api/v1/keys HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${mgmt}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n`,
        '{',
      ),
      // One chunk of one byte a second: `1\r\n{\r\n` is 6 bytes, sent a byte at a time.
      slow(gwPort, chunked('/api/v1/batches', `Bearer ${gw.apiKey}`), '1\r\n \r\n'),
      slow(
        mediaPort,
        chunked('/api/t2i/model-a', `Bearer ${gw.apiKey}`, 'multipart/form-data; boundary=x'),
        '1\r\n-\r\n',
        true,
      ),
      idle(),
    ]);
    figures.slow = {
      silent: silent.closedAfter,
      headers: headers.closedAfter,
      body: body.closedAfter,
      batch: batch.closedAfter,
      media: mediaBody.closedAfter,
      keepAlive,
    };
    const within = (ms: number, deadline: number) =>
      ms >= deadline - 100 && ms <= deadline + CHECK_MS + SLACK_MS;
    expect(silent.closedAfter, 'silent').toSatisfy((ms: number) => within(ms, TIMEOUTS.headers));
    // The header deadline runs from the first byte of the request.
    expect(headers.closedAfter, 'slow headers').toSatisfy((ms: number) => within(ms, TIMEOUTS.headers));
    for (const [name, r] of Object.entries({ body, batch, mediaBody }))
      expect(r.closedAfter, name).toSatisfy((ms: number) => within(ms, TIMEOUTS.request));
    // Node keeps an idle keep-alive socket 1 s past the advertised timeout (so the client closes first).
    expect(keepAlive, 'idle keep-alive').toSatisfy((ms: number) => within(ms, TIMEOUTS.keepAlive + 1000));
    // Whoever had no answer yet is told why, in the service's envelope.
    for (const [name, r] of Object.entries({ silent, headers, body, batch, mediaBody })) {
      expect(r.answer?.status, name).toBe(408);
      expect(enveloped(r.answer, r.isMedia), `${name}: ${r.answer?.body}`).toBe(true);
    }
    await alive();
  }, 30_000);

  it('does not cut long responses or a steady upload: the timeouts bound reading only', async () => {
    const api = client(gw.url, gw.apiKey);
    // A stream lasting longer than the request timeout (chunks a second apart), and a model slower
    // than it answering without streaming, side by side.
    const timed = async <T>(work: () => Promise<T>): Promise<[T, number]> => {
      const t0 = Date.now();
      const out = await work();
      return [out, Date.now() - t0];
    };
    const [[sse, sseMs], [slowAnswer, slowMs]] = await Promise.all([
      timed(async () => {
        const res = await fetch(`${gw.url}/api/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'gatehouse/echo',
            stream: true,
            messages: [
              { role: 'user', content: 'gatehouse:{"text":"one two three four five","chunk_delay_ms":1000}' },
            ],
          }),
        });
        return { status: res.status, text: await res.text() };
      }),
      timed(() =>
        api('POST', '/chat/completions', {
          model: 'gatehouse/echo',
          messages: [
            { role: 'user', content: `gatehouse:{"text":"late","delay_ms":${TIMEOUTS.request + 1000}}` },
          ],
        }),
      ),
    ]);
    figures.longResponses = { sse: sseMs, slow: slowMs };
    expect(sse.status).toBe(200);
    expect(sse.text).toContain('[DONE]');
    expect(sseMs).toBeGreaterThan(TIMEOUTS.request);
    expect(slowAnswer.status, slowAnswer.text).toBe(200);
    expect(slowMs).toBeGreaterThan(TIMEOUTS.request);

    // A body sent steadily for longer than the headers timeout (but within the request timeout).
    const steady = await Raw.open(gwPort);
    const body = JSON.stringify({ name: 'steady', limit: 1 });
    steady.write(
      `POST /api/v1/keys HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${gw.managementKey}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    const pieces = [body.slice(0, 10), body.slice(10, 20), body.slice(20)];
    for (const p of pieces) {
      await new Promise((r) => setTimeout(r, TIMEOUTS.headers / 2));
      steady.write(p);
    }
    expect((await steady.response())?.status).toBe(201);
    steady.close();

    // A batch body of ~20 MB at full speed still fits the short request timeout.
    const item = (i: number) =>
      JSON.stringify({
        custom_id: `r${i}`,
        body: {
          model: 'gatehouse/echo',
          messages: [{ role: 'user', content: `request ${i} ${'x'.repeat(900)}` }],
        },
      });
    const parts = [
      '{"endpoint":"/v1/chat/completions","completion_window":"24h","requests":[',
      ...Array.from({ length: 20_000 }, (_, i) => (i ? ',' : '') + item(i)),
      ']}',
    ];
    const big = Buffer.from(parts.join(''));
    const t2 = Date.now();
    const uploaded = await fetch(`${gw.url}/api/v1/batches`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
      body: big,
    });
    figures.batchUploadS = Number(((Date.now() - t2) / 1000).toFixed(1));
    figures.batchUploadMb = Number((big.length / 1e6).toFixed(1));
    expect(uploaded.status, await uploaded.clone().text()).toBe(202);
    expect(((await uploaded.json()) as any).request_counts.total).toBe(20_000);
  }, 30_000);

  it('keeps a connection usable after refusing a batch body mid-way', async () => {
    const raw = await Raw.open(gwPort);
    const auth = { Authorization: `Bearer ${gw.apiKey}`, 'Content-Type': 'application/json' };
    // Refused at the first field (over 64 KB), long before the 1 MB body has been read.
    raw.write(
      request(
        'POST',
        '/api/v1/batches',
        auth,
        JSON.stringify({ endpoint: 'x'.repeat(1 << 20), requests: [] }),
      ),
    );
    const refused = await raw.response();
    expect(refused?.status).toBe(400);
    expect(enveloped(refused)).toBe(true);
    raw.write(request('GET', '/api/v1/batches?limit=1', auth));
    const next = await raw.response();
    figures.reuseAfterRefusal = next ? `${next.status}` : 'connection closed';
    expect(next?.status).toBe(200);
    raw.close();
  });
});
