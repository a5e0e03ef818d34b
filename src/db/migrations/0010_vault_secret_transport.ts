import type { Kysely } from 'kysely';

/**
 * How a vault secret may travel: by default only over HTTPS on port 443. `allow_http` (0/1) also
 * allows plain HTTP (port 80); `ports_json` lists further ports the secret may be sent to.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('vault_secrets')
    .addColumn('allow_http', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('vault_secrets').addColumn('ports_json', 'text').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('vault_secrets').dropColumn('ports_json').execute();
  await db.schema.alterTable('vault_secrets').dropColumn('allow_http').execute();
}
