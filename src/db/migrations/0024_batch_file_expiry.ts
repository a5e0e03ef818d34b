import type { Kysely } from 'kysely';

/**
 * Expiry of batch files. A batch keeps OpenAI's `output_expires_after.seconds`: its output and
 * error files expire that long after their creation (the batch's end). Expired uploaded files are
 * purged by the batch worker's sweep, which finds them by `expires_at` and skips those an unfinished
 * batch was created from (found by `input_file_id`).
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('batches').addColumn('output_expires_after_s', 'integer').execute();
  await db.schema.createIndex('batches_input_file').on('batches').column('input_file_id').execute();
  await db.schema.createIndex('batch_files_expiry').on('batch_files').column('expires_at').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('batch_files_expiry').ifExists().execute();
  await db.schema.dropIndex('batches_input_file').ifExists().execute();
  await db.schema.alterTable('batches').dropColumn('output_expires_after_s').execute();
}
