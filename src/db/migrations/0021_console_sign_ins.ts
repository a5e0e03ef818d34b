import type { Kysely } from 'kysely';

/**
 * Console sign-ins with an OpenID provider: the provider's ID token of each sign-in, sealed under
 * the master key (bound to the key's hash), kept on the server so sign-out can send it back to the
 * provider as `id_token_hint` without the browser ever holding it. Deleted with the key at sign-out,
 * or past `expires_at` (the key's own expiry) by the sign-in sweeper.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('console_sign_ins')
    .addColumn('key_hash', 'text', (c) => c.primaryKey())
    .addColumn('id_token_ciphertext', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('console_sign_ins_expires')
    .on('console_sign_ins')
    .column('expires_at')
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('console_sign_ins').ifExists().execute();
}
