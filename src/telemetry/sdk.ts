import type { Log } from '../lib/log.js';
import { setTracing } from './spans.js';

/**
 * The OpenTelemetry SDK, started only when the standard OTEL_* variables ask for traces. Off, its
 * packages are never loaded: the API's no-op tracer stands in and the spans module returns before
 * building anything. The SDK reads its own variables (endpoint, headers, timeout, compression,
 * sampler, batch processor, resource); only the choice of exporter is made here, as the SDK
 * leaves that to its Node bundle (not a dependency), and it runs on a thread of its own.
 */

type Env = Record<string, string | undefined>;

export type OtlpProtocol = 'http/protobuf' | 'http/json';

const lower = (v: string | undefined) => v?.trim().toLowerCase() || undefined;

/**
 * Whether traces are exported, and how: off unless OTEL_TRACES_EXPORTER=otlp or an OTLP endpoint is
 * set; OTEL_SDK_DISABLED=true (or OTEL_TRACES_EXPORTER=none) wins. Throws on what Gatehouse cannot
 * export with (a gRPC or console exporter): traces an operator asked for are not dropped silently.
 */
export function tracingSettings(env: Env): { protocol: OtlpProtocol } | null {
  if (lower(env.OTEL_SDK_DISABLED) === 'true') return null;
  const exporters = (lower(env.OTEL_TRACES_EXPORTER) ?? '').split(',').map((s) => s.trim());
  if (exporters.includes('none')) return null;
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  const unsupported = exporters.filter((e) => e !== '' && e !== 'otlp');
  if (unsupported.length)
    throw new Error(`OTEL_TRACES_EXPORTER: only otlp is supported (got ${unsupported.join(', ')})`);
  if (!exporters.includes('otlp') && !endpoint) return null;
  const protocol =
    lower(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) ??
    lower(env.OTEL_EXPORTER_OTLP_PROTOCOL) ??
    'http/protobuf';
  if (protocol !== 'http/protobuf' && protocol !== 'http/json')
    throw new Error(
      `OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL: ${protocol} is not supported; use http/protobuf or http/json`,
    );
  return { protocol };
}

export interface TracingHandle {
  /** Exports what is buffered, then stops the SDK (the last gateway of the process to close). */
  close(): Promise<void>;
}

/** The process's SDK and how many gateways share it (tests run several in one process). */
let running: { users: number; shutdown: () => Promise<void>; flush: () => Promise<void> } | null = null;

/**
 * Starts tracing when the environment asks for it (once per process; later callers share it).
 * Returns null when tracing is off.
 */
export async function startTracing(log: Log, env: Env = process.env): Promise<TracingHandle | null> {
  const settings = tracingSettings(env);
  if (!settings) return null;
  if (!running) {
    const [
      { NodeTracerProvider, BatchSpanProcessor },
      resources,
      semconv,
      api,
      core,
      { ExportThreadSpanExporter },
    ] = await Promise.all([
      import('@opentelemetry/sdk-trace-node'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/semantic-conventions'),
      import('@opentelemetry/api'),
      import('@opentelemetry/core'),
      import('./export-thread.js'),
    ]);
    // Export failures reach the log (rate-limited by the SDK's own retries), nothing else of its chatter.
    api.diag.setLogger(
      {
        error: (msg, ...args) => log.warn({ otel: args.map(String).join(' ') }, `tracing: ${msg}`),
        warn: (msg, ...args) => log.warn({ otel: args.map(String).join(' ') }, `tracing: ${msg}`),
        info: () => {},
        debug: () => {},
        verbose: () => {},
      },
      { logLevel: api.DiagLogLevel.WARN, suppressOverrideMessage: true },
    );
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) override the defaults.
    const resource = resources
      .defaultResource()
      .merge(
        resources.resourceFromAttributes({
          [semconv.ATTR_SERVICE_NAME]: 'gatehouse',
          [semconv.ATTR_SERVICE_VERSION]: process.env.npm_package_version ?? '0.1.0',
        }),
      )
      .merge(resources.detectResources({ detectors: [resources.envDetector] }));
    // The sampler (OTEL_TRACES_SAMPLER, _ARG), the batch processor's OTEL_BSP_* and the exporter's
    // OTEL_EXPORTER_OTLP_* are read by the SDK itself (the exporter's on its thread: export-thread.ts).
    const exporter = new ExportThreadSpanExporter({
      protocol: settings.protocol,
      resource: { attributes: resource.attributes, schemaUrl: resource.schemaUrl },
      warn: (msg, detail) => log.warn({ otel: detail }, `tracing: ${msg}`),
    });
    const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
    // No context manager: the trace context is passed explicitly (spans.ts), and AsyncLocalStorage
    // would hook every promise of the process on Node 20. W3C Trace Context only: a caller's
    // `baggage` is not passed on to providers (its headers reach them only when allow-listed).
    provider.register({ contextManager: null, propagator: new core.W3CTraceContextPropagator() });
    setTracing(true);
    running = {
      users: 0,
      flush: () => provider.forceFlush(),
      shutdown: async () => {
        setTracing(false);
        await provider.shutdown();
        api.trace.disable();
        api.context.disable();
        api.propagation.disable();
        api.diag.disable();
      },
    };
    log.info(
      { protocol: settings.protocol, service: resource.attributes[semconv.ATTR_SERVICE_NAME] },
      'tracing: exporting spans over OTLP',
    );
  }
  const sdk = running;
  sdk.users++;
  let closed = false;
  return {
    close: async () => {
      if (closed) return;
      closed = true;
      if (--sdk.users > 0) return sdk.flush();
      if (running === sdk) running = null;
      await sdk.shutdown();
    },
  };
}
