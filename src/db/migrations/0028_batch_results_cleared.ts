import { type Kysely, sql } from 'kysely';

/**
 * When the batch worker's sweep cleared a batch's stored answers after its results expired
 * (`output_expires_after`), in Unix seconds. The sweep looks only at batches not yet cleared, through
 * a partial index of those that can expire, so its read stays the size of what is left to clear
 * rather than every expired batch ever kept (each of them a scan of its requests before).
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('batches').addColumn('results_cleared_at', 'integer').execute();
  await sql`create index batches_results_to_clear on batches (finalized_at) where output_expires_after_s is not null and results_cleared_at is null`.execute(
    db,
  );
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('batches_results_to_clear').ifExists().execute();
  await db.schema.alterTable('batches').dropColumn('results_cleared_at').execute();
}
