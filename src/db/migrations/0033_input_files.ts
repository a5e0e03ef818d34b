import type { Kysely } from 'kysely';

/**
 * Files for model inputs (OpenAI's purposes `user_data`, `assistants`, `vision`; Anthropic's and
 * OpenRouter's files) share the uploaded files' table with batch inputs: one id space, one list, one
 * retention. Their content is kept as base64 in the chunks (each chunk a whole number of 3-byte
 * groups, so the chunks joined are the file's base64), and their media type beside the row.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('batch_files').addColumn('mime_type', 'text').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('batch_files').dropColumn('mime_type').execute();
}
