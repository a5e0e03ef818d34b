import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * Expiry and listing of batch files.
 * - A batch keeps OpenAI's `output_expires_after.seconds`: its output and error files expire that
 *   long after their creation (the batch's end).
 * - Expired uploaded files are purged by the batch worker's sweep, which finds them by `expires_at`
 *   and skips those an unfinished batch was created from (found by `input_file_id`).
 * - GET /files pages uploaded files by (created_at, id) and output files by (finalized_at, id) of
 *   their batch, within one workspace: each index ends with those two, so a page is one index range
 *   walk. Ids compare byte by byte (`collate "C"` on PostgreSQL, SQLite's default), as the list
 *   merges both kinds in that order.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  const id = db.getExecutor().adapter instanceof PostgresAdapter ? sql`id collate "C"` : sql`id`;
  await db.schema.alterTable('batches').addColumn('output_expires_after_s', 'integer').execute();
  await db.schema.createIndex('batches_input_file').on('batches').column('input_file_id').execute();
  await sql`create index batches_workspace_final on batches (organization_id, workspace_id, finalized_at, ${id})`.execute(
    db,
  );
  await db.schema.createIndex('batch_files_expiry').on('batch_files').column('expires_at').execute();
  await sql`create index batch_files_list on batch_files (organization_id, workspace_id, created_at, ${id})`.execute(
    db,
  );
  await db.schema.dropIndex('batch_files_workspace').ifExists().execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('batch_files_workspace')
    .on('batch_files')
    .columns(['organization_id', 'workspace_id', 'created_at'])
    .execute();
  for (const name of [
    'batch_files_list',
    'batch_files_expiry',
    'batches_workspace_final',
    'batches_input_file',
  ])
    await db.schema.dropIndex(name).ifExists().execute();
  await db.schema.alterTable('batches').dropColumn('output_expires_after_s').execute();
}
