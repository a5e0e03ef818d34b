import type { Caller } from '../accounts/caller.js';
import type { Usage } from '../formats/chat.js';
import type { SafeguardRecord } from '../guardrails/content-filters.js';
import type { GenerationRow } from './accounting.js';
import type { InferenceCall, RouteInfo } from './call.js';
import type { Tried } from './fallback.js';
import type { Cost } from './pricing.js';

/** How a served call ended. */
export interface Outcome {
  streamed: boolean;
  finishReason: string | null;
  /** Usage was estimated because the upstream reported none. */
  estimated: boolean;
  /**
   * success (default) | error (the upstream failed mid-stream, or a content filter refused the
   * answer) | cancelled (the caller left)
   */
  status?: 'success' | 'error' | 'cancelled';
  /** The status the caller got (default: 502 for an error, else 200). */
  httpStatus?: number;
  error?: string | null;
  /** The provider's id of the answer (a lane's callers see it instead of the generation id). */
  upstreamId?: string | null;
}

type CallRef = Pick<InferenceCall, 'caller' | 'wire' | 'model' | 'presetId'>;

/** Who made a generation, through which endpoint, asking for which model. */
export interface RowRef {
  caller: Caller;
  /** chat | messages | responses | embeddings | media */
  endpoint: string;
  requestedModel: string;
  /** The preset the call used, when it named one. */
  presetId?: string;
}

const refOf = (call: CallRef): RowRef => ({
  caller: call.caller,
  endpoint: call.wire.endpoint,
  requestedModel: call.model,
  presetId: call.presetId,
});

/** A generation row with nothing served yet: zero tokens, zero cost, status success. */
export function baseRow(ref: RowRef, id: string): GenerationRow {
  return {
    id,
    organization_id: ref.caller.organizationId,
    workspace_id: ref.caller.workspaceId,
    key_hash: ref.caller.keyHash,
    user_id: ref.caller.userId,
    endpoint: ref.endpoint,
    requested_model: ref.requestedModel,
    model: null,
    provider: null,
    upstream_model: null,
    status: 'success',
    http_status: 200,
    streamed: 0,
    finish_reason: null,
    prompt_tokens: 0,
    completion_tokens: 0,
    reasoning_tokens: 0,
    cached_tokens: 0,
    cache_write_tokens: 0,
    usage_estimated: 0,
    pricing_unknown: 0,
    cost_usd: 0,
    prompt_cost_usd: 0,
    completion_cost_usd: 0,
    is_byok: 0,
    attempts: 1,
    latency_ms: 0,
    generation_time_ms: 0,
    error_message: null,
    created_at: new Date().toISOString(),
    passthrough: 0,
    upstream_id: null,
    web_search_requests: 0,
    provider_responses: null,
    safeguards: null,
    gateway_metadata: null,
    preset_id: ref.presetId ?? null,
  };
}

/** What a generation keeps of its checks and its routing (JSON columns, see migration 0017). */
export interface Kept {
  safeguards: readonly SafeguardRecord[];
  /** The routing story, as JSON text (gateway-metadata.ts). */
  metadata: string | null;
}

const keptColumns = (k: Kept) => ({
  safeguards: JSON.stringify(k.safeguards),
  gateway_metadata: k.metadata,
});

/** The attempts of a call as the generation keeps them (OpenRouter's `provider_responses`). */
export const attemptsJson = (tried: readonly Tried[]): string =>
  JSON.stringify(
    tried.map((t) => ({
      model_permaslug: t.model,
      provider_name: t.provider,
      status: t.status,
      latency: t.latencyMs,
      is_byok: t.isByok,
    })),
  );

/** The generation of a call an endpoint served (completely or not). */
export function servedRow(
  call: CallRef,
  info: Pick<RouteInfo, 'generationId' | 'model' | 'served' | 'attempts' | 'startedAt' | 'lane' | 'tried'>,
  usage: Usage,
  cost: Cost,
  o: Outcome,
  kept: Kept,
): GenerationRow {
  const elapsed = Date.now() - info.startedAt;
  return {
    ...baseRow(refOf(call), info.generationId),
    model: info.model.id,
    provider: info.served.endpoint.provider,
    upstream_model: info.served.endpoint.upstreamModel,
    status: o.status ?? 'success',
    http_status: o.httpStatus ?? (o.status === 'error' ? 502 : 200),
    streamed: o.streamed ? 1 : 0,
    finish_reason: o.finishReason,
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    reasoning_tokens: usage.completion_tokens_details?.reasoning_tokens ?? 0,
    cached_tokens: usage.prompt_tokens_details?.cached_tokens ?? 0,
    cache_write_tokens: usage.prompt_tokens_details?.cache_write_tokens ?? 0,
    usage_estimated: o.estimated ? 1 : 0,
    pricing_unknown: info.model.priced === false ? 1 : 0,
    cost_usd: cost.total,
    prompt_cost_usd: cost.prompt,
    completion_cost_usd: cost.completion,
    is_byok: info.served.credential.isByok ? 1 : 0,
    attempts: info.attempts,
    latency_ms: elapsed,
    generation_time_ms: elapsed,
    error_message: o.error ?? null,
    passthrough: info.lane ? 1 : 0,
    upstream_id: o.upstreamId ?? null,
    web_search_requests: usage.server_tool_use?.web_search_requests ?? 0,
    provider_responses: attemptsJson(info.tried),
    ...keptColumns(kept),
  };
}

/** The generation of a call no endpoint could serve. */
export function failedRow(
  call: CallRef,
  id: string,
  f: {
    model: string;
    provider: string;
    status: number;
    message: string;
    attempts: number;
    startedAt: number;
    tried: readonly Tried[];
  },
  kept: Kept,
): GenerationRow {
  return {
    ...baseRow(refOf(call), id),
    model: f.model,
    provider: f.provider,
    status: 'error',
    http_status: f.status,
    attempts: f.attempts,
    latency_ms: Date.now() - f.startedAt,
    error_message: f.message,
    provider_responses: attemptsJson(f.tried),
    ...keptColumns(kept),
  };
}
