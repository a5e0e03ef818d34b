import { randomBytes } from 'node:crypto';
import { type Selectable, sql } from 'kysely';
import type { Db, Dialect } from '../db/connection.js';
import type { BatchFilesTable } from '../db/schema.js';
import { FINAL_STATUSES } from './model.js';
import type { BatchRow } from './store.js';

/**
 * SQL of uploaded files (OpenAI's Files API): the file row, its content in chunks — a batch file's
 * whole lines, a model input file's base64 (files/input-files.ts) — and the final batches whose
 * output / error files are derived from their results. Times in Unix seconds.
 */

export type FileRow = Selectable<BatchFilesTable>;

interface Owner {
  organizationId: string;
  workspaceId: string;
}

let lastIdMs = 0;
let idSeq = 0;
/** `file-` + 24 hex that sort by creation (time in ms, a sequence, randomness), as batch ids do. */
export const newFileId = (): string => {
  const now = Date.now();
  idSeq = now === lastIdMs ? idSeq + 1 : 0;
  lastIdMs = now;
  const seq = (idSeq & 0xffff).toString(16).padStart(4, '0');
  return `file-${now.toString(16).padStart(12, '0')}${seq}${randomBytes(4).toString('hex')}`;
};

export async function createFile(
  db: Db,
  row: Pick<
    FileRow,
    'id' | 'organization_id' | 'workspace_id' | 'filename' | 'purpose' | 'created_at' | 'expires_at'
  >,
): Promise<void> {
  await db.insertInto('batch_files').values(row).execute();
}

export async function appendChunk(db: Db, fileId: string, seq: number, data: string): Promise<void> {
  await db.insertInto('batch_file_chunks').values({ file_id: fileId, seq, data }).execute();
}

/** Shows an uploaded file (until now hidden) with its size, purpose and expiry. */
export async function completeFile(
  db: Db,
  id: string,
  fields: Pick<FileRow, 'bytes' | 'line_count' | 'purpose' | 'expires_at'> &
    Partial<Pick<FileRow, 'mime_type'>>,
): Promise<void> {
  await db
    .updateTable('batch_files')
    .set({ ...fields, complete: 1 })
    .where('id', '=', id)
    .execute();
}

export async function deleteFile(db: Db, id: string): Promise<void> {
  await db.deleteFrom('batch_file_chunks').where('file_id', '=', id).execute();
  await db.deleteFrom('batch_files').where('id', '=', id).execute();
}

/** A complete, unexpired file of the owner's workspace. */
export async function getFile(db: Db, owner: Owner, id: string, now: number): Promise<FileRow | undefined> {
  return db
    .selectFrom('batch_files')
    .selectAll()
    .where('id', '=', id)
    .where('organization_id', '=', owner.organizationId)
    .where('workspace_id', '=', owner.workspaceId)
    .where('complete', '=', 1)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .executeTakeFirst();
}

/** A file's content chunks after `afterSeq`, in order. */
export async function chunks(db: Db, fileId: string, afterSeq: number, limit: number) {
  return db
    .selectFrom('batch_file_chunks')
    .select(['seq', 'data'])
    .where('file_id', '=', fileId)
    .where('seq', '>', afterSeq)
    .orderBy('seq')
    .limit(limit)
    .execute();
}

/** A file's chunks' data in order, read a few chunks at a time. */
export async function* chunkData(db: Db, fileId: string): AsyncGenerator<string> {
  let after = -1;
  for (;;) {
    const rows = await chunks(db, fileId, after, 8);
    if (rows.length === 0) return;
    for (const r of rows) yield r.data;
    after = (rows[rows.length - 1] as { seq: number }).seq;
  }
}

/**
 * Expired uploaded files (`expires_at` reached), `limit` of them, but those an unfinished batch was
 * created from or is being created from (its ingestion reads the file while it is `validating`).
 */
