import type { Kysely } from 'kysely';

/**
 * The caller's provider headers of a batch's create call (Message Batches: `anthropic-version` and
 * `anthropic-beta`, allow-listed as on `POST /messages`), as a JSON object; each request of the
 * batch runs as if it had carried them. Null when there were none.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('batches').addColumn('headers_json', 'text').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('batches').dropColumn('headers_json').execute();
}
