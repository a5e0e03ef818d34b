import type { Kysely } from 'kysely';

/**
 * A weight per BYOK credential: its share of the calls among the credentials of its tier (its
 * provider's non-fallback ones, or its fallback ones). Existing credentials weigh 1 (even shares).
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('byok_credentials')
    .addColumn('weight', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('byok_credentials').dropColumn('weight').execute();
}
