/**
 * OTLP/HTTP delivery (the `otlp` and `langfuse` destination types): each record becomes one span
 * with the GenAI semantic conventions' attributes (https://opentelemetry.io/docs/specs/semconv/gen-ai/)
 * and Gatehouse's own (`gatehouse.*`), a batch one ExportTraceServiceRequest encoded by the
 * OpenTelemetry serializers (protobuf or JSON). A Langfuse destination adds the `langfuse.*`
 * attributes Langfuse reads for a generation (its type, model, usage and cost details, input, output).
 */
import { createHash } from 'node:crypto';
import { type Attributes, SpanKind, SpanStatusCode, TraceFlags } from '@opentelemetry/api';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { post } from '../lib/guarded-post.js';
import { operationName } from '../telemetry/operation.js';
import type { Sender } from './delivery.js';
import type { ExportRecord } from './records.js';
import type { LiveDestination } from './service.js';

type Span = Parameters<typeof ProtobufTraceSerializer.serializeRequest>[0][number];

const resource = resourceFromAttributes({ 'service.name': 'gatehouse' });
const scope = { name: 'gatehouse-export' };

/** Trace and span ids derived from the generation id: a retried batch carries the same spans. */
function ids(generationId: string) {
  const h = createHash('sha256').update(generationId).digest('hex');
  return { traceId: h.slice(0, 32), spanId: h.slice(32, 48) };
}

const hrTime = (ms: number): [number, number] => [Math.floor(ms / 1000), Math.round((ms % 1000) * 1e6)];

/** The answer in the conventions' output-message shape (gen_ai.output.messages). */
function outputMessages(output: unknown, finishReason: string | null) {
  const o = (output ?? {}) as { completion?: string | null; tool_calls?: unknown[] | null };
  const parts: unknown[] = [];
  if (typeof o.completion === 'string') parts.push({ type: 'text', content: o.completion });
  for (const call of o.tool_calls ?? []) {
    const c = call as { id?: string | null; function?: { name?: string; arguments?: string } };
    parts.push({
      type: 'tool_call',
      id: c.id ?? null,
      name: c.function?.name,
      arguments: c.function?.arguments,
    });
  }
  return [{ role: 'assistant', parts, finish_reason: finishReason ?? 'stop' }];
}

