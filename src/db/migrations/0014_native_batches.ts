import type { Kysely } from 'kysely';

/**
 * Provider-native batches: a batch's requests may be sent to the provider's own batch API. The
 * batch row remembers which provider, the provider's batch id and where the submission stands,
 * so a restarted gateway resumes polling instead of submitting again. Requests handed to the
 * provider wait in state `native` (no worker claims them) until their results come back.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('batches').addColumn('native_provider', 'text').execute();
  await db.schema.alterTable('batches').addColumn('native_id', 'text').execute();
  // null: not decided; none, submitting, submitted, cancelling, collected, refused.
  await db.schema.alterTable('batches').addColumn('native_state', 'text').execute();
  // ms: until then the worker that set it owns the submission, or the next poll is not due.
  await db.schema.alterTable('batches').addColumn('native_until_ms', 'bigint').execute();
  await db.schema.alterTable('batches').addColumn('native_error', 'text').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  for (const column of ['native_provider', 'native_id', 'native_state', 'native_until_ms', 'native_error'])
    await db.schema.alterTable('batches').dropColumn(column).execute();
}
