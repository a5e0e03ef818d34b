import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-node';

/**
 * A span exporter that does the OTLP work on a thread of its own: the batch span processor stays
 * on the event loop (its queue, batches and OTEL_BSP_* settings), but each batch crosses to the
 * thread as plain records (a structured clone, native code) where the OpenTelemetry SDK's own OTLP
 * exporter encodes it (protobuf or JSON) and sends it, with its OTEL_EXPORTER_OTLP_* settings
 * (endpoint, headers, timeout, compression) and retries. Serializing and sending on the event
 * loop cost every traced call as much as making its spans.
 */

/**
 * One span as it crosses to the thread: what the OTLP encoders read of a ReadableSpan. A field at
 * its usual value (no parent, no events or links, nothing dropped, status unset, sampled flags, no
 * trace state) is left out and the thread puts it back: the clone's cost is per value, and most
 * spans carry none of these.
 */
interface SpanRecord {
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  /** Absent: 1 (sampled, what a batch span processor exports). */
  traceFlags?: number;
  traceState?: string;
  parentSpanId?: string;
  parentIsRemote?: boolean;
  startTime: ReadableSpan['startTime'];
  endTime: ReadableSpan['endTime'];
  attributes: ReadableSpan['attributes'];
  droppedAttributesCount?: number;
  events?: ReadableSpan['events'];
  droppedEventsCount?: number;
  links?: {
    traceId: string;
    spanId: string;
    traceFlags: number;
    traceState?: string;
    isRemote?: boolean;
    attributes?: ReadableSpan['attributes'];
    droppedAttributesCount?: number;
  }[];
  droppedLinksCount?: number;
  /** Absent: UNSET, no message. */
  status?: ReadableSpan['status'];
  /** Index of its instrumentation scope (each sent once, with the first batch that has it). */
  scope: number;
}

type Scope = ReadableSpan['instrumentationScope'];

const toRecord = (s: ReadableSpan, scope: number): SpanRecord => {
  const ctx = s.spanContext();
  const r: SpanRecord = {
    name: s.name,
    kind: s.kind,
    traceId: ctx.traceId,
    spanId: ctx.spanId,
    startTime: s.startTime,
    endTime: s.endTime,
    attributes: s.attributes,
    scope,
  };
  if (ctx.traceFlags !== 1) r.traceFlags = ctx.traceFlags;
  if (ctx.traceState) r.traceState = ctx.traceState.serialize();
  const parent = s.parentSpanContext;
  if (parent) {
    r.parentSpanId = parent.spanId;
    if (parent.isRemote) r.parentIsRemote = true;
  }
  if (s.droppedAttributesCount) r.droppedAttributesCount = s.droppedAttributesCount;
  if (s.events.length) r.events = s.events;
  if (s.droppedEventsCount) r.droppedEventsCount = s.droppedEventsCount;
  if (s.links.length)
    r.links = s.links.map((l) => ({
      traceId: l.context.traceId,
      spanId: l.context.spanId,
      traceFlags: l.context.traceFlags,
      traceState: l.context.traceState?.serialize(),
      isRemote: l.context.isRemote,
      attributes: l.attributes,
      droppedAttributesCount: l.droppedAttributesCount,
    }));
  if (s.droppedLinksCount) r.droppedLinksCount = s.droppedLinksCount;
  if (s.status.code !== 0 || s.status.message !== undefined) r.status = s.status;
  return r;
};

/**
 * The thread's code (CommonJS, evaluated; packages required by their resolved paths): it rebuilds
 * ReadableSpan-shaped objects around the records (one resource and one object per scope, as the
 * encoders group spans by identity) and hands them to the SDK's exporter.
 */
const THREAD = `
const { workerData, parentPort } = require('node:worker_threads');
const api = require(workerData.api);
const { OTLPTraceExporter } = require(workerData.exporter);
const say = (level) => (msg, ...args) => parentPort.postMessage({ log: level, msg, detail: args.map(String).join(' ') });
api.diag.setLogger(
  { error: say('error'), warn: say('warn'), info() {}, debug() {}, verbose() {} },
  { logLevel: api.DiagLogLevel.WARN, suppressOverrideMessage: true },
);
const exporter = new OTLPTraceExporter();
const resource = { attributes: workerData.resource, schemaUrl: workerData.schemaUrl };
const scopes = [];
const state = (s) => (s ? { serialize: () => s } : undefined);
const UNSET = { code: 0 };
// A record leaves out the fields at their usual values (toRecord): put back here.
const span = (r) => {
  const flags = r.traceFlags ?? 1;
  const ctx = { traceId: r.traceId, spanId: r.spanId, traceFlags: flags, traceState: state(r.traceState) };
  return {
    name: r.name,
    kind: r.kind,
    spanContext: () => ctx,
    parentSpanContext: r.parentSpanId
      ? { traceId: r.traceId, spanId: r.parentSpanId, traceFlags: flags, isRemote: r.parentIsRemote ?? false }
      : undefined,
    startTime: r.startTime,
    endTime: r.endTime,
    attributes: r.attributes,
    droppedAttributesCount: r.droppedAttributesCount ?? 0,
    events: r.events ?? [],
    droppedEventsCount: r.droppedEventsCount ?? 0,
    links: (r.links ?? []).map((l) => ({
      context: { traceId: l.traceId, spanId: l.spanId, traceFlags: l.traceFlags, isRemote: l.isRemote, traceState: state(l.traceState) },
      attributes: l.attributes,
      droppedAttributesCount: l.droppedAttributesCount,
    })),
    droppedLinksCount: r.droppedLinksCount ?? 0,
    status: r.status ?? UNSET,
    resource,
    instrumentationScope: scopes[r.scope],
    duration: [0, 0],
    ended: true,
  };
};
parentPort.on('message', (m) => {
  if (m.export) {
    for (const [i, scope] of m.scopes) scopes[i] = scope;
    exporter.export(m.export.map((r) => span(typeof r === 'string' ? JSON.parse(r) : r)), (result) =>
      parentPort.postMessage({ id: m.id, code: result.code, error: result.error ? String(result.error.message ?? result.error) : undefined }),
    );
  } else if (m.flush) {
    exporter.forceFlush().then(() => parentPort.postMessage({ id: m.id }), (e) => parentPort.postMessage({ id: m.id, error: String(e) }));
  } else if (m.shutdown) {
    exporter.shutdown().finally(() => {
      parentPort.postMessage({ id: m.id });
      parentPort.close();
    });
  }
});
`;

