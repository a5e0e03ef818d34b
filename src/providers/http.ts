/**
 * Shared upstream HTTP for the network adapters: one pooled keep-alive undici Agent per process,
 * a JSON POST helper, SSE iteration, and the mapping of every failure to `UpstreamError`.
 *
 * Failure mapping (what the router sees):
 * - upstream answered with status ≥ 400 → `UpstreamError(status, <upstream's own message>)`,
 *   retryable for 408/429/5xx, with `retryAfterMs` from `retry-after-ms` / `retry-after`
 *   (seconds or HTTP date) or the body (the provider's `ErrorShape` reads its own bodies);
 * - connection refused/reset, DNS failure, our own connect/headers/body timeouts, a body cut off
 *   mid-way → `UpstreamError(0, …, retryable: true)`;
 * - the CALLER's signal aborted (client went away, or the router's own deadline) → the signal's
 *   `reason` is rethrown as is (a DOMException `AbortError`, or `TimeoutError` for
 *   `AbortSignal.timeout`): it is not an upstream failure and must not trigger a fallback by itself.
 *   `isAbortError(err)` tells the two apart.
 *
 * Every message (and the stored error body) is scrubbed of the API key before it leaves here.
 */
import { Agent, type Dispatcher, util } from 'undici';
import { parseSse, parseSseChunks, type SseEvent } from '../formats/sse.js';
import type { CallSignal } from '../lib/call-abort.js';
import { extended } from '../lib/objects.js';
import { jsonBody } from '../lib/raw-json.js';
import { withTraceparent } from '../telemetry/spans.js';
import { ArrivingBody } from './arriving-body.js';
import type { ErrorShape } from './errors.js';
import { redact } from './redact.js';
import { UpstreamError } from './types.js';

export { redact };

export interface UpstreamHttpOptions {
  /** TCP+TLS connect timeout. */
  connectTimeoutMs: number;
  /** Time to the response headers. Non-streamed completions only send headers when done: keep it long. */
  headersTimeoutMs: number;
  /** Longest silence between two body chunks (streams send pings/heartbeats well within this). */
  bodyTimeoutMs: number;
  /** Sockets kept alive per origin. */
  connections: number;
  keepAliveTimeoutMs: number;
}

export const DEFAULT_UPSTREAM_HTTP_OPTIONS: UpstreamHttpOptions = {
  connectTimeoutMs: 10_000,
  headersTimeoutMs: 600_000,
  bodyTimeoutMs: 300_000,
  connections: 256,
  keepAliveTimeoutMs: 30_000,
};

let agent: Agent | null = null;
let agentOptions: UpstreamHttpOptions = DEFAULT_UPSTREAM_HTTP_OPTIONS;

function makeAgent(o: UpstreamHttpOptions): Agent {
  return new Agent({
    connections: o.connections,
    keepAliveTimeout: o.keepAliveTimeoutMs,
    keepAliveMaxTimeout: Math.max(o.keepAliveTimeoutMs, 600_000),
    connectTimeout: o.connectTimeoutMs,
    headersTimeout: o.headersTimeoutMs,
    bodyTimeout: o.bodyTimeoutMs,
  });
}

/** The process-wide upstream Agent (created on first use). */
export function upstreamAgent(): Agent {
  agent ??= makeAgent(agentOptions);
  return agent;
}

/**
 * Replaces the process-wide Agent's options (call at startup, before traffic). The previous Agent
 * is closed gracefully (in-flight requests finish).
 */
export function configureUpstreamHttp(opts: Partial<UpstreamHttpOptions>): void {
  agentOptions = { ...agentOptions, ...opts };
  const old = agent;
  agent = null;
  if (old) void old.close().catch(() => {});
}

/**
 * Raises the Agent's own timeouts to Gatehouse's upstream deadlines where these are longer (never
 * lowers them): the attempt's deadline and the stream idle timeout must be what ends a call, not
 * undici before them. A stream passes its idle timeout per request; a whole answer's body has the
 * Agent's.
 */
export function coverUpstreamDeadlines(d: { upstreamTimeoutMs: number; streamIdleTimeoutMs: number }): void {
  const headersTimeoutMs = Math.max(agentOptions.headersTimeoutMs, d.upstreamTimeoutMs);
  const bodyTimeoutMs = Math.max(agentOptions.bodyTimeoutMs, d.streamIdleTimeoutMs);
  if (headersTimeoutMs === agentOptions.headersTimeoutMs && bodyTimeoutMs === agentOptions.bodyTimeoutMs)
    return;
  configureUpstreamHttp({ headersTimeoutMs, bodyTimeoutMs });
}

