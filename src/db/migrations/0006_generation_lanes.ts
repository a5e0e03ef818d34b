import type { Kysely } from 'kysely';

/**
 * How a generation was served: `passthrough` (1 when the caller's body went to a provider of its
 * own format, 0 when translated) and `upstream_id`, the provider's id of the answer (`chatcmpl-…`,
 * `msg_…`, `resp_…`), which a pass-through caller sees instead of the generation id and may look a
 * generation up by. The index is partial: only rows with an upstream id enter it.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('generations')
    .addColumn('passthrough', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('generations').addColumn('upstream_id', 'text').execute();
  await db.schema
    .createIndex('generations_upstream_id')
    .on('generations')
    .columns(['upstream_id'])
    .where('upstream_id', 'is not', null)
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('generations_upstream_id').ifExists().execute();
  await db.schema.alterTable('generations').dropColumn('upstream_id').execute();
  await db.schema.alterTable('generations').dropColumn('passthrough').execute();
}
