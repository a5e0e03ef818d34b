import type { ServerResponse } from 'node:http';
import {
  type Attributes,
  type Context,
  context,
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

/** The active trace context, to parent later work on (undefined while tracing is off). */
export const currentTrace = (): TraceParent | undefined => (on ? context.active() : undefined);

/**
 * One span of Gatehouse's: `run` makes it the active span (what upstream requests and log lines
 * carry), and it ends once — served, failed or as it is.
 */
export class TracedSpan {
  private ended = false;
  constructor(
    readonly span: Span,
    private readonly ctx: Context,
  ) {}

  /** Whether attributes are kept (sampled in): build them only then. */
  get recording(): boolean {
    return !this.ended && this.span.isRecording();
  }

  run<T>(fn: () => T): T {
    return context.with(this.ctx, fn);
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
 * Starts a span under `parent` (default: the active context); `attributes` is called only when the
 * span records. Null while tracing is off.
 */
export function startSpan(
  name: string,
  kind: SpanKind,
  attributes: () => Attributes,
  parent?: TraceParent,
): TracedSpan | null {
  if (!on) return null;
  const parentCtx = parent ?? context.active();
  const span = getTracer().startSpan(name, { kind }, parentCtx);
  if (span.isRecording()) span.setAttributes(attributes());
  return new TracedSpan(span, trace.setSpan(parentCtx, span));
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
    const out = await s.run(() => fn(s));
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

/**
 * Runs an HTTP handler in a SERVER span: the caller's `traceparent` (W3C) is its parent unless
 * `parent` is given; it ends when the response is over (a stream's last frame), with its status.
 */
export function serveTraced<T>(
  req: TracedRequest,
  res: ServerResponse,
  route: string,
  handle: () => Promise<T>,
  parent?: TraceParent,
): Promise<T> {
  if (!on) return handle();
  const parentCtx = parent ?? propagation.extract(ROOT_CONTEXT, req.headers);
  const s = startSpan(
    `${req.method} ${route}`,
    SpanKind.SERVER,
    () => {
      const q = req.url.indexOf('?');
      const agent = req.headers['user-agent'];
      return {
        'http.request.method': req.method,
        'http.route': route,
        // The path only: a query string may carry a key (?api_key=…).
        'url.path': q < 0 ? req.url : req.url.slice(0, q),
        'gatehouse.request_id': req.id,
        ...(typeof agent === 'string' ? { 'user_agent.original': agent } : {}),
      };
    },
    parentCtx,
  ) as TracedSpan;
  const sc = s.span.spanContext();
  (res as TracedResponse)[RESPONSE_TRACE] = { trace_id: sc.traceId, span_id: sc.spanId };
  res.once('close', () => {
    const status = res.statusCode;
    // A response cut before it was complete (the client left) keeps its status; 5xx is an error.
    if (status >= 500) s.fail(new Error(`HTTP ${status}`), { 'http.response.status_code': status });
    else s.end({ 'http.response.status_code': status });
  });
  return s.run(handle).catch((err: unknown) => {
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
 * The trace and span ids of log lines written inside a span (none outside one): pino's mixin. A new
 * object every time: pino merges the line's own fields into it.
 */
export function traceFields(): Record<string, string> {
  if (!on) return {};
  const span = trace.getSpan(context.active());
  if (!span) return {};
  const sc = span.spanContext();
  return isSpanContextValid(sc) ? { trace_id: sc.traceId, span_id: sc.spanId } : {};
}

const RESPONSE_TRACE = Symbol('trace');
type TracedResponse = ServerResponse & { [RESPONSE_TRACE]?: { trace_id: string; span_id: string } };

/**
 * The ids of the SERVER span a response was served in, for the access line (written once the
 * response is over, outside the span). Undefined when the request was not traced.
 */
export const responseTrace = (res: ServerResponse) => (res as TracedResponse)[RESPONSE_TRACE];

/** Adds the active span's `traceparent` to an upstream request's headers (a new object of the caller's). */
export function withTraceparent<H extends Record<string, string>>(headers: H): H {
  if (on) propagation.inject(context.active(), headers);
  return headers;
}

/** Sets attributes on the active span (the request's or the batch item's), when it records. */
export function annotate(attributes: () => Attributes): void {
  if (!on) return;
  const span = trace.getSpan(context.active());
  if (span?.isRecording()) span.setAttributes(attributes());
}

export { SpanKind };
