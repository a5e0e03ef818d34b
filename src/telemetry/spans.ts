import type { ServerResponse } from 'node:http';
import {
  type Attributes,
  type Context,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';

/**
 * The one door of Gatehouse to OpenTelemetry's API: spans for requests, attempts, batch items and
 * intern runs, the trace context of log lines and of upstream requests. Every function returns at
 * once while tracing is off (the SDK was not started: sdk.ts), before building any attribute.
 *
 * The trace context travels explicitly — on the request, the call (`InferenceCall.trace`), the
 * attempt's signal — not through an async context manager: on Node 20 AsyncLocalStorage hooks
 * every promise of the process, a cost every request would pay (sdk.ts registers none).
 */

let on = false;
let tracer: Tracer | null = null;

/** Called by sdk.ts once the SDK is registered (and when it stops). */
export function setTracing(enabled: boolean): void {
  on = enabled;
  tracer = null;
}

/** Whether spans are being made (the SDK runs). */
export const tracingOn = (): boolean => on;

const getTracer = (): Tracer => {
  tracer ??= trace.getTracer('gatehouse');
  return tracer;
};

/** A trace context to parent spans on later, opaque to the callers (an intern run's, for its callbacks). */
export type TraceParent = Context;

/** One span of Gatehouse's: `context` parents spans under it; it ends once — served, failed or as it is. */
export class TracedSpan {
  private ended = false;
  private ctx: Context | undefined;
  constructor(
    readonly span: Span,
    private readonly parent: Context,
  ) {}

  /**
   * The span's trace context, made on first use (an attempt's span is nobody's parent: its
   * upstream's traceparent is written from the span itself, and no context is made for it).
   */
  get context(): Context {
    this.ctx ??= trace.setSpan(this.parent, this.span);
    return this.ctx;
  }

  /** Whether attributes are kept (sampled in): build them only then. */
  get recording(): boolean {
    return !this.ended && this.span.isRecording();
  }

  /**
   * The span is the parent of the upstream request made with `signal` (its traceparent header):
   * the attempt's own signal reaches the HTTP layer through every adapter.
   */
  bindSignal(signal: object): void {
    (signal as Traced)[SIGNAL_TRACE] = this.span;
  }

  set(attributes: Attributes): void {
    if (this.recording) this.span.setAttributes(attributes);
  }

  /** Status ERROR with an exception event (its message only: never a body or a secret). */
  fail(err: unknown, attributes?: Attributes): void {
    if (this.ended) return;
    if (this.span.isRecording()) {
      if (attributes) this.span.setAttributes(attributes);
      const e = err instanceof Error ? err : new Error(String(err));
      this.span.recordException({ name: e.name, message: e.message });
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
    }
    this.end();
  }

  end(attributes?: Attributes): void {
    if (this.ended) return;
    if (attributes && this.span.isRecording()) this.span.setAttributes(attributes);
    this.ended = true;
    this.span.end();
  }
}

/**
 * The span of an attempt's upstream request, on the attempt's signal (a property, not a WeakMap:
 * an entry per attempt is work for every garbage collection while it lives).
 */
const SIGNAL_TRACE = Symbol('traced span');
type Traced = { [SIGNAL_TRACE]?: Span };

/**
 * Starts a span under `parent` (none: a new trace); `attributes` is called only when the span
 * records. Null while tracing is off.
 */
export function startSpan(
  name: string,
  kind: SpanKind,
  attributes: () => Attributes,
  parent?: TraceParent,
): TracedSpan | null {
  if (!on) return null;
  const parentCtx = parent ?? ROOT_CONTEXT;
  const span = getTracer().startSpan(name, { kind }, parentCtx);
  if (span.isRecording()) span.setAttributes(attributes());
  return new TracedSpan(span, parentCtx);
}

/** Runs `fn` in a span of its own that ends when `fn` settles (an error ends it with status ERROR). */
export async function inSpan<T>(
  name: string,
  kind: SpanKind,
  attributes: () => Attributes,
  fn: (span: TracedSpan | null) => Promise<T>,
  parent?: TraceParent,
): Promise<T> {
  const s = startSpan(name, kind, attributes, parent);
  if (!s) return fn(null);
  try {
    const out = await fn(s);
    s.end();
    return out;
  } catch (err) {
    s.fail(err);
    throw err;
  }
}

/** What a server span reads of a request. */
export interface TracedRequest {
  method: string;
  url: string;
  id: string;
  headers: Record<string, string | string[] | undefined>;
}

/** What a server span needs of Fastify's request and reply (its logger gets the span's ids). */
interface TracedExchange {
  req: TracedRequest & { log: LogLike; [REQUEST_TRACE]?: Context };
  reply: { raw: ServerResponse; log: LogLike };
}
interface LogLike {
  child(bindings: Record<string, unknown>): LogLike;
  /** pino's: adds bindings to this logger in place (Fastify's request logger is the request's own). */
  setBindings?(bindings: Record<string, unknown>): void;
}
const REQUEST_TRACE = Symbol('trace');

/** The trace context of the request's SERVER span (undefined: not traced). */
export const requestTrace = (req: object): TraceParent | undefined =>
  (req as { [REQUEST_TRACE]?: Context })[REQUEST_TRACE];

/**
 * Runs an HTTP handler in a SERVER span: the caller's `traceparent` (W3C) is its parent unless
 * `parent` is given; it ends when the response is over (a stream's last frame), with its status.
 * `requestTrace(req)` is its context for the spans under it, and the request's log lines (the
 * access line included) carry its trace_id and span_id.
 */
export function serveTraced<T>(
  req: TracedExchange['req'],
  reply: TracedExchange['reply'],
  route: string,
  handle: () => Promise<T>,
  parent?: TraceParent,
): Promise<T> {
  if (!on) return handle();
  const res = reply.raw;
  // Without a caller's traceparent the (W3C) propagator finds nothing to extract: not asked.
  const parentCtx =
    parent ?? (req.headers.traceparent ? propagation.extract(ROOT_CONTEXT, req.headers) : ROOT_CONTEXT);
  const s = startSpan(
    `${req.method} ${route}`,
    SpanKind.SERVER,
    () => {
      const q = req.url.indexOf('?');
      const agent = req.headers['user-agent'];
      const attributes: Attributes = {
        'http.request.method': req.method,
        'http.route': route,
        // The path only: a query string may carry a key (?api_key=…).
        'url.path': q < 0 ? req.url : req.url.slice(0, q),
        'gatehouse.request_id': req.id,
      };
      if (typeof agent === 'string') attributes['user_agent.original'] = agent;
      return attributes;
    },
    parentCtx,
  ) as TracedSpan;
  req[REQUEST_TRACE] = s.context;
  const sc = s.span.spanContext();
  const ids = { trace_id: sc.traceId, span_id: sc.spanId };
  // In place when the request's logger is its own (Fastify makes one per request, shared by the
  // reply): a pino child per request costs as much as serializing its spans.
  if (req.log.setBindings && req.log === reply.log) req.log.setBindings(ids);
  else {
    const log = req.log.child(ids);
    req.log = log;
    reply.log = log;
  }
  // `on`, not `once` (its wrapper is one more allocation a request): 'close' is emitted once.
  res.on('close', () => {
    const status = res.statusCode;
    // A response cut before it was complete (the client left) keeps its status; 5xx is an error.
    if (status >= 500) s.fail(new Error(`HTTP ${status}`), { 'http.response.status_code': status });
    else s.end({ 'http.response.status_code': status });
  });
  return handle().catch((err: unknown) => {
    // A refusal (4xx) is the caller's error, not the server's: no exception event for it.
    const status =
      (err as { status?: number; statusCode?: number }).status ?? (err as { statusCode?: number }).statusCode;
    if (!(typeof status === 'number' && status < 500) && s.recording) {
      const e = err instanceof Error ? err : new Error(String(err));
      s.span.recordException({ name: e.name, message: e.message });
    }
    throw err;
  });
}

/**
 * Adds the `traceparent` (and `tracestate`) of the attempt whose signal `signal` is to an upstream
 * request's headers (a new object of the caller's), when that attempt is traced. Written from the
 * span's ids as the W3C propagator would (the only one sdk.ts registers), without a context object
 * and the propagation API's lookups per request.
 */
export function withTraceparent<H extends Record<string, string>>(headers: H, signal: object): H {
  if (!on) return headers;
  const span = (signal as Traced)[SIGNAL_TRACE];
  if (!span) return headers;
  const sc = span.spanContext();
  if (!isSpanContextValid(sc)) return headers;
  (headers as Record<string, string>).traceparent =
    `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
  const state = sc.traceState?.serialize();
  if (state) (headers as Record<string, string>).tracestate = state;
  return headers;
}

/** Sets attributes on the span of `parent` (a request's, a batch item's), when it records. */
export function annotate(parent: TraceParent | undefined, attributes: () => Attributes): void {
  if (!on || !parent) return;
  const span = trace.getSpan(parent);
  if (span?.isRecording()) span.setAttributes(attributes());
}

export { SpanKind };
