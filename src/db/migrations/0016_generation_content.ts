import type { Kysely } from 'kysely';

/**
 * Content logging: a workspace may keep the content of its generations (off by default) for a
 * number of days. One row per generation: what was sent to the provider (after the content
 * filters' redactions) and what came back, scoped to the generation's organization and workspace.
 * Times are milliseconds since the epoch; rows past `expires_at` are not served and are purged.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('workspaces')
    .addColumn('content_logging', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('workspaces')
    .addColumn('content_retention_days', 'integer', (c) => c.notNull().defaultTo(30))
    .execute();
  await db.schema
    .createTable('generation_contents')
    .addColumn('generation_id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    // {prompt} or {messages}: the input as the caller's format carries it (redacted).
    .addColumn('input_json', 'text', (c) => c.notNull())
    // {completion, reasoning, tool_calls}: the answer as the caller received it (redacted).
    .addColumn('output_json', 'text', (c) => c.notNull())
    .addColumn('error_json', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('generation_contents_expiry')
    .on('generation_contents')
    .column('expires_at')
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('generation_contents').ifExists().execute();
  await db.schema.alterTable('workspaces').dropColumn('content_retention_days').execute();
  await db.schema.alterTable('workspaces').dropColumn('content_logging').execute();
}