/** Closes the pooled sockets (graceful shutdown). The next request makes a fresh Agent. */
export async function closeUpstreamHttp(): Promise<void> {
  const old = agent;
  agent = null;
  if (old) await old.close();
}

/** A body as it arrives: async-iterable bytes, with `text()` / `json()` helpers (streams). */
export type StreamBody = Dispatcher.ResponseData['body'];
/** What the readers of a whole answer use of a body. */
export interface TextBody {
  text(): Promise<string>;
}

export interface UpstreamResponse<B extends TextBody = StreamBody> {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: B;
}

export interface PostOptions {
  /** Overrides the Agent's headers timeout for this request. */
  headersTimeoutMs?: number;
  /** Overrides the Agent's body (idle) timeout for this request. */
  bodyTimeoutMs?: number;
  /** Secrets to scrub from error messages (the API key). */
  secrets?: (string | null | undefined)[];
}

/** Origin and path of the upstream URLs seen so far (a few per provider): parsed once, not per call. */
const splitUrls = new Map<string, { origin: string; path: string }>();
function splitUrl(url: string): { origin: string; path: string } {
  let parts = splitUrls.get(url);
  if (!parts) {
    const u = new URL(url);
    parts = { origin: u.origin, path: `${u.pathname}${u.search}` };
    // Unbounded input (a per-request URL) must not grow the map without limit.
    if (splitUrls.size >= 1000) splitUrls.clear();
    splitUrls.set(url, parts);
  }
  return parts;
}

/** The dispatch options of a JSON POST to `url` (both postJson and postJsonWhole send these). */
function postOptions(
  url: string,
  body: unknown,
  headers: Record<string, string>,
  signal: CallSignal,
  opts: PostOptions,
) {
  const { origin, path } = splitUrl(url);
  return {
    origin,
    path,
    method: 'POST' as const,
    // The attempt's span as the upstream's parent (W3C traceparent) when tracing is on.
    headers: withTraceparent(
      { 'content-type': 'application/json', accept: 'application/json', ...headers },
      signal,
    ),
    // A lane's large body: its unchanged members as the caller's bytes (lib/raw-json.ts).
    body: jsonBody(body),
    ...(opts.headersTimeoutMs !== undefined ? { headersTimeout: opts.headersTimeoutMs } : {}),
    ...(opts.bodyTimeoutMs !== undefined ? { bodyTimeout: opts.bodyTimeoutMs } : {}),
  };
}

/**
 * POSTs `body` as JSON. Resolves with the response whatever its status (use `ensureOk`); rejects
 * with `UpstreamError(0)` on connection failures/timeouts and with the abort reason when `signal`
 * aborted.
 */
export async function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string>,
  signal: CallSignal,
  opts: PostOptions = {},
): Promise<UpstreamResponse> {
  throwIfAborted(signal);
  try {
    // Onto postOptions' own new object: a spread of it would get a hidden class per call
    // (lib/objects.ts). undici takes any EventTarget-like signal (it only listens for 'abort' and
    // reads `reason`); its types name AbortSignal and EventEmitter only.
    const res = await upstreamAgent().request(
      Object.assign(postOptions(url, body, headers, signal, opts), { signal: signal as AbortSignal }),
    );
    return { status: res.statusCode, headers: res.headers, body: res.body };
  } catch (err) {
    throw toUpstreamError(err, signal, opts.secrets);
  }
}

/**
 * POSTs `body` as JSON and reads the whole answer before resolving (non-streamed calls), through
 * undici's `dispatch` with a handler that collects the bytes: `request()` would wrap the body in a
 * Readable stream (its events, buffering and state machine) only for it to be read whole at once.
 * Failures as `postJson`'s, a body cut off mid-way included (`UpstreamError(0)`).
 */
export async function postJsonWhole(
  url: string,
  body: unknown,
  headers: Record<string, string>,
  signal: CallSignal,
  opts: PostOptions = {},
): Promise<UpstreamResponse<TextBody>> {
  throwIfAborted(signal);
  try {
    return await new Promise<UpstreamResponse<TextBody>>((resolve, reject) => {
      let abort: ((reason: Error) => void) | null = null;
      const onAbort = () => abort?.(abortReason(signal) as Error);
      signal.addEventListener('abort', onAbort, { once: true });
      const settle = () => signal.removeEventListener('abort', onAbort);
      let status = 0;
      let responseHeaders: Record<string, string | string[] | undefined> = {};
      const chunks: Buffer[] = [];
      const handler: Dispatcher.DispatchHandler = {
        onConnect(abortRequest) {
          abort = abortRequest;
          if (signal.aborted) onAbort();
        },
        onHeaders(statusCode, rawHeaders) {
          status = statusCode;
          responseHeaders = util.parseHeaders(rawHeaders);
          return true;
        },
        onData(chunk) {
          chunks.push(chunk);
          return true;
        },
        onComplete() {
          settle();
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status, headers: responseHeaders, body: { text: async () => text } });
        },
        onError(err) {
          settle();
          reject(err);
        },
      };
      upstreamAgent().dispatch(postOptions(url, body, headers, signal, opts), handler);
    });
  } catch (err) {
    throw toUpstreamError(err, signal, opts.secrets);
  }
}

