/**
 * Hostile input, property-based (issue 8): every route of the gateway and of the media service
 * that takes a body, a query or path parameters — enumerated from the apps through `onRoute`, so a
 * route added later is fuzzed without a line here — gets fast-check generated requests, sent with
 * the right kind of key over a real socket:
 *
 * - arbitrary JSON documents (and objects whose keys are `__proto__`, `constructor`, `prototype`);
 * - mutations of a valid example body: one field replaced by a wrong type, a huge string (1 MiB,
 *   over the body limit, and just under it), 5,000-deep arrays and objects, unicode with lone
 *   surrogates and NUL, boundary numbers (1e308, -0, 2^53+2, 1e400 → Infinity, 30-digit integers),
 *   polluting keys added at any depth, fields deleted or wrapped in arrays;
 * - raw bytes: random, truncated JSON, invalid UTF-8, a BOM, UTF-16;
 * - multipart forms for the media routes (polluting field names, truncated parts, no boundary);
 * - wrong content types;
 * - hostile path parameters and query strings.
 *
 * Every answer must be a 2xx that is a real success (inference runs on the offline `gatehouse/echo`)
 * or a 4xx in the service's error envelope as JSON — never a 5xx or no answer (a hang). Afterwards
 * both services still answer /health and no standard prototype of this process (the servers run
 * in it) gained a property.
 */

import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import type { RouteOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadMediaConfig } from '../../src/media/config.js';
import { type MediaHandle, needsCredential, startMedia } from '../../src/media/server.js';
import type { GeneratedOutput, MediaGenerator } from '../../src/media/types.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../support/gateway.js';
import { adminClient, client } from '../support/http.js';
import { stopHarvesting } from '../support/secrets-audit.js';
import {
  type Answer,
  answerProblem,
  polluted,
  prototypeSnapshot,
  writeHostileFigures,
} from './hostile-shared.js';

// Generated strings sent as BYOK keys or vault values are reused in every other field: not secrets.
stopHarvesting();

// ---------------------------------------------------------------------------------------------
// Budget: runs per route and kind of input (≈ 10,000 requests in all; about 25 s on 2 cores).

const RUNS = { json: 40, mutation: 80, bytes: 20, multipart: 80, params: 25, query: 25 };
/**
 * The gateway's routes that forward their bodies unread to the media service's routes of the same
 * paths, which are fuzzed in full: here a quarter of the runs checks the forwarding itself.
 */
const forwarded = (t: { service: string; url: string }) =>
  t.service === 'gateway' && (t.url.startsWith('/api/v1/images') || t.url.startsWith('/api/v1/videos'));
const runsOf = (t: { service: string; url: string }, kind: keyof typeof RUNS) =>
  forwarded(t) ? Math.ceil(RUNS[kind] / 4) : RUNS[kind];
/** A request without an answer after this long is a hang. */
const HANG_MS = 15_000;
/** Routes fuzzed at once. */
const PARALLEL = 6;

// ---------------------------------------------------------------------------------------------
// JSON with raw parts: values JSON.stringify cannot write (-0, 1e400, 30-digit integers, 5,000
// levels of nesting, which would also cost a deep recursion to build as objects).

class Raw {
  constructor(readonly text: string) {}
}

function toJson(v: unknown): string {
  if (v instanceof Raw) return v.text;
  if (Array.isArray(v)) return `[${v.map(toJson).join(',')}]`;
  if (v !== null && typeof v === 'object')
    return `{${Object.keys(v)
      .map((k) => `${JSON.stringify(k)}:${toJson((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

/** Sets an own property, even `__proto__` (plain assignment would call the prototype setter). */
const define = (o: object, k: string | number, value: unknown) =>
  Object.defineProperty(o, k, { value, enumerable: true, writable: true, configurable: true });

const DEPTH = 5000;
const HUGE = 'a'.repeat(1 << 20); // 1 MiB: the body is over the 1 MiB limit (413; inference's lowered to it)
const NEAR = 'b'.repeat(1_000_000); // the body stays under the limit, so it is parsed and validated
const WIDE = 'é'.repeat(400_000); // 800 kB of two-byte UTF-8
/** A 1×1 PNG: the media generator's output and a valid upload. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

const protoKey = fc.constantFrom(
  '__proto__',
  'constructor',
  'prototype',
  'hasOwnProperty',
  'toString',
  '__defineGetter__',
);
const pollutingObject = fc.constantFrom(
  () => JSON.parse('{"__proto__":{"polluted":"yes","isAdmin":true}}'),
  () => JSON.parse('{"constructor":{"prototype":{"polluted":"yes"}}}'),
  () => ({ prototype: { polluted: 'yes' } }),
  () => JSON.parse('{"__proto__":[1,2,3]}'),
  () => JSON.parse('{"__proto__":null}'),
  () => ({ hasOwnProperty: 'x', toString: 1, valueOf: {}, toJSON: 'x' }),
);

/** A hostile value for one field. */
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  // wrong types
  fc.constantFrom(null, true, false, 0, 1, -1, '', [], {}, [null], [[]], { '': '' }),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.string({ maxLength: 30 }),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 5 }),
  // boundary numbers
  fc.constantFrom(
    1e308,
    -1e308,
    5e-324,
    2 ** 31 - 1,
    2 ** 31,
    -(2 ** 31),
    2 ** 32,
    2 ** 53,
    2 ** 53 + 2,
    -(2 ** 53),
    2 ** 63,
    0.1,
    1.5,
  ),
  fc
    .constantFrom(
      '-0',
      '1e400',
      '-1e400',
      '1E-400',
      '123456789012345678901234567890',
      '-99999999999999999999999',
      '0.00000000000000000000000001',
    )
    .map((t) => new Raw(t)),
  fc.bigInt().map((b) => new Raw(b.toString())),
  // huge strings and deep nesting
  fc.constantFrom(HUGE, NEAR, WIDE),
  fc.constantFrom(
    new Raw(`${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}`),
    new Raw(`${'{"a":'.repeat(DEPTH)}null${'}'.repeat(DEPTH)}`),
    new Raw(`${'[{"content":'.repeat(DEPTH / 2)}"x"${'}]'.repeat(DEPTH / 2)}`),
  ),
  fc.constant(Array.from({ length: 10_000 }, (_, i) => `s${i}`)), // a long array
  // unicode: any code point (lone surrogates included), NUL, controls, bidi, combining marks
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '\u0000',
    'a\u0000b',
    '\ud800',
    '\udfff',
    'x\ud83d',
    '\u202e\u2066',
    '\ufeff',
    '\u2028\u2029',
    'e\u0301\u0301\u0301',
    '💩'.repeat(100),
    '\r\nX-Injected: 1',
    '../../../etc/passwd',
    '%00',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a template-injection probe, sent as text
    '${7*7}{{7*7}}',
    "' OR 1=1 --",
  ),
  // polluting objects
  pollutingObject.map((make) => make()),
);

