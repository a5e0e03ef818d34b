import type { Batch, BatchStatus, BatchUsage, ResultItem } from './model.js';
import { openAiBatchFields } from './openai-batch.js';
import type { BatchRow, ResultRow } from './store.js';

/** Rows → the wire shapes of the seed (Batch, Batch result item, Batch usage object). */

const round = (n: number) => Math.round(n * 1e12) / 1e12;

/** The batch usage object from the batch row's sums. */
export function batchUsage(z: BatchRow): BatchUsage {
  // BYOK when every served request was (their cost is the provider's, not credits).
  const isByok = z.completed_count > 0 && z.byok_count === z.completed_count;
  const prompt = Number(z.prompt_tokens);
  const completion = Number(z.completion_tokens);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    // Cache writes are reported without their TTL by the providers Gatehouse reads: counted as 5-minute.
    cache_creation: { ephemeral_1h_input_tokens: 0, ephemeral_5m_input_tokens: Number(z.cache_write_tokens) },
    completion_tokens_details: {
      reasoning_tokens: Number(z.reasoning_tokens),
      audio_tokens: 0,
      image_tokens: 0,
    },
    prompt_tokens_details: {
      cached_tokens: Number(z.cached_tokens),
      cache_write_tokens: Number(z.cache_write_tokens),
      audio_tokens: 0,
      file_tokens: 0,
      video_tokens: 0,
    },
    server_tool_use: { tool_calls_executed: 0, tool_calls_requested: 0, web_search_requests: 0 },
    cost: round(z.cost_usd),
    cost_details: {
      upstream_inference_prompt_cost: round(z.prompt_cost_usd),
      upstream_inference_completions_cost: round(z.completion_cost_usd),
      upstream_inference_cost: z.byok_count > 0 ? round(z.upstream_cost_usd) : null,
    },
    is_byok: isByok,
    iterations: [],
    service_tier: 'batch',
    speed: 'standard',
    input_tokens: prompt,
    output_tokens: completion,
    input_tokens_details: { cached_tokens: Number(z.cached_tokens) },
    output_tokens_details: { reasoning_tokens: Number(z.reasoning_tokens) },
  };
}

export function toBatch(row: BatchRow): Batch {
  return {
    id: row.id,
    object: 'batch',
    endpoint: row.endpoint,
    model: row.model,
    completion_window: row.completion_window,
    status: row.status as BatchStatus,
    created_at: Number(row.created_at),
    in_progress_at: row.in_progress_at === null ? null : Number(row.in_progress_at),
    finalizing_at: row.finalizing_at === null ? null : Number(row.finalizing_at),
    cancelling_at: row.cancelling_at === null ? null : Number(row.cancelling_at),
    finalized_at: row.finalized_at === null ? null : Number(row.finalized_at),
    expires_at: Number(row.expires_at),
    request_counts: { completed: row.completed_count, failed: row.failed_count, total: row.request_count },
    error: row.error_message ? { message: row.error_message } : null,
    usage: batchUsage(row),
    ...openAiBatchFields(row),
  };
}

/** A result item's id: the batch's hex and the request's index. */
export const resultId = (batchId: string, idx: number) =>
  `${batchId.replace(/^batch_/, 'batch_req_')}_${idx}`;

export function toResult(batchId: string, r: ResultRow): ResultItem {
  return {
    id: resultId(batchId, r.idx),
    custom_id: r.custom_id,
    response:
      r.response_body === null
        ? null
        : {
            status_code: r.status_code ?? 200,
            request_id: r.generation_id ?? '',
            body: JSON.parse(r.response_body) as unknown,
          },
    error: r.error_json === null ? null : (JSON.parse(r.error_json) as ResultItem['error']),
  };
}
