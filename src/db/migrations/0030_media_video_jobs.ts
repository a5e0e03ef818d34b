import type { Kysely } from 'kysely';

/**
 * Video jobs of the media service's OpenRouter video API (`POST /api/v1/videos`, polled at
 * `GET /api/v1/videos/{id}`): one row per accepted job, scoped to its workspace, so a poll may land
 * on any process and survives a restart. `owner` is the process running it, which refreshes
 * `heartbeat_at` while it works; a running job whose heartbeat stopped is failed by the next poll.
 * `outputs_json` lists the stored videos once completed. Times are milliseconds since the epoch;
 * rows past `expires_at` are purged.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('media_video_jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('heartbeat_at', 'bigint', (c) => c.notNull())
    .addColumn('outputs_json', 'text')
    .addColumn('cost_usd', 'double precision')
    .addColumn('error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('completed_at', 'bigint')
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('media_video_jobs_expiry')
    .on('media_video_jobs')
    .column('expires_at')
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('media_video_jobs').ifExists().execute();
}