/**
 * POSTs `body` as JSON for a streamed answer, through undici's `dispatch`: resolves at the response
 * headers with the body as an `ArrivingBody` (its chunks as they arrive, backpressure on the socket)
 * — `request()`'s Readable body is a stream machine the relay does not need. Failures as
 * `postJson`'s; a body cut off or timed out later fails its reader (`UpstreamError(0)` once mapped
 * by `sseEvents`), a caller abort ends it with the abort reason.
 */
export async function postStream(
  url: string,
  body: unknown,
  headers: Record<string, string>,
  signal: CallSignal,
  opts: PostOptions = {},
): Promise<UpstreamResponse<ArrivingBody>> {
  throwIfAborted(signal);
  try {
    return await new Promise<UpstreamResponse<ArrivingBody>>((resolve, reject) => {
      let abort: ((reason: Error) => void) | null = null;
      const onAbort = () => abort?.(abortReason(signal) as Error);
      signal.addEventListener('abort', onAbort, { once: true });
      const settle = () => signal.removeEventListener('abort', onAbort);
      let arriving: ArrivingBody | null = null;
      let resume: () => void = () => {};
      const handler: Dispatcher.DispatchHandler = {
        onConnect(abortRequest) {
          abort = abortRequest;
          if (signal.aborted) onAbort();
        },
        onHeaders(statusCode, rawHeaders, resumeSocket) {
          resume = resumeSocket;
          arriving = new ArrivingBody((reason) => abort?.(reason));
          resolve({ status: statusCode, headers: util.parseHeaders(rawHeaders), body: arriving });
          return true;
        },
        onData(chunk) {
          return arriving ? arriving.push(chunk, resume) : true;
        },
        onComplete() {
          settle();
          arriving?.end();
        },
        onError(err) {
          settle();
          if (arriving) arriving.fail(err);
          else reject(err);
        },
      };
      upstreamAgent().dispatch(postOptions(url, body, headers, signal, opts), handler);
    });
  } catch (err) {
    throw toUpstreamError(err, signal, opts.secrets);
  }
}

/** One upstream call, by name: where, what, with which headers, and how its errors read. */
export interface ApiCall {
  url: string;
  body: unknown;
  headers: Record<string, string>;
  signal: CallSignal;
  /** Secrets scrubbed from every message and stored error body (the API key). */
  secrets: (string | null | undefined)[];
  /** The provider's error body shape (its `errors.ts`). */
  errors: ErrorShape;
  /** Streams: the longest silence between two chunks of the body. */
  idleTimeoutMs?: number;
}

/** A non-streamed call: POSTs `body` and parses the whole JSON answer (UpstreamError for ≥ 400). */
export async function callJson(call: ApiCall): Promise<unknown> {
  const res = await callWhole(call);
  return readJson(res, call.signal, call.secrets);
}

/** POSTs `body` and reads the whole answer (UpstreamError for ≥ 400); the text is the caller's. */
export async function callWhole(call: ApiCall): Promise<UpstreamResponse<TextBody>> {
  const res = await postJsonWhole(call.url, call.body, call.headers, call.signal, { secrets: call.secrets });
  return ensureOk(res, call.signal, call.errors, call.secrets);
}

/**
 * A GET of a JSON resource (a stored object a provider keeps, e.g. a response's input items):
 * the parsed answer; failures as `callJson`'s (UpstreamError for ≥ 400, the key scrubbed).
 */
export async function getJson(call: Omit<ApiCall, 'body' | 'idleTimeoutMs'>): Promise<unknown> {
  const { signal, secrets } = call;
  throwIfAborted(signal);
  let res: UpstreamResponse;
  try {
    const { origin, path } = splitUrl(call.url);
    const r = await upstreamAgent().request({
      origin,
      path,
      method: 'GET',
      headers: { accept: 'application/json', ...call.headers },
      signal: signal as AbortSignal,
    });
    res = { status: r.statusCode, headers: r.headers, body: r.body };
  } catch (err) {
    throw toUpstreamError(err, signal, secrets);
  }
  return readJson(await ensureOk(res, signal, call.errors, secrets), signal, secrets);
}