export async function expiredFiles(db: Db, now: number, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('batch_files as f')
    .select('f.id')
    .where('f.expires_at', '<=', now)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('batches as b')
            .select('b.id')
            .whereRef('b.input_file_id', '=', 'f.id')
            .where('b.status', 'not in', [...FINAL_STATUSES]),
        ),
      ),
    )
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

/** Uploads whose process died mid-body (never completed) and that started before `before`. */
export async function abandonedFiles(db: Db, before: number, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('batch_files')
    .select('id')
    .where('complete', '=', 0)
    .where('created_at', '<', before)
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

/**
 * Deletes a file's first `limit` chunks (each up to ~1 MiB: one statement never deletes a whole
 * 200 MiB file); returns how many.
 */
export async function deleteChunks(db: Db, fileId: string, limit: number): Promise<number> {
  const first = db
    .selectFrom('batch_file_chunks')
    .select('seq')
    .where('file_id', '=', fileId)
    .orderBy('seq')
    .limit(limit);
  const r = await db
    .deleteFrom('batch_file_chunks')
    .where('file_id', '=', fileId)
    .where('seq', 'in', first)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/**
 * Deletes a workspace's uploaded files (with the workspace, in its transaction): what was uploaded
 * to it is not kept once it is gone. Batches hold their own copy of their requests.
 */
export async function deleteWorkspaceFiles(db: Db, workspaceId: string): Promise<void> {
  await db
    .deleteFrom('batch_file_chunks')
    .where('file_id', 'in', (eb) =>
      eb.selectFrom('batch_files').select('id').where('workspace_id', '=', workspaceId),
    )
    .execute();
  await db.deleteFrom('batch_files').where('workspace_id', '=', workspaceId).execute();
}

/** Deletes a file's row once its chunks are gone. */
export async function deleteFileRow(db: Db, id: string): Promise<void> {
  await db.deleteFrom('batch_files').where('id', '=', id).execute();
}

/**
 * A page position: the last file shown, as (created_at, id); a page holds the rows strictly after it
 * (`desc`: older than, `asc`: newer than). Ids compare byte by byte (`collate "C"` on PostgreSQL,
 * SQLite's binary default), as the service merges uploaded and derived files in JavaScript.
 */
export interface Cursor {
  createdAt: number;
  id: string;
  order: 'asc' | 'desc';
}

const byteOrder = (dialect: Dialect) =>
  dialect === 'postgres' ? sql<string>`id collate "C"` : sql<string>`id`;

/** Uploaded files of the owner's workspace: the `limit` after the cursor (an exact keyset read). */
export async function listFiles(
  db: Db,
  dialect: Dialect,
  owner: Owner,
  opts: {
    cursor: Cursor | null;
    order: 'asc' | 'desc';
    limit: number;
    /** One purpose, a list of them, or null: every purpose. */
    purpose: string | readonly string[] | null;
    now: number;
  },
): Promise<FileRow[]> {
  const id = byteOrder(dialect);
  const { cursor } = opts;
  const past = opts.order === 'desc' ? '<' : '>';
  return db
    .selectFrom('batch_files')
    .selectAll()
    .where('organization_id', '=', owner.organizationId)
    .where('workspace_id', '=', owner.workspaceId)
    .where('complete', '=', 1)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', opts.now)]))
    .$if(typeof opts.purpose === 'string', (q) => q.where('purpose', '=', opts.purpose as string))
    .$if(Array.isArray(opts.purpose), (q) => q.where('purpose', 'in', opts.purpose as string[]))
    .$if(cursor !== null, (q) =>
      q.where(sql<boolean>`(created_at, ${id}) ${sql.raw(past)} (${cursor?.createdAt}, ${cursor?.id})`),
    )
    .orderBy('created_at', opts.order)
    .orderBy(id, opts.order)
    .limit(opts.limit)
    .execute();
}

/** Final batches of the workspace whose output / error files are served (not past `output_expires_after`). */
function servedBatches(db: Db, owner: Owner, now: number) {
  return db
    .selectFrom('batches')
    .selectAll()
    .where('organization_id', '=', owner.organizationId)
    .where('workspace_id', '=', owner.workspaceId)
    .where('accepted', '=', 1)
    .where('status', 'in', [...FINAL_STATUSES])
    .where((eb) =>
      eb.or([
        eb('output_expires_after_s', 'is', null),
        eb(eb('finalized_at', '+', eb.ref('output_expires_after_s')), '>', now),
      ]),
    );
}

/** A final batch of the owner's workspace whose output and error files have not expired. */
export async function finalBatch(
  db: Db,
  owner: Owner,
  id: string,
  now: number,
): Promise<BatchRow | undefined> {
  return servedBatches(db, owner, now).where('id', '=', id).executeTakeFirst();
}

/**
 * Final batches of the workspace with results, by (`finalized_at`, id): their output and error files'
 * (created_at, id). `limit` batches from the cursor's on: the cursor's own batch is included (its
 * other file may follow the cursor), and the caller drops what is not past the cursor.
 */
export async function finalBatches(
  db: Db,
  dialect: Dialect,
  owner: Owner,
  opts: { cursor: Cursor | null; order: 'asc' | 'desc'; limit: number; now: number },
): Promise<BatchRow[]> {
  const id = byteOrder(dialect);
  const { cursor } = opts;
  const past = opts.order === 'desc' ? '<' : '>';
  // `file-batch_<hex>_output` follows `file-<x>` exactly when `batch_<hex>` follows `<x>` without
  // its suffix (ids are fixed-length), or is the same batch: compared from the batch's own id.
  const key = cursor ? cursor.id.replace(/^file-/, '').replace(/_(output|error)$/, '') : '';
  return servedBatches(db, owner, opts.now)
    .where((eb) => eb.or([eb('completed_count', '>', 0), eb('failed_count', '>', 0)]))
    .$if(cursor !== null, (q) =>
      q.where(sql<boolean>`(finalized_at, ${id}) ${sql.raw(`${past}=`)} (${cursor?.createdAt}, ${key})`),
    )
    .orderBy('finalized_at', opts.order)
    .orderBy(id, opts.order)
    .limit(opts.limit)
    .execute();
}

/**
 * Final batches whose results expired with their output files (`output_expires_after`) and whose
 * stored answers the sweep has not cleared yet (`results_cleared_at`, through the partial index
 * `batches_results_to_clear`): the retention asked for holds for the stored data too.
 */
export async function expiredResultBatches(db: Db, now: number, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('batches')
    .select('id')
    .where('output_expires_after_s', 'is not', null)
    .where('results_cleared_at', 'is', null)
    // `finalized_at` is set in final states only; no status test, which would lead SQLite's
    // planner to the status index (every final batch) instead of the partial one.
    .where((eb) => eb(eb('finalized_at', '+', eb.ref('output_expires_after_s')), '<=', now))
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

/** Marks a batch's expired answers as cleared: the sweep will not look at it again. */
export async function markResultsCleared(db: Db, batchId: string, now: number): Promise<void> {
  await db.updateTable('batches').set({ results_cleared_at: now }).where('id', '=', batchId).execute();
}

/**
 * Clears up to `limit` stored answers of a batch (its counts, usage and error lines stay: what the
 * Batch object shows). Returns how many.
 */
export async function clearAnswers(db: Db, batchId: string, limit: number): Promise<number> {
  const res = await db
    .updateTable('batch_requests')
    .set({ response_body: null })
    .where('batch_id', '=', batchId)
    .where('idx', 'in', (eb) =>
      eb
        .selectFrom('batch_requests')
        .select('idx')
        .where('batch_id', '=', batchId)
        .where('response_body', 'is not', null)
        .limit(limit),
    )
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}
