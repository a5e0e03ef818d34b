import type { Kysely } from 'kysely';

/**
 * Files for OpenAI's Files + Batch API (`POST /files` with purpose `batch`, then `POST /batches`
 * with `input_file_id`). The bytes live in the database, in chunks of whole lines, like every other
 * piece of gateway state: a file uploaded through one gateway node is read by whichever node
 * creates the batch (several nodes share one PostgreSQL), with no shared disk or object store to
 * run. A file is hidden (`complete = 0`) until its upload has ended. Batches remember the file they
 * were created from and their OpenAI `metadata`. Times in Unix seconds.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('batch_files')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('filename', 'text', (c) => c.notNull())
    .addColumn('purpose', 'text', (c) => c.notNull())
    .addColumn('bytes', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('line_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('complete', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('batch_files_workspace')
    .on('batch_files')
    .columns(['organization_id', 'workspace_id', 'created_at'])
    .execute();
  await db.schema
    .createTable('batch_file_chunks')
    .addColumn('file_id', 'text', (c) => c.notNull().references('batch_files.id').onDelete('cascade'))
    .addColumn('seq', 'integer', (c) => c.notNull())
    // Whole lines of UTF-8 text (each ends with its newline, but perhaps the file's last).
    .addColumn('data', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('batch_file_chunks_pk', ['file_id', 'seq'])
    .execute();
  await db.schema.alterTable('batches').addColumn('input_file_id', 'text').execute();
  await db.schema.alterTable('batches').addColumn('metadata_json', 'text').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('batches').dropColumn('metadata_json').execute();
  await db.schema.alterTable('batches').dropColumn('input_file_id').execute();
  await db.schema.dropTable('batch_file_chunks').ifExists().execute();
  await db.schema.dropTable('batch_files').ifExists().execute();
}
