import type { Db } from '../db/connection.js';
import { ApiError, badRequest } from '../lib/errors.js';
import { type BatchStatus, FINAL_STATUSES, type OpenAiBatchFields } from './model.js';
import type { BatchRow } from './store.js';

/**
 * What OpenAI's Batch API adds to a Gatehouse batch: creation from an uploaded file
 * (`input_file_id`, `metadata`, `output_expires_after`), the Batch object's OpenAI fields, and the
 * cursor (`after`) of the batch list.
 */

/** The output and error files of a batch: `file-batch_<hex>_output` / `_error`. */
export const outputFileId = (batchId: string) => `file-${batchId}_output`;
export const errorFileId = (batchId: string) => `file-${batchId}_error`;

/** An uploaded file's requests for the ingestion: each line's text and its number in the file. */
export interface FileLines {
  bytes: number;
  lines: AsyncIterable<{ line: number; text: string }>;
}

/** A batch's output / error file ids, once it is final and has such results (null before, as OpenAI). */
export function derivedFileIds(row: BatchRow): {
  output_file_id: string | null;
  error_file_id: string | null;
} {
  const final = FINAL_STATUSES.includes(row.status as BatchStatus);
  return {
    output_file_id: final && row.completed_count > 0 ? outputFileId(row.id) : null,
    error_file_id: final && row.failed_count > 0 ? errorFileId(row.id) : null,
  };
}

/** OpenAI's fields of a batch row. */
export function openAiBatchFields(row: BatchRow): OpenAiBatchFields {
  const status = row.status as BatchStatus;
  const finalAt = (s: BatchStatus) =>
    status === s && row.finalized_at !== null ? Number(row.finalized_at) : null;
  return {
    input_file_id: row.input_file_id ?? null,
    ...derivedFileIds(row),
    errors: row.error_message
      ? {
          object: 'list',
          data: [{ code: 'batch_failed', message: row.error_message, param: null, line: null }],
        }
      : null,
    metadata: row.metadata_json ? (JSON.parse(row.metadata_json) as Record<string, string>) : null,
    completed_at: finalAt('completed'),
    failed_at: finalAt('failed'),
    expired_at: finalAt('expired'),
    cancelled_at: finalAt('cancelled'),
  };
}

/** OpenAI's metadata: up to 16 string pairs, keys of at most 64 characters, values of at most 512. */
export function parseMetadata(value: unknown): Record<string, string> | null {
  if (value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value))
    throw badRequest('metadata must be an object of string values');
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > 16) throw badRequest('metadata may hold at most 16 pairs');
  for (const [k, v] of entries) {
    if (k.length > 64) throw badRequest('metadata keys must be at most 64 characters');
    if (typeof v !== 'string' || v.length > 512)
      throw badRequest(`metadata.${k} must be a string of at most 512 characters`);
  }
  return value as Record<string, string>;
}

/**
 * `output_expires_after` ({anchor: "created_at", seconds}): the output and error files expire
 * `seconds` after their creation (OpenAI's anchor is the file's creation, here the batch's end).
 * Returns the seconds.
 */
export function parseOutputExpiry(value: unknown): number {
  const v = value as { anchor?: unknown; seconds?: unknown } | null;
  if (
    typeof v !== 'object' ||
    v === null ||
    v.anchor !== 'created_at' ||
    !Number.isInteger(v.seconds) ||
    (v.seconds as number) < 3600 ||
    (v.seconds as number) > 2_592_000
  )
    throw badRequest('output_expires_after must be {"anchor": "created_at", "seconds": 3600–2592000}');
  return v.seconds as number;
}

/** When a final batch's output and error files expire (Unix seconds), or null: they are kept. */
export function derivedExpiresAt(
  row: Pick<BatchRow, 'finalized_at' | 'output_expires_after_s'>,
): number | null {
  if (row.finalized_at === null || row.output_expires_after_s === null) return null;
  return Number(row.finalized_at) + Number(row.output_expires_after_s);
}

/**
 * When a batch's results expired with its output and error files (Unix seconds), or null: still
 * served. The retention the caller asked for holds for every way of reading them, not only the files.
 */
export function resultsExpiredAt(
  row: Pick<BatchRow, 'finalized_at' | 'output_expires_after_s'>,
  nowS: number = Math.floor(Date.now() / 1000),
): number | null {
  const at = derivedExpiresAt(row);
  return at !== null && at <= nowS ? at : null;
}

/** The refusal of a read of results that expired at `at` (Unix seconds): 410, in the caller's format. */
export const resultsExpired = (batchId: string, at: number) =>
  new ApiError(
    410,
    `The results of batch ${batchId} expired at ${new Date(at * 1000).toISOString()} (output_expires_after) and are no longer available`,
    { expired_at: at },
  );

/**
 * The refusal of a batch whose input file is not there (never was, or was deleted while the batch was
 * being created): the file's 404, as `GET /files/{id}` would answer.
 */
export const inputFileGone = (id: string) =>
  new ApiError(
    404,
    `input_file_id: no batch file ${id} in this workspace (deleted, expired or never uploaded)`,
    {
      param: 'input_file_id',
    },
  );

/** input_file_id: a file id. */
export function parseInputFileId(value: unknown): string {
  if (typeof value !== 'string' || value === '') throw badRequest('input_file_id must be a file id');
  return value;
}

/**
 * A refusal of a request read from a file, naming the file's line instead of the request's index
 * (`requests[3] (custom_id "x"): …` → `Line 5 of file-…: …`). `lineOf[i]` is request i's line.
 */
export function namingLine(err: unknown, fileId: string, lineOf: readonly number[]): unknown {
  if (!(err instanceof ApiError) || typeof err.metadata?.index !== 'number') return err;
  const line = (i: number) => lineOf[i] ?? i + 1;
  const index = err.metadata.index as number;
  const message = err.message
    .replace(/^requests\[(\d+)\]/, (_m, i) => `Line ${line(Number(i))} of ${fileId}`)
    .replace(/\(also requests\[(\d+)\]\)/, (_m, i) => `(also line ${line(Number(i))})`);
  return new ApiError(err.status, message, { ...err.metadata, line: line(index) });
}

/**
 * A key's batches after the `after` batch in the list's order (newest first): `limit` of them.
 * Null when `after` is none of the key's batches.
 */
export async function batchesAfter(
  db: Db,
  owner: { organizationId: string; keyHash: string },
  afterId: string,
  limit: number,
): Promise<BatchRow[] | null> {
  const base = db
    .selectFrom('batches')
    .where('organization_id', '=', owner.organizationId)
    .where('key_hash', '=', owner.keyHash)
    .where('accepted', '=', 1);
  const after = await base.select(['created_at', 'id']).where('id', '=', afterId).executeTakeFirst();
  if (!after) return null;
  return base
    .selectAll()
    .where((eb) =>
      eb.or([
        eb('created_at', '<', after.created_at),
        eb.and([eb('created_at', '=', after.created_at), eb('id', '<', after.id)]),
      ]),
    )
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}
