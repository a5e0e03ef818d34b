import type { Kysely } from 'kysely';

/**
 * Video job callbacks (OpenRouter's `callback_url`): where a job's end is POSTed, and the job's
 * polling URL as its caller reached it (the event carries it), kept with the job so that whichever
 * process ends it — the one running it, or one that finds it abandoned — can send the event.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('media_video_jobs').addColumn('callback_url', 'text').execute();
  await db.schema.alterTable('media_video_jobs').addColumn('polling_url', 'text').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('media_video_jobs').dropColumn('polling_url').execute();
  await db.schema.alterTable('media_video_jobs').dropColumn('callback_url').execute();
}
