/** The record a destination receives for one generation: what its broadcast settings include. */
import type { GenerationsTable } from '../db/schema.js';
import type { LiveDestination } from './service.js';

export function exportRecord(row: GenerationsTable, d: LiveDestination) {
  return {
    id: row.id,
    created_at: row.created_at,
    workspace_id: row.workspace_id,
    model: row.model ?? row.requested_model,
    requested_model: row.requested_model,
    provider: row.provider,
    upstream_model: row.upstream_model,
    status: row.status,
    http_status: row.http_status,
    finish_reason: row.finish_reason,
    usage: {
      prompt_tokens: row.prompt_tokens,
      completion_tokens: row.completion_tokens,
      total_tokens: row.prompt_tokens + row.completion_tokens,
      reasoning_tokens: row.reasoning_tokens,
      cached_tokens: row.cached_tokens,
      cache_write_tokens: row.cache_write_tokens,
      web_search_requests: row.web_search_requests,
      estimated: row.usage_estimated === 1,
    },
    latency_ms: row.latency_ms,
    generation_time_ms: row.generation_time_ms,
    attempts: row.attempts,
    // An upstream's error text may quote the request: not in privacy mode.
    error_message: d.privacyMode ? null : row.error_message,
    ...(d.cost
      ? {
          cost: {
            total_usd: row.cost_usd,
            prompt_usd: row.prompt_cost_usd,
            completion_usd: row.completion_cost_usd,
            is_byok: row.is_byok === 1,
          },
        }
      : {}),
    ...(d.identity ? { identity: { api_key_hash: row.key_hash, user_id: row.user_id } } : {}),
    ...(d.requestContext
      ? {
          request: {
            endpoint: row.endpoint,
            streamed: row.streamed === 1,
            route: row.passthrough === 1 ? 'pass-through' : 'translated',
          },
        }
      : {}),
  };
}

/**
 * A generation's content as content logging kept it (after the content filters' redactions): the
 * request's messages (or prompt) and the answer. Added when the batch is sent, never in privacy mode.
 */
export interface ExportContent {
  input: unknown;
  output: unknown;
  /** The fields cut to the size cap (each then a string: the start of its JSON and a marker). */
  truncated?: ('input' | 'output')[];
}

export type ExportRecord = ReturnType<typeof exportRecord> & { content?: ExportContent };
