import type { Kysely } from 'kysely';

/**
 * Stored responses (`POST /responses` with `store` not false): one row per response, scoped to its
 * workspace, and one row per output item so that `item_reference` inputs find their item by id.
 * Times are milliseconds since the epoch; rows past `expires_at` are not served and are purged.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('stored_responses')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    // The provider slug that served it, and whether that provider stores it natively too (the
    // OpenAI Responses pass-through with `store`), so a follow-up there can go unexpanded.
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('upstream_stored', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('previous_response_id', 'text')
    // The stored responses this one continues, oldest first (the conversation is rebuilt from them).
    .addColumn('chain_json', 'text', (c) => c.notNull())
    // This turn's own input items (item references resolved); the earlier turns' are in the chain.
    .addColumn('input_json', 'text', (c) => c.notNull())
    // The response object as it was returned (output items included).
    .addColumn('response_json', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('stored_responses_expiry')
    .on('stored_responses')
    .column('expires_at')
    .execute();
  await db.schema
    .createTable('stored_response_items')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('response_id', 'text', (c) =>
      c.notNull().references('stored_responses.id').onDelete('cascade'),
    )
    .addColumn('item_json', 'text', (c) => c.notNull())
    .execute();
  // The cascade from a deleted or purged response finds its items through this.
  await db.schema
    .createIndex('stored_response_items_response')
    .on('stored_response_items')
    .column('response_id')
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('stored_response_items').ifExists().execute();
  await db.schema.dropTable('stored_responses').ifExists().execute();
}
