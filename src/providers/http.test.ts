import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../../test/support/mock-upstream.js';
import { anthropicErrors } from './anthropic/errors.js';
import { googleErrors } from './google/errors.js';
import {
  abortReason,
  ensureOk,
  isAbortError,
  parseRetryAfter,
  postJson,
  postJsonWhole,
  postStream,
  readJson,
  sseEvents,
  toUpstreamError,
  upstreamErrorFrom,
} from './http.js';
import { openAiErrors } from './openai/errors.js';
import { UpstreamError } from './types.js';

const KEY = 'sk-live-abcdef0123456789';
const live = () => new AbortController().signal;

describe('parseRetryAfter', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  it('reads delta seconds, HTTP dates and retry-after-ms', () => {
    expect(parseRetryAfter({ 'retry-after': '3' })).toBe(3000);
    expect(parseRetryAfter({ 'retry-after': '0.5' })).toBe(500);
    expect(parseRetryAfter({ 'retry-after': 'Wed, 01 Jan 2025 00:00:07 GMT' }, now)).toBe(7000);
    expect(parseRetryAfter({ 'retry-after': 'Tue, 31 Dec 2024 23:59:00 GMT' }, now)).toBe(0);
    expect(parseRetryAfter({ 'retry-after-ms': '1234.5', 'retry-after': '9' })).toBe(1235);
    expect(parseRetryAfter(new Headers({ 'Retry-After': '2' }))).toBe(2000);
  });
  it('is undefined when absent or unparseable', () => {
    expect(parseRetryAfter({})).toBeUndefined();
    expect(parseRetryAfter({ 'retry-after': 'soon' })).toBeUndefined();
  });
});

describe('upstreamErrorFrom', () => {
  it("takes the message through each provider's own error shape", () => {
    const openai = upstreamErrorFrom(
      400,
      {},
      JSON.stringify({ error: { message: 'bad temp', type: 'invalid' } }),
      openAiErrors,
    );
    expect(openai).toMatchObject({ status: 400, message: 'bad temp', retryable: false });
    const anthropic = upstreamErrorFrom(
      529,
      {},
      JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
      anthropicErrors,
    );
    expect(anthropic).toMatchObject({ status: 529, message: 'Overloaded', retryable: true });
    const gemini = upstreamErrorFrom(
      429,
      {},
      JSON.stringify({
        error: {
          code: 429,
          message: 'Quota exceeded',
          status: 'RESOURCE_EXHAUSTED',
          details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '13s' }],
        },
      }),
      googleErrors,
    );
    expect(gemini).toMatchObject({
      status: 429,
      message: 'RESOURCE_EXHAUSTED: Quota exceeded',
      retryAfterMs: 13000,
    });
    expect((gemini.body as any).error.code).toBe(429);
  });

  it('falls back to text bodies and the status', () => {
    expect(upstreamErrorFrom(502, {}, '<html>Bad Gateway</html>', openAiErrors).message).toBe(
      '<html>Bad Gateway</html>',
    );
    expect(upstreamErrorFrom(503, {}, '', openAiErrors).message).toBe('upstream responded with HTTP 503');
    expect(
      upstreamErrorFrom(422, {}, JSON.stringify({ detail: 'field required' }), openAiErrors).message,
    ).toBe('field required');
    // A body in a shape the provider does not use is quoted, not guessed at.
    expect(upstreamErrorFrom(500, {}, '{"oops":1}', anthropicErrors).message).toBe('{"oops":1}');
  });

  it('prefers the retry-after header and never keeps the key', () => {
    const e = upstreamErrorFrom(
      401,
      { 'retry-after': '4' },
      JSON.stringify({ error: { message: `Incorrect API key provided: ${KEY}` } }),
      openAiErrors,
      [KEY],
    );
    expect(e.retryAfterMs).toBe(4000);
    expect(e.message).toBe('Incorrect API key provided: [redacted]');
    expect(JSON.stringify(e.body)).not.toContain(KEY);
  });
});