/** Every place a mutation can reach in `root`: [container, key] pairs, depth first. */
function places(root: unknown): [Record<string | number, unknown>, string | number][] {
  const out: [Record<string | number, unknown>, string | number][] = [];
  const walk = (v: unknown) => {
    if (v === null || typeof v !== 'object' || v instanceof Raw) return;
    for (const k of Array.isArray(v) ? v.keys() : Object.keys(v)) {
      out.push([v as Record<string | number, unknown>, k]);
      walk((v as Record<string | number, unknown>)[k]);
    }
  };
  walk(root);
  return out;
}

/** A mutation of a valid body; `fields` are the route's own body properties (added with hostile values). */
const mutationArb = (fields: string[]) =>
  fc.record({
    at: fc.nat(),
    op: fc.constantFrom('replace', 'replace', 'replace', 'add', 'add', 'delete', 'wrap'),
    key: fc.oneof(
      protoKey,
      fields.length ? fc.constantFrom(...fields) : protoKey,
      fc.string({ maxLength: 12 }),
      fc.string({ unit: 'binary', maxLength: 8 }),
    ),
    value: hostileValue,
  });

type Mutation = ReturnType<typeof mutationArb> extends fc.Arbitrary<infer T> ? T : never;

function mutate(example: unknown, m: Mutation): unknown {
  const root = structuredClone(example);
  const all = places(root);
  if (m.op === 'add' || all.length === 0) {
    const objects = [root, ...all.map(([c, k]) => c[k])].filter(
      (v): v is object => v !== null && typeof v === 'object' && !Array.isArray(v),
    );
    if (objects.length === 0) return m.value;
    define(objects[m.at % objects.length] as object, m.key, m.value);
    return root;
  }
  const [container, key] = all[m.at % all.length]!;
  if (m.op === 'delete') {
    if (Array.isArray(container)) container.splice(Number(key), 1);
    else delete container[key];
  } else define(container, key, m.op === 'wrap' ? [container[key]] : m.value);
  return root;
}

/** Arbitrary JSON documents, and objects made of polluting keys. */
const jsonDocArb = fc.oneof(
  fc.jsonValue(),
  fc
    .dictionary(fc.oneof(protoKey, fc.string({ maxLength: 10 })), fc.jsonValue({ maxDepth: 3 }), {
      maxKeys: 6,
    })
    .map((d) => {
      const o = {};
      for (const [k, v] of Object.entries(d)) define(o, k, v);
      return o;
    }),
  pollutingObject.map((make) => make()),
);

/** Raw bodies that are not JSON (or not UTF-8 JSON), derived from the route's valid example text. */
const bytesArb = (example: string) =>
  fc.oneof(
    fc.uint8Array({ maxLength: 2000 }).map((b) => Buffer.from(b)),
    fc.string({ unit: 'binary', maxLength: 200 }).map((s) => Buffer.from(s)),
    fc.nat({ max: Math.max(0, example.length - 1) }).map((n) => Buffer.from(example.slice(0, n))), // truncated
    fc.constantFrom(
      Buffer.concat([
        Buffer.from('{"model":"'),
        Buffer.from([0xff, 0xfe, 0xc0, 0xaf, 0xed, 0xa0, 0x80]),
        Buffer.from('"}'),
      ]), // invalid UTF-8
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(example)]), // BOM
      Buffer.from(example, 'utf16le'),
      Buffer.from(`${example}${example}`), // two documents
      Buffer.from(`${example},`),
      Buffer.from(example.replace(/"/g, "'")),
      Buffer.from('null'),
      Buffer.from(''),
      Buffer.from(' \n\t '),
      Buffer.from('{"a":1,"a":2,"__proto__":{"polluted":1},"__proto__":{"polluted":2}}'),
    ),
  );

const CONTENT_TYPES: (string | null)[] = [
  null, // no Content-Type with a body
  '',
  'text/plain',
  'text/plain; charset=utf-8',
  'application/x-www-form-urlencoded',
  'multipart/form-data',
  'multipart/form-data; boundary=----x',
  'application/xml',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'application/jsonx',
  'application/vnd.api+json',
  'application/json, text/plain',
  '*/*',
  'application/json;;;=',
  'APPLICATION/JSON',
];

/** A path segment: percent-encoded bytes of any string, or a pre-encoded hostile form. */
const segmentArb = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }).map((s) => encodeBytes(s)),
  // Dot segments ('..', '%2e%2e') are resolved by fetch's URL parser before sending; the raw-socket
  // file sends them as they are.
  fc.constantFrom(
    '..%2f..%2f..%2fetc%2fpasswd',
    '%2e%2e%2f%2e%2e%2f',
    '%00',
    'a%00b',
    '%ff',
    '%c0%ae%c0%ae',
    '%',
    '%zz',
    '%e2%80%ae',
    '__proto__',
    'constructor',
    'prototype',
    'x'.repeat(300),
    '-1',
    '0',
    '1e308',
    '99999999999999999999999',
    '00000000-0000-0000-0000-000000000000',
    '%0d%0aX-Injected:%201',
    '%20',
  ),
);

/** Percent-encodes every byte of `s` that is not unreserved (lone surrogates become U+FFFD). */
function encodeBytes(s: string): string {
  let out = '';
  for (const b of Buffer.from(s, 'utf8'))
    out += /[A-Za-z0-9_.~-]/.test(String.fromCharCode(b))
      ? String.fromCharCode(b)
      : `%${b.toString(16).padStart(2, '0')}`;
  return out;
}