export interface ExportThreadOptions {
  protocol: 'http/protobuf' | 'http/json';
  /** The resource of every span (the tracer provider's: one per process). */
  resource: { attributes: ReadableSpan['resource']['attributes']; schemaUrl?: string };
  /** Where the SDK's export warnings go (an unreachable collector, a refused batch). */
  warn: (message: string, detail: string) => void;
}

/** A span's record, made when it ended (see `recorder`). */
const RECORD = Symbol('export record');
type Recorded = ReadableSpan & { [RECORD]?: string | SpanRecord };

export class ExportThreadSpanExporter implements SpanExporter {
  private readonly worker: Worker;
  private readonly scopes = new Map<Scope, number>();
  /** The scopes by index; those from `sentScopes` on have not crossed to the thread yet. */
  private readonly scopeList: Scope[] = [];
  private sentScopes = 0;
  private readonly pending = new Map<number, (m: { code?: number; error?: string }) => void>();
  private nextId = 0;
  private stopped: Promise<void> | null = null;
  /** The thread is gone (it failed): what is sent after fails at once instead of waiting. */
  private exited = false;

  /**
   * A span processor to put before the batch processor (same exporter): it makes each span's
   * record as the span ends — as JSON text, while the span's fields are still in the CPU's caches
   * — so the batch's export clones one string a span. Cloning the spans' objects at export time
   * walked ~30 values a span that had sat in the heap since they ended (~4× what the same clone
   * costs on hot objects). A record whose text would not say the same thing (a non-finite number,
   * an empty slot of an array: JSON writes `null`) stays an object, cloned as before.
   */
  readonly recorder: SpanProcessor = {
    onStart: () => {},
    onEnd: (span) => {
      // Not sampled: the batch processor does not export it.
      if ((span.spanContext().traceFlags & 1) === 0) return;
      const r = toRecord(span, this.scopeIndex(span.instrumentationScope));
      const text = JSON.stringify(r);
      (span as Recorded)[RECORD] = text.includes('null') ? r : text;
    },
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };

  constructor(opts: ExportThreadOptions) {
    const require = createRequire(import.meta.url);
    this.worker = new Worker(THREAD, {
      eval: true,
      workerData: {
        api: require.resolve('@opentelemetry/api'),
        exporter: require.resolve(
          opts.protocol === 'http/json'
            ? '@opentelemetry/exporter-trace-otlp-http'
            : '@opentelemetry/exporter-trace-otlp-proto',
        ),
        resource: opts.resource.attributes,
        schemaUrl: opts.resource.schemaUrl,
      },
    });
    // Never what keeps a process alive: shutdown() is what sends the last spans.
    this.worker.unref();
    this.worker.on('message', (m: { id?: number; log?: string; msg?: string; detail?: string }) => {
      if (m.log) return opts.warn(m.msg ?? '', m.detail ?? '');
      const done = this.pending.get(m.id as number);
      this.pending.delete(m.id as number);
      done?.(m as { code?: number; error?: string });
    });
    this.worker.on('error', (err) => {
      opts.warn('export thread failed', err.message);
      this.failAll(err.message);
    });
    this.worker.on('exit', () => {
      this.exited = true;
      this.failAll('export thread stopped');
    });
  }

  private failAll(message: string): void {
    for (const done of this.pending.values()) done({ code: 1, error: message });
    this.pending.clear();
  }

  private send(message: Record<string, unknown>): Promise<{ code?: number; error?: string }> {
    const id = this.nextId++;
    if (this.exited) return Promise.resolve({ code: 1, error: 'export thread stopped' });
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.worker.postMessage({ ...message, id });
    });
  }

  private scopeIndex(scope: Scope): number {
    let i = this.scopes.get(scope);
    if (i === undefined) {
      i = this.scopeList.length;
      this.scopes.set(scope, i);
      const { name, version, schemaUrl } = scope;
      this.scopeList.push({ name, version, schemaUrl });
    }
    return i;
  }

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    if (this.stopped) {
      resultCallback({ code: 1, error: new Error('exporter is shut down') });
      return;
    }
    // Spans that ended without the recorder (a processor of the exporter's own): recorded now.
    const records = spans.map(
      (s) => (s as Recorded)[RECORD] ?? toRecord(s, this.scopeIndex(s.instrumentationScope)),
    );
    const newScopes: [number, Scope][] = [];
    for (; this.sentScopes < this.scopeList.length; this.sentScopes++)
      newScopes.push([this.sentScopes, this.scopeList[this.sentScopes] as Scope]);
    void this.send({ export: records, scopes: newScopes }).then((m) =>
      resultCallback(m.error ? { code: m.code ?? 1, error: new Error(m.error) } : { code: m.code ?? 0 }),
    );
  }

  async forceFlush(): Promise<void> {
    if (!this.stopped) await this.send({ flush: true });
  }

  shutdown(): Promise<void> {
    this.stopped ??= (async () => {
      this.worker.ref();
      await this.send({ shutdown: true });
      await this.worker.terminate();
    })();
    return this.stopped;
  }
}