describe('toUpstreamError', () => {
  it('maps transport errors to status 0, retryable', () => {
    const e = toUpstreamError(
      Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
      live(),
    );
    expect(e).toBeInstanceOf(UpstreamError);
    expect(e).toMatchObject({ status: 0, retryable: true });
    expect((e as Error).message).toContain('connection refused');
  });

  it('returns the caller abort reason instead of an UpstreamError', () => {
    const ac = new AbortController();
    ac.abort();
    const e = toUpstreamError(new Error('aborted'), ac.signal);
    expect(e).not.toBeInstanceOf(UpstreamError);
    expect(isAbortError(e)).toBe(true);
    expect((e as Error).name).toBe('AbortError');

    const timeout = new AbortController();
    timeout.abort(new DOMException('deadline', 'TimeoutError'));
    expect((abortReason(timeout.signal) as Error).name).toBe('TimeoutError');
    expect(isAbortError(abortReason(timeout.signal))).toBe(true);
    expect(isAbortError(new UpstreamError(0, 'x'))).toBe(false);
  });
});

describe.each([
  ['postJson', postJson],
  ['postJsonWhole', postJsonWhole],
  ['postStream', postStream],
] as const)('%s against a real server', (_name, post) => {
  let mock: MockUpstream;
  beforeAll(async () => {
    mock = await startMockUpstream();
  });
  afterAll(() => mock.close());

  it('posts JSON and returns status, headers and the body', async () => {
    // Multi-byte characters across the chunks of a large body decode whole.
    const text = 'héllo ✓'.repeat(5000);
    mock.enqueue({ status: 201, body: { ok: true, text }, headers: { 'x-thing': '1' } });
    const res = await post(`${mock.url}/anything/chat/completions`, { a: 1 }, { 'x-h': 'v' }, live());
    expect(res.status).toBe(201);
    expect(res.headers['x-thing']).toBe('1');
    expect(await readJson(res, live())).toEqual({ ok: true, text });
    const req = mock.requests.at(-1)!;
    expect(req.body).toEqual({ a: 1 });
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['x-h']).toBe('v');
  });

  it('ensureOk throws the upstream error with its message', async () => {
    mock.enqueue({ status: 429, headers: { 'retry-after': '1' }, error: { message: 'slow down' } });
    const res = await post(`${mock.url}/v1/chat/completions`, {}, {}, live());
    await expect(ensureOk(res, live(), openAiErrors)).rejects.toMatchObject({
      status: 429,
      retryAfterMs: 1000,
      message: 'slow down',
    });
  });

  it('a headers timeout → UpstreamError(0), retryable', async () => {
    mock.enqueue({ delayMs: 2000, body: {} });
    const err = await post(`${mock.url}/v1/chat/completions`, {}, {}, live(), {
      headersTimeoutMs: 100,
    }).catch((e) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err).toMatchObject({ status: 0, retryable: true });
    expect(err.message).toContain('timed out');
  });

  it('a body cut off half-way → UpstreamError(0) (when posting, or reading the body)', async () => {
    mock.enqueue({ body: { long: 'x'.repeat(2000) }, dieAfterEvents: 0 });
    const err: any = await post(`${mock.url}/v1/chat/completions`, {}, {}, live())
      .then((res) => readJson(res, live()))
      .catch((e) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err.status).toBe(0);
  });

  it('an already-aborted signal rejects with the abort, without a request', async () => {
    const before = mock.requests.length;
    const ac = new AbortController();
    ac.abort();
    const err = await post(`${mock.url}/v1/chat/completions`, {}, {}, ac.signal).catch((e) => e);
    expect(err.name).toBe('AbortError');
    expect(mock.requests.length).toBe(before);
  });

  it('an abort while the upstream works rejects with its reason at once', async () => {
    mock.enqueue({ delayMs: 3000, body: {} });
    const ac = new AbortController();
    const started = Date.now();
    setTimeout(() => ac.abort(new DOMException('deadline', 'TimeoutError')), 100);
    const err = await post(`${mock.url}/v1/chat/completions`, {}, {}, ac.signal).catch((e) => e);
    expect(err.name).toBe('TimeoutError');
    expect(isAbortError(err)).toBe(true);
    expect(Date.now() - started).toBeLessThan(1000);
  });
});

