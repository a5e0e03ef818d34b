import type { Kysely } from 'kysely';

/**
 * What a generation keeps of its checks and its routing, as JSON text (null on older rows):
 * - `safeguards`: every content filter that ran on the call (the gateway's, on the request and on
 *   the answer, and the provider's own verdicts) with what it did — names, actions and counts,
 *   never the matched text;
 * - `gateway_metadata`: how the call was routed (lane or translation, the endpoints considered and
 *   left out, the models tried and skipped, the strategy, the fields translation dropped).
 * Both are read by GET /generation only: the generations list does not select them.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('generations').addColumn('safeguards', 'text').execute();
  await db.schema.alterTable('generations').addColumn('gateway_metadata', 'text').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('generations').dropColumn('gateway_metadata').execute();
  await db.schema.alterTable('generations').dropColumn('safeguards').execute();
}
