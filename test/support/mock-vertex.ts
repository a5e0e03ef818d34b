/**
 * A mock Google Vertex AI (127.0.0.1, random port), speaking its real wire format:
 *
 * - `POST /token`: Google's OAuth token endpoint for the JWT-bearer grant (RFC 7523). The
 *   assertion must be an RS256 JWT signed by the mock's service account key (`serviceAccount`, a
 *   throwaway RSA key made here), issued by its e-mail, for the cloud-platform scope and not
 *   expired. Answers `{access_token, expires_in}`; `tokenRequests` counts the requests.
 * - `POST /v1/projects/{project}/locations/{region}/publishers/google/models/{m}:generateContent`,
 *   `:streamGenerateContent?alt=sse` (Gemini bodies) and `:predict` (embeddings);
 * - `POST …/publishers/anthropic/models/{m}:rawPredict` and `:streamRawPredict` (Anthropic
 *   Messages bodies with `anthropic_version: "vertex-2023-10-16"` and no `model`), and
 *   `…/anthropic/models/count-tokens:rawPredict` (the model in the body).
 *
 * Claude calls are refused as real Vertex refuses them: a 400 `invalid_request_error` naming every
 * `anthropic-beta` flag not among Vertex's own ("Unexpected value(s) `x` for the `anthropic-beta`
 * header") and one for a body field Vertex does not take (`context_management`: Vertex has no
 * context-management beta, so the field is an extra input there).
 *
 * Every Vertex call must carry `Authorization: Bearer <a token this mock issued>` (else Vertex's
 * 401 UNAUTHENTICATED) and name the mock's project and region (else 404 NOT_FOUND). Generation
 * calls are answered by a mock upstream (`mock-upstream.ts`) behind this one — its Gemini and
 * Anthropic rendering, its queue of scripted steps (`enqueue`) and faults — reached with the
 * request rewritten to AI Studio's and Anthropic's own paths. `requests` records what reached
 * Vertex (its path, headers and body), with the format and model read from the path.
 */
import { createVerify, generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { VertexSettings } from '../../src/providers/types.js';
import {
  type MockFormat,
  type MockStep,
  type MockUpstream,
  mockVector,
  type RecordedRequest,
  startMockUpstream,
} from './mock-upstream.js';

export const VERTEX_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

export interface ServiceAccountJson {
  type: 'service_account';
  project_id: string;
  private_key_id: string;
  private_key: string;
  client_email: string;
  client_id: string;
  token_uri: string;
}

export interface MockVertex extends MockUpstream {
  project: string;
  region: string;
  /** The token endpoint (`${url}/token`). */
  tokenUrl: string;
  /** A key file for this mock's service account, its `token_uri` pointing at the mock. */
  serviceAccount: ServiceAccountJson;
  /** Token requests received (granted or not). */
  tokenRequests: number;
  /** The lifetime of the tokens issued from now on, in seconds (default 3600). */
  expiresIn: number;
  /** The tokens issued so far, in order. */
  issued: string[];
  /** Set: the token endpoint answers this instead of a token. */
  tokenFailure: { status: number; body: unknown } | null;
}

/** Vertex's own error body: `{error: {code, message, status}}`. */
const vertexError = (res: ServerResponse, code: number, status: string, message: string) => {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { code, message, status } }));
};

const b64url = (s: string): unknown => JSON.parse(Buffer.from(s, 'base64url').toString('utf8'));

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });

/**
 * The beta flags this mock's Vertex takes — kept here on their own, not read from Gatehouse: the
 * ones Claude Code sends to Vertex in its own Vertex mode.
 */
const VERTEX_BETAS = new Set([
  'claude-code-20250219',
  'interleaved-thinking-2025-05-14',
  'context-1m-2025-08-07',
  'web-search-2025-03-05',
  'tool-search-tool-2025-10-19',
  'effort-2025-11-24',
  'thinking-token-count-2026-05-13',
]);
/** Messages body fields Vertex answers "Extra inputs are not permitted". */
const VERTEX_REFUSED_FIELDS = ['context_management'];

/** Why Vertex refuses a Claude call's betas or body fields, or null. */
function claudeRefusal(header: string | string[] | undefined, body: any): string | null {
  const unknown = String(header ?? '')
    .split(',')
    .map((b) => b.trim())
    .filter((b) => b && !VERTEX_BETAS.has(b));
  if (unknown.length)
    return `Unexpected value(s) ${unknown.map((b) => `\`${b}\``).join(', ')} for the \`anthropic-beta\` header. Please consult our documentation at docs.anthropic.com or try again without the header.`;
  const field = VERTEX_REFUSED_FIELDS.find((f) => body && typeof body === 'object' && f in body);
  return field ? `${field}: Extra inputs are not permitted` : null;
}

const VERTEX_PATH =
  /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/(google|anthropic)\/models\/([^/:]+):(\w+)$/;

