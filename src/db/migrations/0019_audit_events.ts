import type { Kysely } from 'kysely';

/**
 * The audit log: one row per management write (management API and operator API), made or refused
 * after authentication. Who (actor kind, key hash or user id — never a secret), what (action,
 * resource), the resource's state before and after with secrets masked, and the outcome status.
 * No foreign keys: an event outlives the organization, key or object it names. `at` is ISO 8601
 * UTC text like every other time column; rows older than the retention period are purged.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('audit_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    // Null for operator-level events (an organization created, the catalog reloaded).
    .addColumn('organization_id', 'text')
    .addColumn('workspace_id', 'text')
    .addColumn('at', 'text', (c) => c.notNull())
    // management_key | api_key | operator | system
    .addColumn('actor_kind', 'text', (c) => c.notNull())
    // The key's hash (management keys), null for the operator token.
    .addColumn('actor_id', 'text')
    .addColumn('actor_user_id', 'text')
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('resource_type', 'text', (c) => c.notNull())
    .addColumn('resource_id', 'text')
    .addColumn('before_json', 'text')
    .addColumn('after_json', 'text')
    // The request's body as sent, masked: what was asked for, also when it was refused.
    .addColumn('request_json', 'text')
    .addColumn('request_id', 'text')
    .addColumn('remote_address', 'text')
    .addColumn('status', 'integer', (c) => c.notNull())
    .execute();
  // Newest first per organization (the list's keyset order), and the retention purge by time.
  await db.schema
    .createIndex('audit_events_org_at')
    .on('audit_events')
    .columns(['organization_id', 'at', 'id'])
    .execute();
  await db.schema.createIndex('audit_events_at').on('audit_events').columns(['at', 'id']).execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('audit_events').ifExists().execute();
}
