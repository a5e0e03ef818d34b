import type { Kysely } from 'kysely';

/**
 * Batches and their requests. A request row carries its own lease (claimed by a worker until
 * `lease_expires_at`), its retry schedule and, once `state` is `done`, its one result and usage.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('batches')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text')
    .addColumn('endpoint', 'text', (c) => c.notNull())
    .addColumn('model', 'text')
    .addColumn('completion_window', 'text', (c) => c.notNull())
    .addColumn('provider_json', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    // 0 while the body is still being read: such a batch was never accepted and is not shown.
    .addColumn('accepted', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('error_message', 'text')
    .addColumn('request_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('input_bytes', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('estimated_cost_usd', 'double precision', (c) => c.notNull().defaultTo(0))
    // Progress and usage sums, kept with each recorded result (in its transaction) so that a poll
    // reads one row instead of summing every request of a large batch.
    .addColumn('completed_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('failed_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('byok_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('prompt_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('completion_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('reasoning_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('cached_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('cache_write_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('cost_usd', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('prompt_cost_usd', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('completion_cost_usd', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('upstream_cost_usd', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('in_progress_at', 'bigint')
    .addColumn('finalizing_at', 'bigint')
    .addColumn('cancelling_at', 'bigint')
    .addColumn('finalized_at', 'bigint')
    // ms; bumped while the body is read, so an ingestion cut off by a crash can be swept.
    .addColumn('updated_at_ms', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('batches_owner')
    .on('batches')
    .columns(['organization_id', 'key_hash', 'created_at'])
    .execute();
  await db.schema.createIndex('batches_status').on('batches').columns(['status', 'accepted']).execute();

  await db.schema
    .createTable('batch_requests')
    .addColumn('batch_id', 'text', (c) => c.notNull().references('batches.id').onDelete('cascade'))
    .addColumn('idx', 'integer', (c) => c.notNull())
    .addColumn('custom_id', 'text', (c) => c.notNull())
    // The caller's item as sent ({custom_id, body}), JSON text.
    .addColumn('item', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull().defaultTo('pending'))
    .addColumn('lease_owner', 'text')
    .addColumn('lease_token', 'text')
    .addColumn('lease_expires_at', 'bigint')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('status_code', 'integer')
    .addColumn('generation_id', 'text')
    .addColumn('response_body', 'text')
    .addColumn('error_json', 'text')
    .addColumn('prompt_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('completion_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('reasoning_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('cached_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('cache_write_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('cost_usd', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('prompt_cost_usd', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('completion_cost_usd', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('upstream_cost_usd', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('is_byok', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('finished_at', 'bigint')
    .addColumn('finished_by', 'text')
    .addPrimaryKeyConstraint('batch_requests_pk', ['batch_id', 'idx'])
    .addUniqueConstraint('batch_requests_custom_id', ['batch_id', 'custom_id'])
    .execute();
  // Claiming: the next pending requests of a batch in index order.
  await db.schema
    .createIndex('batch_requests_claim')
    .on('batch_requests')
    .columns(['batch_id', 'state', 'idx'])
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('batch_requests').ifExists().execute();
  await db.schema.dropTable('batches').ifExists().execute();
}
