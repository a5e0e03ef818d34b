import type { Kysely } from 'kysely';

/**
 * A workspace's video webhooks (OpenRouter's workspace settings for `callback_url`): the default
 * callback URL of its video jobs, and the secret their events are signed with — sealed under the
 * master key like BYOK keys, shown once when it is made.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('workspaces').addColumn('video_callback_url', 'text').execute();
  await db.schema.alterTable('workspaces').addColumn('webhook_secret_ciphertext', 'text').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('workspaces').dropColumn('webhook_secret_ciphertext').execute();
  await db.schema.alterTable('workspaces').dropColumn('video_callback_url').execute();
}
