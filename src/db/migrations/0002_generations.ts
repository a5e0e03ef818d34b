import type { Kysely } from 'kysely';

/** One row per inference call (successful or not): what the caller asked, what served it, what it cost. */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('generations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'text')
    .addColumn('user_id', 'text')
    .addColumn('endpoint', 'text', (c) => c.notNull())
    .addColumn('requested_model', 'text', (c) => c.notNull())
    .addColumn('model', 'text')
    .addColumn('provider', 'text')
    .addColumn('upstream_model', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('http_status', 'integer', (c) => c.notNull())
    .addColumn('streamed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('finish_reason', 'text')
    .addColumn('prompt_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('completion_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('reasoning_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('cached_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('cache_write_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('usage_estimated', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('cost_usd', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('prompt_cost_usd', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('completion_cost_usd', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('is_byok', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('latency_ms', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('generation_time_ms', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('error_message', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('generations_org')
    .on('generations')
    .columns(['organization_id', 'created_at'])
    .execute();
  // Member-guardrail budgets sum a user's spend in an organization.
  await db.schema
    .createIndex('usage_events_user')
    .on('usage_events')
    .columns(['organization_id', 'user_id', 'created_at'])
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('usage_events_user').ifExists().execute();
  await db.schema.dropTable('generations').ifExists().execute();
}