const queryValueArb = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.constantFrom(
    '',
    '-1',
    '0',
    '1.5',
    '1e308',
    '99999999999999999999',
    'NaN',
    'Infinity',
    'true',
    'null',
    '[]',
    '{}',
    '\u0000',
    'x'.repeat(4000),
    '../../etc/passwd',
  ),
  fc.integer().map(String),
);

/** Multipart forms: fields (polluting, unknown or the route's own names, hostile values), file parts, truncation. */
const multipartArb = (names: string[]) =>
  fc
    .record({
      parts: fc.array(
        fc.record({
          name: fc.oneof(
            protoKey,
            fc.constantFrom('prompt', ...names),
            fc.string({ unit: 'binary', maxLength: 10 }),
          ),
          value: fc.oneof(
            fc.string({ unit: 'binary', maxLength: 50 }),
            fc.constantFrom<string | Buffer>(
              'a cat',
              '',
              NEAR,
              '["http://127.0.0.1:1/a.png"]',
              '{"__proto__":{"polluted":1}}',
              PNG, // a real image (as a file part, the one valid upload)
              PNG.subarray(0, 20),
            ),
          ),
          file: fc.option(fc.constantFrom('a.png', '../../etc/passwd', 'x\u0000.png', ''), {
            nil: undefined,
          }),
        }),
        { maxLength: 5 },
      ),
      cut: fc.option(fc.nat(), { nil: undefined }),
      boundary: fc.constantFrom('fuzz', 'fuzz', null, '', '"quoted"', 'x'.repeat(200)),
    })
    .map(({ parts, cut, boundary }) => {
      const b = boundary ?? 'fuzz';
      const file = (f: string | undefined) =>
        f === undefined ? '' : `; filename="${f}"\r\nContent-Type: image/png`;
      let body = Buffer.concat([
        ...parts.flatMap((p) => [
          Buffer.from(`--${b}\r\nContent-Disposition: form-data; name="${p.name}"${file(p.file)}\r\n\r\n`),
          Buffer.isBuffer(p.value) ? p.value : Buffer.from(p.value),
          Buffer.from('\r\n'),
        ]),
        Buffer.from(`--${b}--\r\n`),
      ]);
      if (cut !== undefined) body = body.subarray(0, cut % (body.length + 1));
      return {
        body,
        contentType: boundary === null ? 'multipart/form-data' : `multipart/form-data; boundary=${b}`,
      };
    });

/** A short description of a request body for failure messages. */
function summarize(body: unknown): string {
  if (body === undefined) return 'none';
  const text = Buffer.isBuffer(body) ? body.toString('utf8') : String(body);
  return text.length > 160 ? `${text.slice(0, 120)}… (${text.length} chars)` : JSON.stringify(text);
}

// ---------------------------------------------------------------------------------------------
// Targets: routes with a body, a query or path parameters, and what a valid request looks like.

type Service = 'gateway' | 'media';
type AuthMode = 'none' | 'optional' | 'key' | 'api' | 'management' | 'admin' | 'runtime';

interface Target {
  service: Service;
  id: string; // "METHOD /pattern"
  method: string;
  url: string;
  auth: AuthMode;
  takesBody: boolean;
  params: string[];
  querySchema: any;
  bodySchema: any;
}

interface Fx {
  guardrail: string;
  key: string;
  workspace: string;
  byok: string;
  destination: string;
  batch: string;
  /** Message batches that have ended (cancelled): one for the reads and cancel, one for DELETE. */
  messageBatch: string;
  deletableMessageBatch: string;
  intern: string;
  generation: string;
  /** A stored response (GET/DELETE /responses/{id}). */
  response: string;
  /** A conversation and one of its items (the /conversations routes). */
  conversation: string;
  conversationItem: string;
  member: string;
  otherOrg: string;
  imageUrl: string;
  /** A completed video job (GET /videos/{id} and its content). */
  videoJob: string;
}

const SECRET = 'fuzz_secret';
const chat = { model: 'gatehouse/echo', messages: [{ role: 'user', content: 'hi' }] };