/**
 * A streamed call: POSTs `body` asking for an event stream and returns the response once it is
 * known to be one (UpstreamError for ≥ 400 or another body).
 */
export async function callStream(call: ApiCall): Promise<UpstreamResponse<ArrivingBody>> {
  const { signal, secrets, errors } = call;
  const res = await postStream(
    call.url,
    call.body,
    extended(call.headers, { accept: 'text/event-stream' }),
    signal,
    {
      secrets,
      ...(call.idleTimeoutMs ? { bodyTimeoutMs: call.idleTimeoutMs } : {}),
    },
  );
  return ensureEventStream(await ensureOk(res, signal, errors, secrets), signal, errors, secrets);
}

/**
 * Throws `upstreamErrorFrom(...)` for a status ≥ 400 (after reading the error body); returns the
 * response otherwise.
 */
export async function ensureOk<R extends UpstreamResponse<TextBody>>(
  res: R,
  signal: CallSignal,
  errors: ErrorShape,
  secrets?: (string | null | undefined)[],
): Promise<R> {
  if (res.status < 400) return res;
  let text = '';
  try {
    text = await res.body.text();
  } catch {
    if (signal.aborted) throw abortReason(signal);
    text = '';
  }
  throw upstreamErrorFrom(res.status, res.headers, text, errors, secrets);
}

/**
 * A 2xx answer to a stream request must be an event stream. An HTML page (a proxy's error page)
 * or a JSON body (servers that answer errors with 200) is refused here, before the stream starts,
 * so the router can still fall back; its JSON message is kept. Other or missing content types
 * pass (lenient servers that send SSE as text/plain).
 */
export async function ensureEventStream<R extends UpstreamResponse<TextBody>>(
  res: R,
  signal: CallSignal,
  errors: ErrorShape,
  secrets?: (string | null | undefined)[],
): Promise<R> {
  const type = (header(res.headers, 'content-type') ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (!/^(text\/html|text\/xml|application\/(json|xml|problem\+json))$/.test(type)) return res;
  let text: string;
  try {
    text = await res.body.text();
  } catch (err) {
    throw toUpstreamError(err, signal, secrets);
  }
  let body: unknown;
  try {
    body = JSON.parse(redact(text, secrets));
  } catch {}
  const message = body === undefined ? undefined : errors.message(body);
  throw new UpstreamError(
    502,
    `upstream answered a stream request with ${type} instead of an event stream${message ? `: ${message.slice(0, 300)}` : ''}`,
    { retryable: true, body },
  );
}

/** Reads a JSON body; a body cut off mid-way or invalid JSON → UpstreamError. */
export async function readJson<T = unknown>(
  res: UpstreamResponse<TextBody>,
  signal: CallSignal,
  secrets?: (string | null | undefined)[],
): Promise<T> {
  let text: string;
  try {
    text = await res.body.text();
  } catch (err) {
    throw toUpstreamError(err, signal, secrets);
  }
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new UpstreamError(502, `upstream sent invalid JSON: ${redact(text.slice(0, 200), secrets)}`, {
      retryable: true,
    });
  }
}

/**
 * The SSE events of a streamed response. Transport failures while reading (socket closed mid-way,
 * body timeout) → `UpstreamError(0)`; a caller abort → the abort reason. Returning early (break)
 * releases the body (`ArrivingBody.release`: the rest is drained, not torn down).
 */
export async function* sseEvents(
  res: UpstreamResponse<ArrivingBody>,
  signal: CallSignal,
  secrets?: (string | null | undefined)[],
): AsyncGenerator<SseEvent> {
  const body = res.body;
  try {
    yield* parseSse(body);
  } catch (err) {
    throw toUpstreamError(err, signal, secrets);
  } finally {
    body.release();
  }
}

/** As `sseEvents`, the events of each chunk of the body together (`parseSseChunks`). */
export async function* sseEventBatches(
  res: UpstreamResponse<ArrivingBody>,
  signal: CallSignal,
  secrets?: (string | null | undefined)[],
): AsyncGenerator<SseEvent[]> {
  const body = res.body;
  try {
    yield* parseSseChunks(body);
  } catch (err) {
    throw toUpstreamError(err, signal, secrets);
  } finally {
    body.release();
  }
}

// ---------------------------------------------------------------------------------------------
// Errors

