import type { Kysely } from 'kysely';

/**
 * `generations.pricing_unknown`: 1 when the call went to a model with no known price (an unlisted
 * id passed through, GATEHOUSE_UNPRICED_MODELS=allow) and was recorded at cost 0. Nullable so rows
 * journaled by an older build (without the field) still insert.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('generations')
    .addColumn('pricing_unknown', 'integer', (c) => c.defaultTo(0))
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('generations').dropColumn('pricing_unknown').execute();
}