export async function startMockVertex(
  opts: { project?: string; region?: string; token?: () => string } = {},
): Promise<MockVertex> {
  const inner = await startMockUpstream();
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyId = randomBytes(8).toString('hex');
  const requests: RecordedRequest[] = [];
  let seq = 0;
  let base = '';

  const state = {
    tokenRequests: 0,
    expiresIn: 3600,
    issued: [] as string[],
    tokenFailure: null as { status: number; body: unknown } | null,
  };
  const project = opts.project ?? 'mock-project';
  const region = opts.region ?? 'us-central1';
  const email = `gatehouse@${project}.iam.gserviceaccount.com`;

  /** Why an assertion is refused, or null when it is a valid grant. */
  function refuse(assertion: string): string | null {
    const parts = assertion.split('.');
    if (parts.length !== 3) return 'assertion is not a JWT';
    const [h, p, sig] = parts as [string, string, string];
    const verified = createVerify('RSA-SHA256').update(`${h}.${p}`).verify(publicKey, sig, 'base64url');
    if (!verified) return 'Invalid JWT Signature.';
    const header = b64url(h) as Record<string, unknown>;
    const claims = b64url(p) as Record<string, unknown>;
    const now = Math.floor(Date.now() / 1000);
    if (header.alg !== 'RS256') return `unexpected alg ${String(header.alg)}`;
    if (header.kid !== undefined && header.kid !== keyId) return 'unknown key id';
    if (claims.iss !== email) return `unknown issuer ${String(claims.iss)}`;
    if (claims.aud !== GOOGLE_TOKEN_URL && claims.aud !== `${base}/token`) return 'wrong audience';
    if (
      !String(claims.scope ?? '')
        .split(' ')
        .includes(VERTEX_SCOPE)
    )
      return 'scope missing';
    if (typeof claims.exp !== 'number' || claims.exp < now) return 'assertion expired';
    return null;
  }

  async function token(req: IncomingMessage, res: ServerResponse): Promise<void> {
    state.tokenRequests++;
    const form = new URLSearchParams(await readBody(req));
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (state.tokenFailure) return send(state.tokenFailure.status, state.tokenFailure.body);
    if (form.get('grant_type') !== JWT_BEARER)
      return send(400, { error: 'unsupported_grant_type', error_description: 'Invalid grant_type' });
    const why = refuse(form.get('assertion') ?? '');
    if (why) return send(400, { error: 'invalid_grant', error_description: why });
    const access = opts.token?.() ?? `ya29.mock-${++seq}-${randomBytes(6).toString('hex')}`;
    state.issued.push(access);
    send(200, { access_token: access, expires_in: state.expiresIn, token_type: 'Bearer' });
  }

  async function vertex(req: IncomingMessage, res: ServerResponse, u: URL): Promise<void> {
    const raw = await readBody(req);
    let body: any = raw;
    try {
      body = raw ? JSON.parse(raw) : null;
    } catch {}
    const m = VERTEX_PATH.exec(u.pathname);
    const publisher = m?.[3];
    const method = m?.[5];
    const model = m ? decodeURIComponent(m[4] as string) : null;
    const countTokens = publisher === 'anthropic' && m?.[4] === 'count-tokens';
    const format: MockFormat =
      publisher === 'anthropic'
        ? countTokens
          ? 'anthropic-count-tokens'
          : 'anthropic-messages'
        : method === 'streamGenerateContent'
          ? 'gemini-stream'
          : method === 'predict'
            ? 'gemini-embed'
            : method === 'generateContent'
              ? 'gemini-generate'
              : 'unknown';
    requests.push({
      method: req.method ?? 'GET',
      path: u.pathname,
      query: Object.fromEntries(u.searchParams),
      headers: req.headers,
      raw,
      body,
      format,
      model: countTokens ? (typeof body?.model === 'string' ? body.model : null) : model,
      stream: method === 'streamGenerateContent' || method === 'streamRawPredict',
    });
    const bearer = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
    if (!bearer || !state.issued.includes(bearer))
      return vertexError(
        res,
        401,
        'UNAUTHENTICATED',
        'Request had invalid authentication credentials. Expected OAuth 2 access token.',
      );
    if (!m || req.method !== 'POST') return vertexError(res, 404, 'NOT_FOUND', `no route ${u.pathname}`);
    if (m[1] !== project || m[2] !== region)
      return vertexError(res, 404, 'NOT_FOUND', `Project ${m[1]} has no location ${m[2]}`);

    if (publisher === 'google') {
      if (method === 'predict') return predict(res, body);
      if (method === 'streamGenerateContent' && u.searchParams.get('alt') !== 'sse')
        return vertexError(res, 400, 'INVALID_ARGUMENT', 'this mock streams with alt=sse only');
      if (method !== 'generateContent' && method !== 'streamGenerateContent')
        return vertexError(res, 404, 'NOT_FOUND', `no method ${method}`);
      return proxy(req, res, `/v1beta/models/${m[4]}:${method}${u.search}`, raw);
    }
    if (method !== 'rawPredict' && method !== 'streamRawPredict')
      return vertexError(res, 404, 'NOT_FOUND', `no method ${method}`);
    const refusal = claudeRefusal(req.headers['anthropic-beta'], body);
    if (refusal) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: refusal } }));
      return;
    }
    if (countTokens) {
      // One endpoint for every Claude model: the model is in the body.
      if (method !== 'rawPredict' || typeof body?.model !== 'string')
        return vertexError(res, 400, 'INVALID_ARGUMENT', 'count-tokens takes rawPredict with a model');
      const { anthropic_version: _, ...count } = body;
      return proxy(req, res, '/v1/messages/count_tokens', JSON.stringify(count));
    }
    const problem =
      !body || typeof body !== 'object'
        ? 'body must be a JSON object'
        : body.anthropic_version !== 'vertex-2023-10-16'
          ? 'anthropic_version: must be vertex-2023-10-16'
          : 'model' in body
            ? 'model: Extra inputs are not permitted'
            : (method === 'streamRawPredict') !== (body.stream === true)
              ? 'stream must be true on streamRawPredict only'
              : null;
    if (problem) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: problem } }));
      return;
    }
    const { anthropic_version: _, ...messages } = body;
    return proxy(req, res, '/v1/messages', JSON.stringify({ model, ...messages }));
  }

  /** `:predict` of a text-embedding model: one vector per instance, with its token count. */
  function predict(res: ServerResponse, body: any): void {
    const instances: any[] = Array.isArray(body?.instances) ? body.instances : [];
    const dims = body?.parameters?.outputDimensionality;
    const predictions = instances.map((i) => ({
      embeddings: {
        values: mockVector(String(i?.content ?? ''), typeof dims === 'number' ? dims : 4),
        statistics: {
          token_count: String(i?.content ?? '')
            .split(/\s+/)
            .filter(Boolean).length,
          truncated: false,
        },
      },
    }));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ predictions, metadata: { billableCharacterCount: 1 } }));
  }

  /** Relays the rewritten request to the mock upstream and its answer back, byte for byte. */
  function proxy(req: IncomingMessage, res: ServerResponse, path: string, body: string): void {
    const innerUrl = new URL(inner.url);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    for (const h of ['accept', 'anthropic-beta'])
      if (typeof req.headers[h] === 'string') headers[h] = req.headers[h] as string;
    const up = request(
      { host: innerUrl.hostname, port: innerUrl.port, method: 'POST', path, headers, agent: false },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        res.flushHeaders();
        answer.on('data', (c) => res.write(c));
        answer.on('end', () => res.end());
        // The upstream's socket died mid-way (a scripted fault): so does this one.
        answer.on('aborted', () => res.destroy());
        answer.on('error', () => res.destroy());
      },
    );
    up.on('error', () => res.destroy());
    res.on('close', () => {
      if (!res.writableFinished) up.destroy();
    });
    up.end(body);
  }

  const server = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://mock');
    const handled = u.pathname === '/token' && req.method === 'POST' ? token(req, res) : vertex(req, res, u);
    handled.catch((err) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ error: { code: 500, message: `mock crashed: ${String(err)}`, status: 'INTERNAL' } }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const serviceAccount: ServiceAccountJson = {
    type: 'service_account',
    project_id: project,
    private_key_id: keyId,
    private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    client_email: email,
    client_id: '100000000000000000001',
    token_uri: `${base}/token`,
  };

  return {
    url: base,
    project,
    region,
    tokenUrl: `${base}/token`,
    serviceAccount,
    get tokenRequests() {
      return state.tokenRequests;
    },
    set tokenRequests(n: number) {
      state.tokenRequests = n;
    },
    get expiresIn() {
      return state.expiresIn;
    },
    set expiresIn(s: number) {
      state.expiresIn = s;
    },
    get issued() {
      return state.issued;
    },
    get tokenFailure() {
      return state.tokenFailure;
    },
    set tokenFailure(f: { status: number; body: unknown } | null) {
      state.tokenFailure = f;
    },
    get models() {
      return inner.models;
    },
    set models(ids: string[]) {
      inner.models = ids;
    },
    requests,
    enqueue(...steps: MockStep[]) {
      inner.enqueue(...steps);
    },
    reset() {
      requests.length = 0;
      inner.reset();
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
      await inner.close();
    },
  };
}

/** A provider config's Vertex settings for this mock: its project, region, key file and publishers. */
export function vertexSettings(
  mock: MockUpstream,
  publishers: Record<string, 'google' | 'anthropic'> = {},
): { vertex: VertexSettings } {
  const m = mock as MockVertex;
  return {
    vertex: { project: m.project, region: m.region, serviceAccount: m.serviceAccount, publishers },
  };
}