/** True for what an aborted caller signal throws (AbortError / TimeoutError DOMExceptions). */
export function isAbortError(err: unknown): boolean {
  return (
    err instanceof Error &&
    (err.name === 'AbortError' || err.name === 'TimeoutError') &&
    !(err instanceof UpstreamError)
  );
}

/** What to throw when the caller's signal is aborted: its reason, or a DOMException AbortError. */
export function abortReason(signal: CallSignal): unknown {
  const r: unknown = signal.reason;
  if (r instanceof Error) return r;
  return new DOMException(typeof r === 'string' ? r : 'The operation was aborted', 'AbortError');
}

export function throwIfAborted(signal: CallSignal): void {
  if (signal.aborted) throw abortReason(signal);
}

const TRANSPORT_CODES: Record<string, string> = {
  UND_ERR_CONNECT_TIMEOUT: 'connect timeout',
  UND_ERR_HEADERS_TIMEOUT: 'timed out waiting for response headers',
  UND_ERR_BODY_TIMEOUT: 'timed out waiting for response body',
  UND_ERR_SOCKET: 'connection closed',
  UND_ERR_ABORTED: 'request aborted',
  UND_ERR_CLOSED: 'client closed',
  UND_ERR_DESTROYED: 'client destroyed',
  UND_ERR_RES_CONTENT_LENGTH_MISMATCH: 'response body cut off',
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'DNS lookup failed',
  ETIMEDOUT: 'connection timed out',
  EPIPE: 'connection closed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
};

/**
 * Maps a thrown transport error: caller abort → the abort reason (unchanged); an UpstreamError →
 * itself; anything else → `UpstreamError(0, 'upstream connection failed: …', retryable)`.
 */
export function toUpstreamError(err: unknown, signal: CallSignal, secrets?: (string | null | undefined)[]) {
  if (signal.aborted) return abortReason(signal);
  if (err instanceof UpstreamError) return err;
  const e = err as { code?: unknown; message?: unknown; cause?: { code?: unknown } } | null;
  const code = typeof e?.code === 'string' ? e.code : typeof e?.cause?.code === 'string' ? e.cause.code : '';
  const what = TRANSPORT_CODES[code] ?? (typeof e?.message === 'string' ? e.message : String(err));
  return new UpstreamError(
    0,
    redact(`upstream connection failed: ${what}${code ? ` (${code})` : ''}`, secrets),
    {
      retryable: true,
    },
  );
}

type HeaderBag = Record<string, string | string[] | undefined> | Headers;

function header(headers: HeaderBag, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const v = headers[name] ?? headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * Milliseconds to wait from `retry-after-ms` (preferred), or `retry-after` (delta seconds or an
 * HTTP date, clamped at 0). Undefined when absent or unparseable.
 */
export function parseRetryAfter(headers: HeaderBag, now: number = Date.now()): number | undefined {
  const ms = header(headers, 'retry-after-ms');
  if (ms !== undefined && ms.trim() !== '') {
    const n = Number(ms);
    if (Number.isFinite(n) && n >= 0) return Math.round(n);
  }
  const ra = header(headers, 'retry-after');
  if (ra === undefined || ra.trim() === '') return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(ra)) return Math.round(Number(ra) * 1000);
  const at = Date.parse(ra);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/**
 * An UpstreamError for an HTTP error response, carrying the upstream's message (key scrubbed),
 * its parsed body and `retryAfterMs`.
 */
export function upstreamErrorFrom(
  status: number,
  headers: HeaderBag,
  bodyText: string,
  errors: ErrorShape,
  secrets?: (string | null | undefined)[],
): UpstreamError {
  const text = redact(bodyText, secrets);
  let body: unknown = text || undefined;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {}
  const raw = text.trim();
  const msg =
    (body !== undefined && typeof body === 'object' ? errors.message(body) : undefined) ??
    (raw ? raw.slice(0, 500) : `upstream responded with HTTP ${status}`);
  const retryAfterMs = parseRetryAfter(headers) ?? errors.retryAfterMs?.(body);
  const retryable = errors.retryable?.(status, body);
  return new UpstreamError(status, msg, {
    body,
    ...(retryable !== undefined ? { retryable } : {}),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  });
}

/** Joins a base URL and a path without doubling or losing the slash. */
export function joinUrl(base: string, path: string): string {
  // Every upstream call joins one: the usual shapes (no trailing slash, one leading) without a regex.
  if (!base.endsWith('/') && path.startsWith('/') && !path.startsWith('//')) return base + path;
  return `${base.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
}

/** Seconds since the epoch (the `created` field). */
export const nowSeconds = (): number => Math.floor(Date.now() / 1000);