/** Valid bodies where the schema alone does not say enough (free-form inference bodies, formats). */
const EXAMPLES: Record<string, (fx: Fx) => unknown> = {
  'POST /api/v1/analytics/query': () => ({ metrics: ['spend', 'requests'], dimensions: ['model'] }),
  // Both the gateway's (forwarded) and the media service's own.
  'POST /api/v1/images': () => ({ model: 'media/model-a', prompt: 'a lighthouse at dusk' }),
  'POST /api/v1/images/generations': () => ({ model: 'media/model-a', prompt: 'a lighthouse at dusk' }),
  'POST /api/v1/videos': () => ({ model: 'media/video-model', prompt: 'a lighthouse at dusk', duration: 2 }),
  'POST /api/v1/images/edits': () => ({
    model: 'media/model-a',
    prompt: 'a lighthouse at dusk',
    images: [{ image_url: `data:image/png;base64,${PNG.toString('base64')}` }],
  }),
  'POST /api/v1/guardrails': () => ({
    name: 'fuzz',
    limit_usd: 5,
    reset_interval: 'monthly',
    allowed_models: ['gatehouse/echo'],
  }),
  'PATCH /api/v1/guardrails/:id': () => ({ name: 'renamed', description: 'd' }),
  'POST /api/v1/guardrails/:id/assignments/keys': (fx) => ({ key_hashes: [fx.key] }),
  'POST /api/v1/guardrails/:id/assignments/keys/remove': (fx) => ({ key_hashes: [fx.key] }),
  'POST /api/v1/guardrails/:id/assignments/members': (fx) => ({ member_user_ids: [fx.member] }),
  'POST /api/v1/guardrails/:id/assignments/members/remove': (fx) => ({ member_user_ids: [fx.member] }),
  'POST /api/v1/keys': () => ({ name: 'fuzz', limit: 10, limit_reset: 'daily' }),
  'POST /api/v1/auth/sign-out': () => ({}), // takes no body
  'PATCH /api/v1/keys/:hash': () => ({ name: 'renamed', limit: 3 }),
  'POST /api/v1/workspaces': () => ({ name: 'Fuzz', slug: `fuzz-${randomBytes(4).toString('hex')}` }),
  'PATCH /api/v1/workspaces/:id': () => ({ name: 'renamed', description: 'd' }),
  'POST /api/v1/workspaces/:id/members/add': (fx) => ({ user_ids: [fx.member] }),
  'POST /api/v1/workspaces/:id/members/remove': (fx) => ({ user_ids: [fx.member] }),
  'PUT /api/v1/workspaces/:workspace_ref/budgets/:interval': () => ({ limit_usd: 5 }),
  'POST /api/v1/byok': (fx) => ({
    provider: 'anthropic',
    key: 'sk-fuzz-provider-secret-0000',
    workspace_id: fx.workspace,
  }),
  'PATCH /api/v1/byok/:id': () => ({ name: 'renamed' }),
  'POST /api/v1/observability/destinations': (fx) => ({
    type: 'webhook',
    name: 'fuzz',
    config: { url: 'https://hooks.example.com/fuzz' },
    workspace_id: fx.workspace,
  }),
  'PATCH /api/v1/observability/destinations/:id': () => ({ name: 'renamed', sampling_rate: 0.5 }),
  'POST /api/v1/admin/organizations': () => ({ name: 'Fuzz' }),
  'POST /api/v1/admin/users': (fx) => ({
    email: `fuzz-${randomBytes(4).toString('hex')}@example.com`,
    organization_id: fx.otherOrg,
    role: 'member',
  }),
  'POST /api/v1/admin/keys': (fx) => ({ name: 'fuzz', organization_id: fx.otherOrg }),
  'POST /api/v1/admin/credits': (fx) => ({ organization_id: fx.otherOrg, amount_usd: 1, note: 'fuzz' }),
  'POST /api/v1/chat/completions': () => ({ ...chat, max_tokens: 16, temperature: 0.5 }),
  'POST /api/v1/completions': () => ({ model: chat.model, prompt: 'hi', max_tokens: 16 }),
  'POST /api/v1/messages': () => ({ ...chat, max_tokens: 16, system: 'be brief' }),
  'POST /api/v1/messages/count_tokens': () => ({ ...chat, system: 'be brief' }),
  'POST /api/v1/responses': () => ({
    model: 'gatehouse/echo',
    input: [{ role: 'user', content: 'hi' }],
    instructions: 'x',
  }),
  'POST /api/v1/responses/compact': () => ({
    model: 'gatehouse/echo',
    input: [{ role: 'user', content: 'hi' }],
    instructions: 'x',
  }),
  'POST /api/v1/responses/input_tokens': () => ({
    model: 'gatehouse/echo',
    input: [{ role: 'user', content: 'hi' }],
    instructions: 'x',
  }),
  'POST /api/v1/embeddings': () => ({ model: 'gatehouse/embed', input: ['hi', 'there'] }),
  'POST /api/v1/rerank': () => ({ model: 'gatehouse/rerank', query: 'hi', documents: ['hi there', 'bye'] }),
  'POST /api/v1/audio/speech': () => ({ model: 'gatehouse/speech', input: 'hi', voice: 'alloy' }),
  'POST /api/v1/audio/transcriptions': () => ({
    model: 'gatehouse/transcribe',
    input_audio: { data: 'UklGRg==', format: 'wav' },
  }),
  'POST /api/v1/batches': () => ({
    endpoint: '/v1/chat/completions',
    completion_window: '24h',
    requests: [{ custom_id: 'a', body: chat }],
  }),
  'POST /api/v1/messages/batches': () => ({
    requests: [{ custom_id: 'a', params: { ...chat, max_tokens: 16 } }],
  }),
  'POST /api/v1/interns': () => ({ name: `fuzz-${randomBytes(3).toString('hex')}`, description: 'd' }),
  'PATCH /api/v1/interns/:internId': () => ({ description: 'changed' }),
  'POST /api/v1/interns/:internId/chat/completions': () => ({
    stream: true,
    messages: [{ role: 'user', content: 'hi' }],
  }),
  'PUT /api/v1/vault/secrets/:name': () => ({ value: 'fuzz-vault-value', hosts: ['api.example.com'] }),
  'PUT /api/v1/vault/interns/:internId/secrets/:name': () => ({
    value: 'fuzz-vault-value',
    hosts: ['api.example.com'],
  }),
  'POST /api/v1/vault/interns/:internId/secrets/copy': () => ({ names: [SECRET] }),
  'POST /internal/runtime/chat/completions': () => chat,
  'POST /api/v1/conversations': () => ({
    items: [{ type: 'message', role: 'user', content: 'hi' }],
    metadata: { topic: 'fuzz' },
  }),
  'POST /api/v1/conversations/:id': () => ({ metadata: { topic: 'fuzz' } }),
  'POST /api/v1/conversations/:id/items': () => ({ items: [{ role: 'user', content: 'more' }] }),
  'POST /api/v1/generation/feedback': (fx) => ({ generation_id: fx.generation, category: 'other' }),
};

/** Routes whose valid example is refused by design (removed, no runtime token, nothing running, no such thing). */
const REFUSED: Record<string, number> = {
  'POST /api/v1/credits/crypto-charge': 410,
  'POST /internal/runtime/chat/completions': 401,
  'POST /internal/runtime/egress': 401,
  'POST /api/v1/interns/:internId/chat/completions': 409,
  // The fixtures' management key is no console sign-in's: sign-out leaves it (409).
  'POST /api/v1/auth/sign-out': 409,
  'POST /api/:kind/:model': 404,
  'GET /files/*': 404,
  // Batch files: the sample body is JSON (an upload is a multipart form), and the fixtures hold no file.
  'POST /api/v1/files': 415,
  'GET /api/v1/files/:id': 404,
  'GET /api/v1/files/:id/content': 404,
  'DELETE /api/v1/files/:id': 404,
};

