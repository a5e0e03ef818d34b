import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider, type ReadableSpan } from '@opentelemetry/sdk-trace-node';
import { afterEach, describe, expect, it } from 'vitest';
import { type OtlpReceiver, startOtlpReceiver } from '../../test/support/otlp-receiver.js';
import { ExportThreadSpanExporter } from './export-thread.js';

/** The exporter's thread reads the standard OTEL_EXPORTER_OTLP_* variables when it starts. */
let rx: OtlpReceiver | null = null;
afterEach(async () => {
  delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  delete process.env.OTEL_EXPORTER_OTLP_TIMEOUT;
  await rx?.close();
  rx = null;
});

function provider(protocol: 'http/protobuf' | 'http/json', warnings: string[] = []) {
  const resource = resourceFromAttributes({
    'service.name': 'thread-test',
    'deployment.environment.name': 'x',
  });
  const exporter = new ExportThreadSpanExporter({
    protocol,
    resource: { attributes: resource.attributes },
    warn: (msg, detail) => warnings.push(`${msg} ${detail}`),
  });
  // A long schedule: only full batches (100) and the shutdown send anything.
  const processor = new BatchSpanProcessor(exporter, {
    maxExportBatchSize: 100,
    scheduledDelayMillis: 60_000,
  });
  return new NodeTracerProvider({ resource, spanProcessors: [processor] });
}

describe('ExportThreadSpanExporter (OTLP encoding and sending on a thread)', () => {
  for (const protocol of ['http/protobuf', 'http/json'] as const)
    it(`delivers every span, with its parent, attributes, events and status (${protocol}); shutdown sends the rest`, async () => {
      rx = await startOtlpReceiver();
      process.env.OTEL_EXPORTER_OTLP_ENDPOINT = rx.url;
      const p = provider(protocol);
      const tracer = p.getTracer('gatehouse');
      const ids: string[] = [];
      const linked = { traceId: 'ab'.repeat(16), spanId: 'cd'.repeat(8), traceFlags: 1 };
      for (let i = 0; i < 250; i++) {
        const parent = tracer.startSpan('POST /x', { kind: SpanKind.SERVER }, ROOT_CONTEXT);
        const child = tracer.startSpan(
          'chat m',
          {
            kind: SpanKind.CLIENT,
            attributes: { 'gen_ai.request.model': 'm', 'gatehouse.fallback_index': i },
            startTime: [1_764_000_000 + i, 123_456_789],
            // A link (another trace's span): only on the seventh.
            ...(i === 7 ? { links: [{ context: linked, attributes: { why: 'retry of' } }] } : {}),
          },
          trace.setSpan(ROOT_CONTEXT, parent),
        );
        child.setAttributes({ 'gen_ai.response.finish_reasons': ['stop'], 'gatehouse.byok': i % 2 === 0 });
        if (i === 7) {
          child.recordException({ name: 'Error', message: 'upstream 502' });
          child.setStatus({ code: SpanStatusCode.ERROR, message: 'upstream 502' });
        }
        child.end([1_764_000_000 + i, 987_654_321]);
        parent.end();
        ids.push(child.spanContext().spanId);
      }
      await p.shutdown();
      const received = rx.spans;
      // 500 spans: four full batches on the way, the last 100 by the shutdown.
      expect(received).toHaveLength(500);
      const byId = new Map(received.map((s) => [s.spanId, s]));
      const seventh = byId.get(ids[7] as string);
      expect(seventh).toMatchObject({
        name: 'chat m',
        kind: 3,
        status: { code: 2, message: 'upstream 502' },
        attributes: {
          'gen_ai.request.model': 'm',
          'gatehouse.fallback_index': 7,
          'gen_ai.response.finish_reasons': ['stop'],
          'gatehouse.byok': false,
        },
        resource: { 'service.name': 'thread-test', 'deployment.environment.name': 'x' },
        startTimeUnixNano: '1764000007123456789',
        endTimeUnixNano: '1764000007987654321',
        links: [{ traceId: linked.traceId, spanId: linked.spanId, attributes: { why: 'retry of' } }],
      });
      expect(byId.get(ids[8] as string)?.links).toEqual([]);
      expect(seventh?.events.map((e) => e.name)).toEqual(['exception']);
      const parent = byId.get(seventh?.parentSpanId as string);
      expect(parent).toMatchObject({ name: 'POST /x', kind: 2, parentSpanId: '', traceId: seventh?.traceId });
      expect(new Set(received.map((s) => s.spanId)).size).toBe(500);
    });

  it('answers a batch the collector did not take with a failure, and still shuts down', async () => {
    rx = await startOtlpReceiver();
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = rx.url;
    // The SDK retries a refused export until its timeout: a short one.
    process.env.OTEL_EXPORTER_OTLP_TIMEOUT = '1000';
    await rx.close();
    rx = null;
    const exporter = new ExportThreadSpanExporter({
      protocol: 'http/protobuf',
      resource: { attributes: { 'service.name': 'thread-test' } },
      warn: () => {},
    });
    // Without a processor: the span as a processor would hand it over.
    const p = new NodeTracerProvider();
    const span = p.getTracer('gatehouse').startSpan('lost');
    span.end();
    const result = await new Promise<{ code: number }>((resolve) =>
      exporter.export([span as unknown as ReadableSpan], resolve),
    );
    expect(result.code).toBe(ExportResultCode.FAILED);
    await exporter.shutdown();
    const after = await new Promise<{ code: number }>((resolve) =>
      exporter.export([span as unknown as ReadableSpan], resolve),
    );
    expect(after.code).toBe(ExportResultCode.FAILED);
    await p.shutdown();
  });
});
