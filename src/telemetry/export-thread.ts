import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-node';
import { ATTRIBUTES_AT, PackedSpan, SpanPacker } from './span-packing.js';

/**
 * A span exporter that does the OTLP work on a thread of its own: the batch span processor stays
 * on the event loop (its queue, batches and OTEL_BSP_* settings), but each batch crosses to the
 * thread as packed spans (span-packing.ts; a structured clone, native code) where the OpenTelemetry SDK's own OTLP
 * exporter encodes it (protobuf or JSON) and sends it, with its OTEL_EXPORTER_OTLP_* settings
 * (endpoint, headers, timeout, compression) and retries. Serializing and sending on the event
 * loop cost every traced call as much as making its spans.
 */

/**
 * The thread's code (CommonJS, evaluated; packages required by their resolved paths): it rebuilds
 * ReadableSpan-shaped objects around the packed spans (one resource and one object per scope, as the
 * encoders group spans by identity) and hands them to the SDK's exporter.
 */
const THREAD = `
const ATTRIBUTES_AT = ${ATTRIBUTES_AT};
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
const keys = [];
const state = (s) => (s ? { serialize: () => s } : undefined);
// A packed span (span-packing.ts: its layout) as the SDK's encoders read a ReadableSpan.
const span = (f) => {
  const attributes = {};
  for (let i = ATTRIBUTES_AT; i < f.length; i += 2) attributes[typeof f[i] === 'number' ? keys[f[i]] : f[i]] = f[i + 1];
  const ctx = { traceId: f[2], spanId: f[3], traceFlags: f[4], traceState: state(f[5]) };
  return {
    name: f[0],
    kind: f[1],
    spanContext: () => ctx,
    parentSpanContext: f[6] ? { traceId: f[2], spanId: f[6], traceFlags: f[4], isRemote: f[7] } : undefined,
    startTime: [f[8], f[9]],
    endTime: [f[10], f[11]],
    attributes,
    droppedAttributesCount: f[14],
    events: f[15] || [],
    droppedEventsCount: f[16],
    links: (f[17] || []).map((l) => ({
      context: { traceId: l.traceId, spanId: l.spanId, traceFlags: l.traceFlags, isRemote: l.isRemote, traceState: state(l.traceState) },
      attributes: l.attributes,
      droppedAttributesCount: l.droppedAttributesCount,
    })),
    droppedLinksCount: f[18],
    status: f[13] === undefined ? { code: f[12] } : { code: f[12], message: f[13] },
    resource,
    instrumentationScope: scopes[f[19]],
    duration: [0, 0],
    ended: true,
  };
};
parentPort.on('message', (m) => {
  if (m.export) {
    for (const [i, scope] of m.scopes) scopes[i] = scope;
    for (const key of m.keys) keys.push(key);
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
  /** Packs spans for the thread (PackingSpanProcessor packs them as they end, with this). */
  readonly packer = new SpanPacker();
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
    // Packed as they ended (PackingSpanProcessor); a span handed over by another processor here.
    const records = spans.map((s) => (s instanceof PackedSpan ? s : this.packer.pack(s)).fields);
    void this.send({ export: records, ...this.packer.takeNew() }).then((m) =>
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