/** A valid-looking path parameter: the fixture a route of that prefix names. */
function paramValue(t: Target, name: string, fx: Fx): string {
  const byName: Record<string, string> = {
    internId: fx.intern,
    name: SECRET,
    interval: 'monthly',
    hash: fx.key,
    workspace_ref: fx.workspace,
    kind: 't2i',
    model: 'no-such-model',
    author: 'gatehouse',
    slug: 'echo',
    '*': 'no/such/file.png',
    item_id: fx.conversationItem,
    version: '1',
  };
  if (t.id === 'DELETE /api/v1/presets/:slug') return 'deletable-preset';
  if (t.url.startsWith('/api/v1/images/models/')) return name === 'author' ? 'media' : 'model-a';
  if (t.url.startsWith('/api/v1/videos/')) return fx.videoJob;
  if (byName[name]) return byName[name];
  if (t.id === 'GET /api/v1/models/:id') return 'gatehouse/echo';
  if (t.id === 'DELETE /api/v1/messages/batches/:id') return fx.deletableMessageBatch;
  if (t.url.startsWith('/api/v1/messages/batches/')) return fx.messageBatch;
  const prefix = t.url.replace('/api/v1/', '').split('/')[0];
  const byPrefix: Record<string, string> = {
    guardrails: fx.guardrail,
    workspaces: fx.workspace,
    byok: fx.byok,
    observability: fx.destination,
    batches: fx.batch,
    responses: fx.response,
    conversations: fx.conversation,
  };
  return byPrefix[prefix ?? ''] ?? 'x';
}

/** A minimal valid value of a JSON schema (for routes without an EXAMPLES row). */
function sample(s: any, fx: Fx): unknown {
  if (!s || typeof s !== 'object') return null;
  if ('const' in s) return s.const;
  if (s.enum) return s.enum[0];
  if (s.default !== undefined) return s.default;
  const alt = s.anyOf ?? s.oneOf;
  if (alt) return sample(alt.find((x: any) => x.type !== 'null') ?? alt[0], fx);
  const type = Array.isArray(s.type) ? s.type.find((x: string) => x !== 'null') : s.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const k of s.required ?? []) out[k] = sample(s.properties?.[k], fx);
      return out;
    }
    case 'array':
      if (s.items?.format === 'uri') return [fx.imageUrl];
      return Array.from({ length: s.minItems ?? 0 }, () => sample(s.items, fx));
    case 'string':
      if (s.format === 'uuid') return '00000000-0000-4000-8000-000000000000';
      if (s.format === 'date-time') return new Date(Date.now() + 86_400_000).toISOString();
      if (s.format === 'email') return 'fuzz@example.com';
      if (s.format === 'uri') return fx.imageUrl;
      return 'x'.repeat(Math.max(1, s.minLength ?? 1));
    case 'integer':
    case 'number':
      return s.minimum ?? 1;
    case 'boolean':
      return false;
    default:
      return null;
  }
}

function exampleBody(t: Target, fx: Fx): unknown {
  const row = EXAMPLES[t.id];
  if (row) return row(fx);
  const body = sample(t.bodySchema, fx);
  // Media routes: every image-URL list with a minimum gets an image (i2i needs one).
  if (t.service === 'media' && body && typeof body === 'object') {
    const b = body as Record<string, unknown>;
    b.prompt = 'a lighthouse at dusk';
    for (const [k, p] of Object.entries<any>(t.bodySchema?.properties ?? {}))
      if (p.type === 'array' && p.items?.format === 'uri' && (p.minItems ?? 0) > 0) b[k] = [fx.imageUrl];
  }
  return body ?? (t.takesBody ? {} : undefined);
}

/** Routes whose parameter is one segment holding a slash, sent encoded (as the openai client sends a model id). */
const ONE_SEGMENT = new Set(['GET /api/v1/models/:id']);

function examplePath(t: Target, fx: Fx, override?: { param: string; segment: string }): string {
  let path = t.url;
  for (const p of t.params) {
    const encoded = encodeBytes(paramValue(t, p, fx));
    const value =
      override?.param === p
        ? override.segment
        : ONE_SEGMENT.has(t.id)
          ? encoded
          : encoded.replace(/%2f/g, '/');
    path = path.replace(p === '*' ? '*' : `:${p}`, value);
  }
  return path;
}

function exampleQuery(t: Target, fx: Fx): string {
  if (t.id === 'GET /api/v1/generation' || t.id === 'GET /api/v1/generation/content')
    return `?id=${fx.generation}`;
  // The operator's per-organization reads name an existing organization.
  if (t.id === 'GET /api/v1/admin/users' || t.id === 'GET /api/v1/admin/credits')
    return `?organization_id=${fx.otherOrg}`;
  const q = sample(t.querySchema, fx) as Record<string, unknown> | null;
  const entries = Object.entries(q ?? {});
  return entries.length ? `?${entries.map(([k, v]) => `${k}=${encodeBytes(String(v))}`).join('&')}` : '';
}

// ---------------------------------------------------------------------------------------------

const fixedGenerator: MediaGenerator = {
  async generate(): Promise<GeneratedOutput[]> {
    return [{ data: PNG, contentType: 'image/png', extension: 'png' }];
  },
};

const KINDS = ['json', 'mutation', 'bytes', 'multipart', 'content-type', 'params', 'query'] as const;
type Kind = (typeof KINDS)[number];
const stats = {
  gatewayRoutes: 0,
  mediaRoutes: 0,
  tried: Object.fromEntries(KINDS.map((k) => [k, 0])) as Record<Kind, number>,
  byStatus: new Map<number, number>(),
  ok2xx: 0,
  client4xx: 0,
  server5xx: 0,
  envelopes: 0,
  hangs: 0,
  crashes: 0,
  pollution: 0,
  ms: 0,
};

afterAll(() => {
  const total = Object.values(stats.tried).reduce((a, b) => a + b, 0);
  if (total === 0) return;
  const statuses = [...stats.byStatus.entries()].sort((a, b) => a[0] - b[0]);
  writeHostileFigures('properties', {
    title: `Property-based hostile input (fast-check) on every gateway and media route with a body, query or path parameters`,
    rows: [
      ['gateway routes fuzzed (enumerated from the app)', stats.gatewayRoutes],
      ['media routes fuzzed', stats.mediaRoutes],
      ['inputs tried', total],
      ['— arbitrary JSON documents', stats.tried.json],
      [
        '— mutations of a valid body (wrong type, 1 MiB string, 5,000-deep nesting, unicode, boundary numbers, polluting keys)',
        stats.tried.mutation,
      ],
      ['— raw bytes (random, truncated, invalid UTF-8, BOM, UTF-16)', stats.tried.bytes],
      [
        '— multipart forms (media: polluting field names, hostile values, files, truncation, no boundary)',
        stats.tried.multipart,
      ],
      ['— wrong content types', stats.tried['content-type']],
      ['— hostile path parameters', stats.tried.params],
      ['— hostile query strings', stats.tried.query],
      ['2xx answers (accepted, real successes)', stats.ok2xx],
      ['4xx answers (standard error envelope)', stats.client4xx],
      [
        '4xx by status',
        statuses
          .filter(([s]) => s >= 400)
          .map(([s, n]) => `${s}: ${n}`)
          .join(', '),
      ],
      ['5xx answers', stats.server5xx],
      ['answers with a wrong envelope or type', stats.envelopes],
      [`hangs (no answer within ${HANG_MS / 1000} s)`, stats.hangs],
      ['crashes (a service stopped answering /health)', stats.crashes],
      ['prototype pollution observed', stats.pollution],
      ['property-test time (s)', (stats.ms / 1000).toFixed(1)],
    ],
    notes: [
      'Routes are captured through onRoute, so a route added later is fuzzed without a change to the test; each gets the kind of key it needs.',
      'Each route is sent its valid example first, which must succeed (or be refused as that route always is: 410, 401 without a runtime token, 409 for an intern not running); inference runs on the offline gatehouse/echo provider.',
      'The internal runtime callbacks answer 401 to anything without a runtime token, so only their authentication layer is fuzzed.',
    ],
  });
});