function attributes(r: ExportRecord, langfuse: boolean): Attributes {
  const a: Attributes = {
    'gen_ai.operation.name': operationName(r.request?.endpoint),
    'gen_ai.request.model': r.requested_model,
    'gen_ai.response.id': r.id,
    'gen_ai.usage.input_tokens': r.usage.prompt_tokens,
    'gen_ai.usage.output_tokens': r.usage.completion_tokens,
    'gatehouse.generation.id': r.id,
    'gatehouse.workspace.id': r.workspace_id,
    'gatehouse.status': r.status,
    'gatehouse.usage.reasoning_tokens': r.usage.reasoning_tokens,
    'gatehouse.usage.cached_tokens': r.usage.cached_tokens,
    'gatehouse.usage.estimated': r.usage.estimated,
    'gatehouse.attempts': r.attempts,
    'http.response.status_code': r.http_status,
  };
  if (r.provider) {
    a['gen_ai.provider.name'] = r.provider;
    a['gen_ai.system'] = r.provider; // the conventions' earlier name, still read by many backends
  }
  if (r.upstream_model ?? r.model) a['gen_ai.response.model'] = (r.upstream_model ?? r.model) as string;
  if (r.finish_reason) a['gen_ai.response.finish_reasons'] = [r.finish_reason];
  if (r.status !== 'success') a['error.type'] = String(r.http_status);
  if (r.cost) {
    a['gen_ai.usage.cost'] = r.cost.total_usd;
    a['gatehouse.cost.total_usd'] = r.cost.total_usd;
    a['gatehouse.cost.is_byok'] = r.cost.is_byok;
  }
  if (r.identity) {
    if (r.identity.api_key_hash) a['gatehouse.api_key.hash'] = r.identity.api_key_hash;
    if (r.identity.user_id) a['user.id'] = r.identity.user_id;
  }
  if (r.request) {
    a['gatehouse.endpoint'] = r.request.endpoint;
    a['gatehouse.streamed'] = r.request.streamed;
    a['gatehouse.route'] = r.request.route;
  }
  // A field cut to the size cap is already a string (the start of its JSON and a marker): sent as is.
  const asText = (v: unknown, json: () => string) => (typeof v === 'string' ? v : json());
  const content = r.content;
  const input = content ? asText(content.input, () => JSON.stringify(content.input)) : undefined;
  const output = content
    ? asText(content.output, () => JSON.stringify(outputMessages(content.output, r.finish_reason)))
    : undefined;
  if (content?.truncated?.length) a['gatehouse.content.truncated'] = content.truncated;
  // Langfuse gets content once, under its own names (it is most of a span's bytes).
  if (input !== undefined && output !== undefined && !langfuse) {
    a['gen_ai.input.messages'] = input;
    a['gen_ai.output.messages'] = output;
  }
  if (langfuse) {
    a['langfuse.observation.type'] = 'generation';
    a['langfuse.trace.name'] = `gatehouse ${r.model}`;
    a['langfuse.observation.model.name'] = (r.upstream_model ?? r.model) as string;
    a['langfuse.observation.usage_details'] = JSON.stringify({
      input: r.usage.prompt_tokens,
      output: r.usage.completion_tokens,
      total: r.usage.total_tokens,
    });
    if (r.cost)
      a['langfuse.observation.cost_details'] = JSON.stringify({
        input: r.cost.prompt_usd,
        output: r.cost.completion_usd,
        total: r.cost.total_usd,
      });
    if (r.identity?.user_id) a['langfuse.user.id'] = r.identity.user_id;
    if (r.status !== 'success') a['langfuse.observation.level'] = 'ERROR';
    if (input !== undefined && output !== undefined) {
      a['langfuse.observation.input'] = input;
      a['langfuse.observation.output'] = output;
    }
  }
  return a;
}

/** One generation record as a finished span: from its start (`created_at`) for its latency. */
export function recordSpan(r: ExportRecord, langfuse: boolean): Span {
  const { traceId, spanId } = ids(r.id);
  const start = Date.parse(r.created_at);
  const duration = hrTime(r.latency_ms);
  return {
    name: `${operationName(r.request?.endpoint)} ${r.model}`,
    kind: SpanKind.CLIENT,
    spanContext: () => ({ traceId, spanId, traceFlags: TraceFlags.SAMPLED }),
    startTime: hrTime(start),
    endTime: hrTime(start + r.latency_ms),
    duration,
    status:
      r.status === 'success'
        ? { code: SpanStatusCode.OK }
        : { code: SpanStatusCode.ERROR, ...(r.error_message ? { message: r.error_message } : {}) },
    attributes: attributes(r, langfuse),
    links: [],
    events: [],
    ended: true,
    resource,
    instrumentationScope: scope,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}

export function encodeSpans(records: ExportRecord[], d: Pick<LiveDestination, 'type' | 'encoding'>) {
  const spans = records.map((r) => recordSpan(r, d.type === 'langfuse'));
  const json = d.encoding === 'json';
  const body = (json ? JsonTraceSerializer : ProtobufTraceSerializer).serializeRequest(spans);
  if (!body) throw new Error('OTLP serialization failed');
  return { body, contentType: json ? 'application/json' : 'application/x-protobuf' };
}

export const deliverOtlp: Sender = (d, _deliveryId, records, opts) => {
  let encoded: ReturnType<typeof encodeSpans>;
  try {
    encoded = encodeSpans(records, d);
  } catch (err) {
    return Promise.resolve({ ok: false, retry: false, reason: (err as Error).message });
  }
  return post(
    d.url,
    { method: 'POST', headers: { ...d.headers, 'content-type': encoded.contentType }, body: encoded.body },
    opts,
  );
};
