import type { Kysely } from 'kysely';

/**
 * Every attempt a call made (model, provider, upstream status, latency), as JSON: after a model
 * or provider fallback the generation says what was tried before what served.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('generations').addColumn('provider_responses', 'text').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('generations').dropColumn('provider_responses').execute();
}
