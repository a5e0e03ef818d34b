import type { EndpointName } from '../routing/call.js';

/**
 * The batch's vocabulary: its endpoints, states and the wire shapes of the seed
 * (gateway-management-api.md, "Batch", "Batch result item", "Batch usage object").
 */

/** The endpoints a batch may target, as the body names them, and the engine's name for each. */
export const BATCH_ENDPOINTS = {
  '/v1/chat/completions': 'chat',
  '/v1/responses': 'responses',
  '/v1/messages': 'messages',
  '/v1/embeddings': 'embeddings',
} as const satisfies Record<string, EndpointName>;

export type BatchEndpoint = keyof typeof BATCH_ENDPOINTS;

export const isBatchEndpoint = (e: unknown): e is BatchEndpoint =>
  typeof e === 'string' && Object.hasOwn(BATCH_ENDPOINTS, e);

export const COMPLETION_WINDOWS = ['24h'] as const;

export type BatchStatus =
  | 'validating'
  | 'in_progress'
  | 'finalizing'
  | 'completed'
  | 'failed'
  | 'expired'
  | 'cancelling'
  | 'cancelled';

/** States a batch never leaves. */
export const FINAL_STATUSES: readonly BatchStatus[] = ['completed', 'failed', 'expired', 'cancelled'];

/** The batch-level `provider` preferences: only these two are supported (seed). */
export interface BatchProviderPrefs {
  only?: string[];
  allow_fallbacks?: boolean;
}

/** A per-request failure in a result item. */
export interface ResultError {
  message: string;
  type: string;
  param: string | null;
  error_type: string;
}

export interface ResultItem {
  id: string;
  custom_id: string;
  response: { status_code: number; request_id: string; body: unknown } | null;
  error: ResultError | null;
}

export interface BatchUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cache_creation: { ephemeral_1h_input_tokens: number; ephemeral_5m_input_tokens: number };
  completion_tokens_details: { reasoning_tokens: number; audio_tokens: number; image_tokens: number };
  prompt_tokens_details: {
    cached_tokens: number;
    cache_write_tokens: number;
    audio_tokens: number;
    file_tokens: number;
    video_tokens: number;
  };
  server_tool_use: { tool_calls_executed: number; tool_calls_requested: number; web_search_requests: number };
  cost: number;
  cost_details: {
    upstream_inference_prompt_cost: number;
    upstream_inference_completions_cost: number;
    upstream_inference_cost: number | null;
  };
  is_byok: boolean;
  iterations: {
    type: string;
    input_tokens: number;
    output_tokens: number;
    cache_creation_input_tokens: number;
    cache_read_input_tokens: number;
    cache_creation: { ephemeral_1h_input_tokens: number; ephemeral_5m_input_tokens: number };
  }[];
  service_tier: string;
  speed: string;
  /** OpenAI's names for the token counts. */
  input_tokens: number;
  output_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens_details: { reasoning_tokens: number };
}

/** OpenAI's Batch fields Gatehouse's own Batch object lacks (every batch carries them). */
export interface OpenAiBatchFields {
  input_file_id: string | null;
  output_file_id: string | null;
  error_file_id: string | null;
  errors: { object: 'list'; data: { code: string; message: string; param: null; line: null }[] } | null;
  metadata: Record<string, string> | null;
  completed_at: number | null;
  failed_at: number | null;
  expired_at: number | null;
  cancelled_at: number | null;
}

export interface Batch extends OpenAiBatchFields {
  id: string;
  object: 'batch';
  endpoint: string;
  model: string | null;
  completion_window: string;
  status: BatchStatus;
  created_at: number;
  in_progress_at: number | null;
  finalizing_at: number | null;
  cancelling_at: number | null;
  finalized_at: number | null;
  expires_at: number;
  request_counts: { completed: number; failed: number; total: number };
  error: { message: string } | null;
  usage: BatchUsage;
  results?: ResultItem[];
  /** Paging of `results` on this response. */
  results_page?: { offset: number; limit: number; total: number; has_more: boolean };
  /** When its results expired with its output files (`output_expires_after`): none are served since. */
  results_expired_at?: number;
}

/** How a request's error status maps to the result item's `type` and `error_type`. */
export function errorKinds(status: number): { type: string; error_type: string } {
  if (status === 429) return { type: 'rate_limit_error', error_type: 'rate_limit_exceeded' };
  if (status === 402) return { type: 'insufficient_credits', error_type: 'insufficient_credits' };
  if (status === 403) return { type: 'permission_error', error_type: 'forbidden' };
  if (status === 404) return { type: 'invalid_request_error', error_type: 'not_found' };
  if (status === 408 || status === 504) return { type: 'api_error', error_type: 'timeout' };
  if (status >= 400 && status < 500) return { type: 'invalid_request_error', error_type: 'invalid_request' };
  if (status === 502 || status === 503) return { type: 'api_error', error_type: 'upstream_error' };
  return { type: 'api_error', error_type: 'internal_error' };
}

/** The `error` of a result item for a request that ended with `status`. */
export function resultError(status: number, message: string): ResultError {
  return { message, param: null, ...errorKinds(status) };
}

/** Errors given to requests that never ran to completion. */
export const closingErrors = {
  expired: (): ResultError => ({
    message: 'The batch expired (its completion window passed) before this request finished',
    type: 'expired',
    param: null,
    error_type: 'expired',
  }),
  cancelled: (): ResultError => ({
    message: 'The batch was cancelled before this request finished',
    type: 'cancelled',
    param: null,
    error_type: 'cancelled',
  }),
  failed: (why: string): ResultError => ({
    message: `The batch failed before this request ran: ${why}`,
    type: 'batch_failed',
    param: null,
    error_type: 'batch_failed',
  }),
};
