import type { BatchStatus, ResultError } from './model.js';
import { FINAL_STATUSES } from './model.js';
import type { BatchRow, ResultRow } from './store.js';

/**
 * Anthropic's Message Batches as a view of Gatehouse batches: a `/v1/messages` batch `batch_<hex>`
 * is the Message Batch `msgbatch_<hex>` (one batch, two addresses), its states and result items in
 * Anthropic's words.
 */

export type ProcessingStatus = 'in_progress' | 'canceling' | 'ended';

export interface MessageBatchCounts {
  processing: number;
  succeeded: number;
  errored: number;
  canceled: number;
  expired: number;
}

export interface MessageBatch {
  id: string;
  type: 'message_batch';
  processing_status: ProcessingStatus;
  request_counts: MessageBatchCounts;
  created_at: string;
  ended_at: string | null;
  expires_at: string;
  cancel_initiated_at: string | null;
  archived_at: string | null;
  results_url: string | null;
}

/** The endpoint whose batches are Message Batches. */
export const MESSAGES_ENDPOINT = '/v1/messages';

const GATEHOUSE_PREFIX = 'batch_';
const ANTHROPIC_PREFIX = 'msgbatch_';

export const toMessageBatchId = (id: string): string =>
  id.startsWith(GATEHOUSE_PREFIX) ? ANTHROPIC_PREFIX + id.slice(GATEHOUSE_PREFIX.length) : id;

/** The Gatehouse batch id behind a Message Batch id; null for anything else (a 404, never a lookup). */
export const fromMessageBatchId = (id: string): string | null =>
  /^msgbatch_[0-9a-f]{1,64}$/.test(id) ? GATEHOUSE_PREFIX + id.slice(ANTHROPIC_PREFIX.length) : null;

export function processingStatus(status: BatchStatus): ProcessingStatus {
  if (FINAL_STATUSES.includes(status)) return 'ended';
  return status === 'cancelling' ? 'canceling' : 'in_progress';
}

const rfc3339 = (unixSeconds: number | null): string | null =>
  unixSeconds === null ? null : new Date(Number(unixSeconds) * 1000).toISOString();

/** Errors closed by the batch rather than by a request's own call, counted apart by Anthropic. */
export interface ClosedCounts {
  canceled: number;
  expired: number;
}

/**
 * `resultsUrl`: where this gateway serves the batch's results (absolute: the SDK fetches it as it
 * is); shown once the batch has ended, as Anthropic does.
 */
export function toMessageBatch(
  row: BatchRow,
  closed: ClosedCounts,
  resultsUrl: (id: string) => string,
): MessageBatch {
  const id = toMessageBatchId(row.id);
  const status = processingStatus(row.status as BatchStatus);
  const finished = row.completed_count + row.failed_count;
  return {
    id,
    type: 'message_batch',
    processing_status: status,
    request_counts: {
      processing: Math.max(0, row.request_count - finished),
      succeeded: row.completed_count,
      errored: Math.max(0, row.failed_count - closed.canceled - closed.expired),
      canceled: closed.canceled,
      expired: closed.expired,
    },
    created_at: rfc3339(row.created_at) as string,
    ended_at: status === 'ended' ? rfc3339(row.finalized_at ?? row.created_at) : null,
    expires_at: rfc3339(row.expires_at) as string,
    cancel_initiated_at: rfc3339(row.cancelling_at),
    archived_at: null,
    results_url: status === 'ended' ? resultsUrl(id) : null,
  };
}

/** Anthropic's error type for a result item's `error_type`. */
const ERROR_TYPES: Record<string, string> = {
  invalid_request: 'invalid_request_error',
  forbidden: 'permission_error',
  insufficient_credits: 'billing_error',
  not_found: 'not_found_error',
  rate_limit_exceeded: 'rate_limit_error',
  timeout: 'timeout_error',
};

/**
 * One line of the results file: `{custom_id, result}`. A succeeded message is the stored answer's
 * JSON text spliced in as it is (no parse and re-serialization of every message).
 */
export function resultLine(r: ResultRow): string {
  const head = `{"custom_id":${JSON.stringify(r.custom_id)},"result":`;
  if (r.error_json === null) return `${head}{"type":"succeeded","message":${r.response_body ?? 'null'}}}\n`;
  const e = JSON.parse(r.error_json) as ResultError;
  if (e.error_type === 'cancelled') return `${head}{"type":"canceled"}}\n`;
  if (e.error_type === 'expired') return `${head}{"type":"expired"}}\n`;
  const error = {
    type: 'error',
    error: { type: ERROR_TYPES[e.error_type] ?? 'api_error', message: e.message },
    request_id: null,
  };
  return `${head}${JSON.stringify({ type: 'errored', error })}}\n`;
}