describe('hostile input: property-based requests on every route', () => {
  let gw: TestGateway;
  let media: MediaHandle;
  let mediaDir: string;
  let images: Server;
  const routes: RouteOptions[] = [];
  const mediaRoutes: RouteOptions[] = [];
  const protoBefore = prototypeSnapshot();
  let fx: Fx;

  beforeAll(async () => {
    gw = await startTestGateway('sqlite', {
      env: {
        GATEHOUSE_WORKER: 'off', // batches stay queued: the fuzz is about their intake
        GATEHOUSE_INFERENCE_BODY_LIMIT: '1048576', // HUGE is over it, NEAR under, as on the other routes
        GATEHOUSE_INTERNS_STEP_DELAY_MS: '20000', // provisioning never starts a runtime here
        GATEHOUSE_RATE_LIMIT_REQUESTS: '100000000',
        GATEHOUSE_BATCH_RATE_LIMIT: '0',
        GATEHOUSE_VAULT_WRITE_LIMIT: '100000', // the fuzz writes vaults far faster than any member may
      },
      onRoute: (r) => routes.push(r),
    });
    images = createServer((_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(PNG));
    await new Promise<void>((r) => images.listen(0, '127.0.0.1', r));
    mediaDir = await mkdtemp(join(tmpdir(), 'hostile-media-'));
    media = await startMedia(
      loadMediaConfig({
        MEDIA_PORT: '0',
        MEDIA_HOST: '127.0.0.1',
        GATEHOUSE_MEDIA_STORE_DIR: mediaDir,
        GATEHOUSE_MEDIA_FETCH_PRIVATE: 'on', // the example image is served on loopback
      }),
      {
        log: false,
        generator: fixedGenerator,
        keys: gw.services.keys,
        videoJobs: gw.services.mediaVideoJobs,
        onRoute: (r) => mediaRoutes.push(r),
      },
    );
    // The gateway's /api/v1/images… and /api/v1/videos… reach this media service.
    gw.services.mediaLink.url = media.url;

    // Fixtures the valid examples name.
    const admin = adminClient(gw.url);
    const mgmt = client(gw.url, gw.managementKey);
    const api = client(gw.url, gw.apiKey);
    const ok = <T = any>(res: { status: number; body: T; text: string }): T => {
      expect(res.status, res.text).toBeLessThan(300);
      return res.body;
    };
    ok(await admin('POST', '/admin/credits', { organization_id: gw.organizationId, amount_usd: 1000 }));
    const other = ok(await admin('POST', '/admin/organizations', { name: 'Fuzz other' })) as any;
    const member = ok(
      await admin('POST', '/admin/users', {
        email: 'fuzz-member@example.com',
        organization_id: gw.organizationId,
        role: 'member',
      }),
    ) as any;
    const workspace = ok(await mgmt('POST', '/workspaces', { name: 'Fuzz', slug: 'fuzz' })) as any;
    // The API key's workspace keeps content, so the generation below has content to read.
    const home = (ok(await mgmt('GET', '/workspaces')) as any).data.find((w: any) => w.is_default);
    ok(await mgmt('PATCH', `/workspaces/${home.id}`, { content_logging: true }));
    const intern = ok(await api('POST', '/interns', { name: 'fuzz-intern' })) as any;
    const conversation = (
      ok(await api('POST', '/conversations', { items: [{ role: 'user', content: 'keep' }] })) as any
    ).id as string;
    const conversationItem = (ok(await api('GET', `/conversations/${conversation}/items`)) as any).data[0]
      .id as string;
    ok(await mgmt('PUT', `/workspaces/${workspace.data.id}/budgets/monthly`, { limit_usd: 50 }));
    ok(
      await api('PUT', `/vault/secrets/${SECRET}`, { value: 'fuzz-vault-value', hosts: ['api.example.com'] }),
    );
    ok(
      await api('PUT', `/vault/interns/${intern.id}/secrets/${SECRET}`, {
        value: 'fuzz-vault-value',
        hosts: ['api.example.com'],
      }),
    );
    // No worker runs here: a message batch cancelled before any request started has ended at once.
    const endedMessageBatch = async () => {
      const created = ok(
        await api('POST', '/messages/batches', EXAMPLES['POST /api/v1/messages/batches']!({} as Fx)),
      ) as any;
      ok(await api('POST', `/messages/batches/${created.id}/cancel`));
      return created.id as string;
    };
    /** A video job the fixed generator completes at once, polled until it has. */
    const completedVideoJob = async () => {
      const { id } = ok(
        await api('POST', '/videos', { model: 'media/video-model', prompt: 'fixture' }),
      ) as any;
      await vi.waitFor(async () =>
        expect((ok(await api('GET', `/videos/${id}`)) as any).status).toBe('completed'),
      );
      return id as string;
    };
    fx = {
      guardrail: (ok(await mgmt('POST', '/guardrails', { name: 'fuzz' })) as any).data.id,
      key: (ok(await mgmt('POST', '/keys', { name: 'fuzz' })) as any).data.hash,
      workspace: workspace.data.id,
      byok: (ok(await mgmt('POST', '/byok', { provider: 'openai', key: 'sk-fuzz-provider-secret' })) as any)
        .data.id,
      destination: (
        ok(
          await mgmt('POST', '/observability/destinations', {
            type: 'webhook',
            name: 'fuzz',
            config: { url: 'https://hooks.example.com/fixture' },
          }),
        ) as any
      ).data.id,
      batch: (ok(await api('POST', '/batches', EXAMPLES['POST /api/v1/batches']!({} as Fx))) as any).id,
      messageBatch: await endedMessageBatch(),
      deletableMessageBatch: await endedMessageBatch(),
      intern: intern.id,
      generation: (ok(await api('POST', '/chat/completions', chat)) as any).id,
      response: (ok(await api('POST', '/responses', { model: 'gatehouse/echo', input: 'keep' })) as any).id,
      conversation,
      conversationItem,
      member: member.data.id,
      otherOrg: other.data.id,
      imageUrl: `http://127.0.0.1:${(images.address() as AddressInfo).port}/a.png`,
      videoJob: await completedVideoJob(),
    };
    // Presets are named by slug: `echo` (the slug every `:slug` parameter gets) for the reads, and
    // one for DELETE.
    for (const slug of ['echo', 'deletable-preset'])
      ok(await api('POST', `/presets/${slug}/chat/completions`, chat));
    await gw.services.accountant.flush();
    await gw.services.contentLog.flush();
  });

  afterAll(async () => {
    await media?.close();
    await gw?.stop();
    await new Promise((r) => images?.close(r));
    if (mediaDir) await rm(mediaDir, { recursive: true, force: true });
  });

  function targets(): Target[] {
    const out: Target[] = [];
    const add = (service: Service, r: RouteOptions) => {
      // The console's files: a path names a file, not input (its traversal refusals are tested in
      // test/console/console.test.ts); HTML is their success, not the JSON envelope.
      if (r.url.startsWith('/console')) return;
      const schema = (r.schema ?? {}) as Record<string, any>;
      const params = [...r.url.matchAll(/:([A-Za-z_]+)|(\*)/g)].map((m) => m[1] ?? '*');
      for (const method of [r.method].flat()) {
        if (method === 'HEAD') continue;
        const takesBody = ['POST', 'PUT', 'PATCH', 'DELETE'].includes(method);
        if (!takesBody && !schema.querystring && params.length === 0) continue;
        const auth: AuthMode =
          service === 'media'
            ? needsCredential(method, r.url)
              ? 'api'
              : 'none'
            : r.url.startsWith('/internal/runtime/')
              ? 'runtime'
              : ((r.config as { auth?: AuthMode } | undefined)?.auth ?? 'none');
        out.push({
          service,
          id: `${method} ${r.url}`,
          method,
          url: r.url,
          auth,
          takesBody,
          params,
          querySchema: schema.querystring,
          bodySchema: schema.body,
        });
      }
    };
    for (const r of routes) add('gateway', r);
    for (const r of mediaRoutes) add('media', r);
    return out;
  }

  it('enumerates the routes that take input from the apps themselves', () => {
    const all = targets();
    const gateway = all.filter((t) => t.service === 'gateway');
    const mediaT = all.filter((t) => t.service === 'media');
    // 66 gateway routes and 7 media routes take input today; fewer means the enumeration broke.
    expect(gateway.length).toBeGreaterThanOrEqual(60);
    expect(mediaT.length).toBeGreaterThanOrEqual(6);
    for (const id of [
      'POST /api/v1/chat/completions',
      'POST /api/v1/batches',
      'PUT /api/v1/vault/secrets/:name',
      'POST /api/v1/admin/keys',
    ])
      expect(gateway.map((t) => t.id)).toContain(id);
    for (const t of all)
      expect(['none', 'optional', 'key', 'api', 'management', 'admin', 'runtime'], t.id).toContain(t.auth);
  });

  it('answers every generated input with a 2xx or an enveloped 4xx, never a 5xx or a hang', async () => {
    const t0 = Date.now();
    const all = targets();
    stats.gatewayRoutes = new Set(all.filter((t) => t.service === 'gateway').map((t) => t.id)).size;
    stats.mediaRoutes = new Set(all.filter((t) => t.service === 'media').map((t) => t.id)).size;
    const problems: string[] = [];
    const crashes: string[] = [];
    const onCrash = (err: unknown) => crashes.push(String(err));
    process.on('uncaughtException', onCrash);
    process.on('unhandledRejection', onCrash);

    const authHeader = (t: Target): Record<string, string> => {
      // An optional-auth route is sent the key, so the fuzz also reaches its keyed answer.
      const token = {
        api: gw.apiKey,
        key: gw.apiKey,
        optional: gw.apiKey,
        management: gw.managementKey,
        admin: ADMIN_TOKEN,
      }[t.auth as 'api' | 'key' | 'optional' | 'management' | 'admin'];
      return token ? { authorization: `Bearer ${token}` } : {};
    };

    /** Sends one request and checks its answer; throws (for fast-check to shrink) on a bad one. */
    async function send(
      t: Target,
      kind: Kind,
      req: { path?: string; query?: string; body?: Buffer | string; contentType?: string | null },
    ): Promise<Answer> {
      stats.tried[kind]++;
      const base = t.service === 'gateway' ? gw.url : media.url;
      const url = `${base}${req.path ?? examplePath(t, fx)}${req.query ?? exampleQuery(t, fx)}`;
      const headers: Record<string, string> = { ...authHeader(t) };
      const hasBody = t.takesBody && req.body !== undefined;
      const type = req.contentType === undefined ? 'application/json' : req.contentType;
      if (hasBody && type !== null) headers['content-type'] = type;
      let answer: Answer;
      try {
        const res = await fetch(url, {
          method: t.method,
          headers,
          body: hasBody ? req.body : undefined,
          redirect: 'manual',
          signal: AbortSignal.timeout(HANG_MS),
        });
        answer = {
          status: res.status,
          contentType: res.headers.get('content-type') ?? '',
          text: await res.text(),
          path: new URL(url).pathname,
        };
      } catch (err) {
        const hang = (err as Error).name === 'TimeoutError';
        if (hang) stats.hangs++;
        else stats.crashes++;
        const cause = (err as { cause?: { code?: string; message?: string } }).cause;
        const why = hang ? 'no answer' : `connection failed: ${cause?.code ?? ''} ${cause?.message ?? err}`;
        throw new Error(`${t.id} ${kind}: ${why} (${url.slice(0, 200)}; body ${summarize(req.body)})`);
      }
      stats.byStatus.set(answer.status, (stats.byStatus.get(answer.status) ?? 0) + 1);
      if (answer.status >= 500) stats.server5xx++;
      else if (answer.status >= 400) stats.client4xx++;
      else if (answer.status >= 200 && answer.status < 300) stats.ok2xx++;
      const problem = answerProblem(answer, t.service);
      if (problem) {
        if (answer.status < 500) stats.envelopes++;
        throw new Error(`${t.id} ${kind}: ${problem} (${url.slice(0, 200)}; body ${summarize(req.body)})`);
      }
      return answer;
    }

    /** Runs one property, recording its (shrunk) counterexample instead of stopping the others. */
    async function property<T>(
      t: Target,
      name: string,
      arb: fc.Arbitrary<T>,
      runs: number,
      run: (v: T) => Promise<unknown>,
    ) {
      const prop = fc.asyncProperty(arb, async (v) => {
        await run(v);
      });
      const out = await fc.check(prop, { numRuns: runs });
      if (out.failed) {
        const e = out.errorInstance as Error | undefined;
        problems.push(
          `${t.id} [${name}] seed ${out.seed}: ${e?.message ?? String(out.errorInstance)}`.slice(0, 600),
        );
      }
    }

    async function fuzz(t: Target) {
      const example = exampleBody(t, fx);
      const text = example === undefined ? undefined : toJson(example);
      // The valid example itself must succeed (or be refused as the route always does), so the
      // mutations below start from a request that reaches the handler.
      const first = await send(t, 'json', { body: text }).catch((e: Error) => {
        problems.push(e.message);
        return null;
      });
      const refused = REFUSED[t.id] ?? (t.auth === 'runtime' ? 401 : null);
      if (first && (refused ? first.status !== refused : first.status >= 300))
        problems.push(`${t.id}: the valid example was answered ${first.status} ${first.text.slice(0, 200)}`);

      if (t.takesBody) {
        await property(t, 'json', jsonDocArb, runsOf(t, 'json'), (doc) =>
          send(t, 'json', { body: toJson(doc) }),
        );
        if (example !== null && typeof example === 'object')
          await property(
            t,
            'mutation',
            mutationArb(Object.keys(t.bodySchema?.properties ?? {})),
            runsOf(t, 'mutation'),
            (m) => send(t, 'mutation', { body: toJson(mutate(example, m)) }),
          );
        await property(t, 'bytes', bytesArb(text ?? '{}'), runsOf(t, 'bytes'), (b) =>
          send(t, 'bytes', { body: b }),
        );
        if (t.service === 'media')
          await property(
            t,
            'multipart',
            multipartArb(Object.keys(t.bodySchema?.properties ?? {})),
            RUNS.multipart,
            (m) => send(t, 'multipart', m),
          );
        for (const contentType of CONTENT_TYPES)
          await send(t, 'content-type', { body: text ?? '{}', contentType }).catch((e: Error) =>
            problems.push(e.message),
          );
      }
      if (t.params.length > 0)
        await property(
          t,
          'params',
          fc.record({ which: fc.nat(), segment: segmentArb }),
          runsOf(t, 'params'),
          ({ which, segment }) =>
            send(t, 'params', {
              path: examplePath(t, fx, { param: t.params[which % t.params.length]!, segment }),
              body: text,
            }),
        );
      const queryKeys = Object.keys(t.querySchema?.properties ?? {});
      if (queryKeys.length > 0 || t.method === 'GET')
        await property(
          t,
          'query',
          fc.array(
            fc.tuple(
              fc.oneof(
                fc.constantFrom(...(queryKeys.length ? queryKeys : ['x'])),
                fc.constantFrom(
                  '__proto__',
                  '__proto__[polluted]',
                  'constructor[prototype][polluted]',
                  'constructor',
                  'a[b][c]',
                  'limit[]',
                ),
                fc.string({ unit: 'binary', maxLength: 10 }),
              ),
              queryValueArb,
            ),
            { maxLength: 6 },
          ),
          runsOf(t, 'query'),
          (pairs) =>
            send(t, 'query', {
              query: `?${pairs.map(([k, v]) => `${encodeBytes(k).replace(/%5b/g, '[').replace(/%5d/g, ']')}=${encodeBytes(v)}`).join('&')}`,
              body: text,
            }),
        );
    }

    async function alive(label: string) {
      for (const [name, base] of [
        ['gateway', gw.url],
        ['media', media.url],
      ]) {
        const res = await fetch(`${base}/health`, { signal: AbortSignal.timeout(5000) }).catch(() => null);
        if (res?.status !== 200) {
          stats.crashes++;
          problems.push(`${name} stopped answering /health after ${label}`);
        }
      }
    }

    // Destructive routes last, so the fixtures the others name stay in place while they run; one
    // at a time in reverse registration order, so a child (a budget, an intern's secret) goes
    // before its parent (the workspace, the intern).
    const others = all.filter((t) => t.method !== 'DELETE');
    for (let i = 0; i < others.length; i += PARALLEL) {
      const chunk = others.slice(i, i + PARALLEL);
      await Promise.all(chunk.map((t) => fuzz(t)));
      await alive(chunk.map((t) => t.id).join(', '));
    }
    for (const t of all.filter((t) => t.method === 'DELETE').reverse()) {
      await fuzz(t);
      await alive(t.id);
    }

    process.off('uncaughtException', onCrash);
    process.off('unhandledRejection', onCrash);
    stats.crashes += crashes.length;
    const seen = polluted();
    const protoAfter = prototypeSnapshot();
    stats.pollution = seen.length + (protoAfter === protoBefore ? 0 : 1);
    stats.ms = Date.now() - t0;

    expect(crashes, 'uncaught exceptions or rejections').toEqual([]);
    expect(seen, 'properties seen on fresh objects').toEqual([]);
    expect(protoAfter, 'standard prototypes changed').toBe(protoBefore);
    expect(problems).toEqual([]);
    // A guard against a run that hangs, not a time target: ~90 s alone on a 2-core VM, and these
    // VMs differ 3–4× in speed from day to day, with other suites beside it in CI.
  }, 600_000);
});
