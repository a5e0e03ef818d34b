import type { Kysely } from 'kysely';

/**
 * Conversations (OpenAI's Conversations API, on any provider): one row per conversation, scoped to
 * its workspace, and its items in order. `POST /responses` with `conversation` sends the items
 * before its input and appends the turn's input and output after it. Times are milliseconds since
 * the epoch; a conversation is kept the stored responses' retention after its last write, and rows
 * past `expires_at` are not served and are purged (its items with it).
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('conversations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('metadata_json', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('conversations_expiry').on('conversations').column('expires_at').execute();
  await db.schema
    .createTable('conversation_items')
    .addColumn('conversation_id', 'text', (c) =>
      c.notNull().references('conversations.id').onDelete('cascade'),
    )
    // The item's id: its own (a response's output items, an id the caller sent), else one
    // Gatehouse gave it. Unique within its conversation only: ids come from callers and providers.
    .addColumn('id', 'text', (c) => c.notNull())
    // Its place in the conversation (ascending; gaps where items were deleted).
    .addColumn('position', 'integer', (c) => c.notNull())
    // The item as it was sent or returned (without an id Gatehouse gave it).
    .addColumn('item_json', 'text', (c) => c.notNull())
    // Output of a provider that stores responses itself (OpenAI's, on a pass-through lane): its
    // reasoning items go back to it as they came.
    .addColumn('upstream_stored', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('conversation_items_pk', ['conversation_id', 'id'])
    .execute();
  await db.schema
    .createIndex('conversation_items_position')
    .on('conversation_items')
    .columns(['conversation_id', 'position'])
    .unique()
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('conversation_items').ifExists().execute();
  await db.schema.dropTable('conversations').ifExists().execute();
}
