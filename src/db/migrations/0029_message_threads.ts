import type { Kysely } from 'kysely';

/**
 * Anthropic message threads Gatehouse holds (`thread` on `POST /messages` for a model no provider
 * holding threads serves): one row per answered turn, scoped to its workspace, keyed by the reply's
 * message id (what `previous_message_id` names). The thread's `system` and `tools` are kept on its
 * first row; each row keeps its own turn's messages and reply, and the ids of the turns before it.
 * `continued` is null, `in_flight` (a continue of this reply is running, since `continued_at`) or
 * `done`: a reply is continued once. Times are milliseconds since the epoch; rows past
 * `expires_at` are not served and are purged.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('message_threads')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('chain_json', 'text', (c) => c.notNull())
    .addColumn('fields_json', 'text')
    .addColumn('messages_json', 'text', (c) => c.notNull())
    .addColumn('reply_json', 'text', (c) => c.notNull())
    .addColumn('continued', 'text')
    .addColumn('continued_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('message_threads_expiry').on('message_threads').column('expires_at').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('message_threads').ifExists().execute();
}
