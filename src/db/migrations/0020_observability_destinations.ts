import type { Kysely } from 'kysely';

/**
 * Export destinations: per workspace, where each generation's record is sent after the call (a
 * signed webhook). Header values and the signing secret are sealed under the master key
 * (`secret_ciphertext`, bound to the destination id); the rest of the configuration is plain JSON.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('observability_destinations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('enabled', 'integer', (c) => c.notNull())
    // The configuration without secrets: {url, method, header_names}.
    .addColumn('config_json', 'text', (c) => c.notNull())
    // Sealed {headers, signing_secret}.
    .addColumn('secret_ciphertext', 'text')
    .addColumn('api_key_hashes', 'text')
    .addColumn('privacy_mode', 'integer', (c) => c.notNull())
    .addColumn('sampling_rate', 'real', (c) => c.notNull())
    .addColumn('regions', 'text', (c) => c.notNull())
    .addColumn('filter_rules', 'text')
    .addColumn('broadcast_cost', 'integer', (c) => c.notNull())
    .addColumn('broadcast_identity', 'integer', (c) => c.notNull())
    .addColumn('broadcast_request_context', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('deleted_at', 'text')
    .execute();
  await db.schema
    .createIndex('observability_destinations_workspace')
    .on('observability_destinations')
    .columns(['organization_id', 'workspace_id'])
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('observability_destinations').ifExists().execute();
}
