import { randomBytes } from 'node:crypto';
import type { Selectable } from 'kysely';
import type { Db } from '../db/connection.js';
import type { BatchFilesTable } from '../db/schema.js';
import { FINAL_STATUSES } from './model.js';
import type { BatchRow } from './store.js';

/**
 * SQL of uploaded batch files (OpenAI's Files API, purpose `batch`): the file row, its content in
 * chunks of whole lines, and the final batches whose output / error files are derived from their
 * results. Times in Unix seconds.
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
  fields: Pick<FileRow, 'bytes' | 'line_count' | 'purpose' | 'expires_at'>,
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

/** Uploads whose process died mid-body (never completed) and that started before `before`. */
export async function abandonedFiles(db: Db, before: number): Promise<string[]> {
  const rows = await db
    .selectFrom('batch_files')
    .select('id')
    .where('complete', '=', 0)
    .where('created_at', '<', before)
    .limit(100)
    .execute();
  return rows.map((r) => r.id);
}

/**
 * A page position: rows strictly after (`desc`: older than, `asc`: newer than) the cursor's
 * (created_at, id). Rows of the cursor's own second are read whole and compared by the caller
 * (ids of uploaded and derived files are compared in JavaScript, not in the database's collation).
 */
export interface Cursor {
  createdAt: number;
  order: 'asc' | 'desc';
}

/** Uploaded files of the owner's workspace: `limit` rows past the cursor's second, and all of its second. */
export async function listFiles(
  db: Db,
  owner: Owner,
  opts: { cursor: Cursor | null; order: 'asc' | 'desc'; limit: number; purpose: string | null; now: number },
): Promise<FileRow[]> {
  const base = db
    .selectFrom('batch_files')
    .selectAll()
    .where('organization_id', '=', owner.organizationId)
    .where('workspace_id', '=', owner.workspaceId)
    .where('complete', '=', 1)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', opts.now)]))
    .$if(opts.purpose !== null, (q) => q.where('purpose', '=', opts.purpose as string));
  const past = base
    .$if(opts.cursor !== null, (q) =>
      q.where('created_at', opts.order === 'desc' ? '<' : '>', (opts.cursor as Cursor).createdAt),
    )
    .orderBy('created_at', opts.order)
    .orderBy('id', opts.order)
    .limit(opts.limit)
    .execute();
  const same = opts.cursor ? base.where('created_at', '=', opts.cursor.createdAt).execute() : [];
  return [...(await same), ...(await past)];
}

/** A final batch of the owner's workspace (its output and error files are derived from it). */
export async function finalBatch(db: Db, owner: Owner, id: string): Promise<BatchRow | undefined> {
  return db
    .selectFrom('batches')
    .selectAll()
    .where('id', '=', id)
    .where('organization_id', '=', owner.organizationId)
    .where('workspace_id', '=', owner.workspaceId)
    .where('accepted', '=', 1)
    .where('status', 'in', [...FINAL_STATUSES])
    .executeTakeFirst();
}

/** Final batches of the workspace with results, by `finalized_at` (the derived files' created_at). */
export async function finalBatches(
  db: Db,
  owner: Owner,
  opts: { cursor: Cursor | null; order: 'asc' | 'desc'; limit: number },
): Promise<BatchRow[]> {
  const base = db
    .selectFrom('batches')
    .selectAll()
    .where('organization_id', '=', owner.organizationId)
    .where('workspace_id', '=', owner.workspaceId)
    .where('accepted', '=', 1)
    .where('status', 'in', [...FINAL_STATUSES])
    .where((eb) => eb.or([eb('completed_count', '>', 0), eb('failed_count', '>', 0)]));
  const past = base
    .$if(opts.cursor !== null, (q) =>
      q.where('finalized_at', opts.order === 'desc' ? '<' : '>', (opts.cursor as Cursor).createdAt),
    )
    .orderBy('finalized_at', opts.order)
    .orderBy('id', opts.order)
    .limit(opts.limit)
    .execute();
  const same = opts.cursor ? base.where('finalized_at', '=', opts.cursor.createdAt).execute() : [];
  return [...(await same), ...(await past)];
}
