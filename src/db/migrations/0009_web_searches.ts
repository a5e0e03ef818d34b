import type { Kysely } from 'kysely';

/** Web searches a provider ran for a call (its server-side search tool), billed per search. */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('generations')
    .addColumn('web_search_requests', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('generations').dropColumn('web_search_requests').execute();
}