describe('postStream: a streamed body as it arrives', () => {
  let mock: MockUpstream;
  beforeAll(async () => {
    mock = await startMockUpstream();
  });
  afterAll(() => mock.close());
  const url = () => `${mock.url}/v1/chat/completions`;

  it('yields every event in order, across reads spread over time', async () => {
    const stream = Array.from({ length: 5 }, (_, i) => ({ data: { i } }));
    mock.enqueue({ stream, eventDelayMs: 20 });
    const res = await postStream(url(), { stream: true }, {}, live());
    const seen: unknown[] = [];
    for await (const ev of sseEvents(res, live())) seen.push(JSON.parse(ev.data));
    expect(seen).toEqual([0, 1, 2, 3, 4].map((i) => ({ i })));
  });

  it('holds a large body under backpressure and still delivers all of it', async () => {
    const big = 'y'.repeat(8 * 1024);
    const stream = Array.from({ length: 40 }, (_, i) => ({ data: { i, big } }));
    mock.enqueue({ stream });
    const res = await postStream(url(), { stream: true }, {}, live());
    // Nothing read for a while: the body buffers up to its high-water mark, then pauses the socket.
    await new Promise((r) => setTimeout(r, 100));
    let n = 0;
    for await (const ev of sseEvents(res, live())) expect(JSON.parse(ev.data).i).toBe(n++);
    expect(n).toBe(40);
  });

  it('a stream cut off mid-way fails its reader with UpstreamError(0)', async () => {
    mock.enqueue({ stream: [{ data: { a: 1 } }, { data: { a: 2 } }, { data: { a: 3 } }], dieAfterEvents: 1 });
    const res = await postStream(url(), { stream: true }, {}, live());
    const seen: unknown[] = [];
    const err = await (async () => {
      for await (const ev of sseEvents(res, live())) seen.push(JSON.parse(ev.data));
    })().catch((e) => e);
    expect(seen).toEqual([{ a: 1 }]);
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err.status).toBe(0);
  });

  it('a stream that goes silent past the body timeout fails with UpstreamError(0)', async () => {
    mock.enqueue({ stream: [{ data: { a: 1 } }, { data: { a: 2 } }], stallAfterEvents: 1 });
    const res = await postStream(url(), { stream: true }, {}, live(), { bodyTimeoutMs: 150 });
    const err = await (async () => {
      for await (const _ of sseEvents(res, live()));
    })().catch((e) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err.message).toContain('timed out');
  });

  it("the caller's abort mid-stream ends the reader with the abort reason", async () => {
    mock.enqueue({ stream: Array.from({ length: 20 }, (_, i) => ({ data: { i } })), eventDelayMs: 50 });
    const ac = new AbortController();
    const res = await postStream(url(), { stream: true }, {}, ac.signal);
    const err = await (async () => {
      for await (const ev of sseEvents(res, ac.signal))
        if (JSON.parse(ev.data).i === 1) ac.abort(new DOMException('gone', 'AbortError'));
    })().catch((e) => e);
    expect(err.name).toBe('AbortError');
    expect(isAbortError(err)).toBe(true);
  });

  it('a reader that stops early releases the body, and the connection serves the next call', async () => {
    mock.enqueue({ stream: [{ data: { a: 1 } }, { data: { a: 2 } }, { data: { a: 3 } }] });
    const res = await postStream(url(), { stream: true }, {}, live());
    for await (const ev of sseEvents(res, live())) if (JSON.parse(ev.data).a === 1) break;
    mock.enqueue({ body: { ok: 1 } });
    const next = await postJsonWhole(url(), {}, {}, live());
    expect(await readJson(next, live())).toEqual({ ok: 1 });
  });
});
