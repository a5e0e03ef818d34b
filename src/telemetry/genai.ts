import type { Attributes } from '@opentelemetry/api';
import type { Usage } from '../formats/chat.js';
import type { Attempt, Body, InferenceCall, RouteInfo } from '../routing/call.js';
import type { Cost } from '../routing/pricing.js';
import { operationName } from './operation.js';
import { annotate, SpanKind, startSpan, type TracedSpan, type TraceParent, tracingOn } from './spans.js';

/**
 * The spans of inference calls, with the GenAI semantic conventions' attributes
 * (https://opentelemetry.io/docs/specs/semconv/gen-ai/) and Gatehouse's own (`gatehouse.*`):
 * one CLIENT span per upstream attempt, a sibling of the call's others under the request's span.
 * Never a prompt, an answer or a secret: ids, models, counts and prices only.
 */

/** gen_ai.provider.name by provider kind (the conventions' well-known values); else the provider's slug. */
const PROVIDER_NAMES: Record<string, string> = {
  openai: 'openai',
  anthropic: 'anthropic',
  google: 'gcp.gemini',
  vertex: 'gcp.vertex_ai',
  azure: 'azure.ai.openai',
  bedrock: 'aws.bedrock',
};
const VENDOR_NAMES: Record<string, string> = { openai: 'openai', anthropic: 'anthropic', xai: 'x_ai' };

function providerName(a: Attempt): string {
  const p = a.candidate.provider;
  return (
    PROVIDER_NAMES[p.config.kind] ??
    (p.config.kind === 'openai-compatible' ? VENDOR_NAMES[p.vendor] : undefined) ??
    a.candidate.endpoint.provider
  );
}

const operation = (call: InferenceCall): string => operationName(call.wire.kind);

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** The request parameters the conventions name, from the caller's body (any of the wires' spellings). */
function requestParams(body: Body): Attributes {
  const out: Attributes = {};
  const maxTokens = num(body.max_tokens) ?? num(body.max_completion_tokens) ?? num(body.max_output_tokens);
  if (maxTokens !== undefined) out['gen_ai.request.max_tokens'] = maxTokens;
  const temperature = num(body.temperature);
  if (temperature !== undefined) out['gen_ai.request.temperature'] = temperature;
  const topP = num(body.top_p);
  if (topP !== undefined) out['gen_ai.request.top_p'] = topP;
  return out;
}

/**
 * The span of one upstream attempt (`index`: its place in the call's fallback order; a retry of the
 * last keeps it). Null while tracing is off.
 */
export function attemptSpan(
  call: InferenceCall,
  prep: { body: Body },
  a: Attempt,
  index: number,
): TracedSpan | null {
  // Off: nothing built. A provider batch's capture and replay stand in for the upstream: no span.
  if (!tracingOn() || call.hooks?.upstream) return null;
  const upstreamModel = a.candidate.endpoint.upstreamModel;
  return startSpan(
    `${operation(call)} ${upstreamModel}`,
    SpanKind.CLIENT,
    () => ({
      'gen_ai.operation.name': operation(call),
      // The conventions' `gen_ai.system` was renamed `gen_ai.provider.name`: sent under the new name only.
      'gen_ai.provider.name': providerName(a),
      'gen_ai.request.model': upstreamModel,
      ...requestParams(prep.body),
      'gatehouse.provider': a.candidate.endpoint.provider,
      'gatehouse.model': a.candidate.model.id,
      'gatehouse.route': a.lane ? 'lane' : 'translated',
      'gatehouse.fallback_index': index,
      'gatehouse.byok': a.candidate.credential.isByok,
      'gatehouse.stream': call.stream,
      'gatehouse.key_hash_prefix': call.caller.keyHash.slice(0, 12),
    }),
    call.trace,
  );
}

/** Ends the attempt that served a call, with its usage, cost and how it ended. */
function attemptServed(
  span: TracedSpan | undefined | null,
  info: RouteInfo,
  usage: Usage,
  cost: Cost,
  end: {
    finishReason: string | null;
    responseModel?: unknown;
    responseId?: string | null;
    status?: string;
    /** A stream that broke after it started: the span ends as an error, with the usage so far. */
    error?: unknown;
  },
): void {
  if (!span) return;
  if (!span.recording) {
    if (end.error !== undefined) span.fail(end.error);
    else span.end();
    return;
  }
  const attributes: Attributes = {
    'gen_ai.response.model':
      typeof end.responseModel === 'string' ? end.responseModel : info.served.endpoint.upstreamModel,
    'gen_ai.usage.input_tokens': usage.prompt_tokens,
    'gen_ai.usage.output_tokens': usage.completion_tokens,
    'gatehouse.generation_id': info.generationId,
    'gatehouse.cost_usd': cost.total,
    'gatehouse.attempts': info.attempts,
  };
  if (end.finishReason) attributes['gen_ai.response.finish_reasons'] = [end.finishReason];
  if (end.responseId) attributes['gen_ai.response.id'] = end.responseId;
  const reasoning = usage.completion_tokens_details?.reasoning_tokens;
  if (reasoning) attributes['gatehouse.usage.reasoning_tokens'] = reasoning;
  const cached = usage.prompt_tokens_details?.cached_tokens;
  if (cached) attributes['gatehouse.usage.cached_tokens'] = cached;
  if (end.status && end.status !== 'success') attributes['gatehouse.status'] = end.status;
  if (end.error !== undefined) span.fail(end.error, attributes);
  else span.end(attributes);
}

/**
 * What the span around a served call (the request's, the batch item's) says of it: which call it
 * was — the model the caller named, the catalog model, the generation. What the call used (usage,
 * cost, the provider, the model that answered, the attempts) is on the serving attempt's span
 * only: dashboards that sum `gen_ai.usage.*` or the cost over spans count each call once.
 */
function callAttributes(info: RouteInfo): Attributes {
  return {
    'gen_ai.operation.name': operationName(info.model.kind),
    'gen_ai.request.model': info.requested,
    'gatehouse.generation_id': info.generationId,
    'gatehouse.model': info.model.id,
  };
}

/** An attempt that failed (or was cancelled): status ERROR with the upstream's status. */
export function attemptFailed(span: TracedSpan | null, err: unknown, upstreamStatus: number | null): void {
  if (!span) return;
  span.fail(err, {
    'error.type': upstreamStatus ? String(upstreamStatus) : err instanceof Error ? err.name : 'error',
    ...(upstreamStatus ? { 'http.response.status_code': upstreamStatus } : {}),
  });
}

/**
 * A call served: its serving attempt's span ends with what the call used (attemptServed), and the
 * span around the call (`trace`: the request's, the batch item's) says which call it was.
 */
export function callServed(
  span: TracedSpan,
  trace: TraceParent | undefined,
  info: RouteInfo,
  usage: Usage,
  cost: Cost,
  end: Parameters<typeof attemptServed>[4],
): void {
  attemptServed(span, info, usage, cost, end);
  annotate(trace, () => callAttributes(info));
}
