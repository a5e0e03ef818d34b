import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-node';

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
    exporter.export(m.export.map(span), (result) =>
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

export class ExportThreadSpanExporter implements SpanExporter {
  private readonly worker: Worker;
  private readonly scopes = new Map<Scope, number>();
  private readonly pending = new Map<number, (m: { code?: number; error?: string }) => void>();
  private nextId = 0;
  private stopped: Promise<void> | null = null;
  /** The thread is gone (it failed): what is sent after fails at once instead of waiting. */
  private exited = false;

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

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    if (this.stopped) {
      resultCallback({ code: 1, error: new Error('exporter is shut down') });
      return;
    }
    const newScopes: [number, Scope][] = [];
    const records = spans.map((s) => {
      let i = this.scopes.get(s.instrumentationScope);
      if (i === undefined) {
        i = this.scopes.size;
        this.scopes.set(s.instrumentationScope, i);
        const { name, version, schemaUrl } = s.instrumentationScope;
        newScopes.push([i, { name, version, schemaUrl }]);
      }
      return toRecord(s, i);
    });
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
