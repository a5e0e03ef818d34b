import type { Kysely } from 'kysely';

/**
 * Presets: named request configurations of a workspace (model, routing, sampling, a system prompt),
 * referenced from an inference body as `@preset/<slug>`. Every save is a new version; the newest is
 * the designated one. `generations.preset_id` names the preset a call used.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('presets')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('slug', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('designated_version_id', 'text')
    .addColumn('creator_user_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('status_updated_at', 'text')
    .execute();
  // A slug names one preset in its workspace (and two saves racing on a new slug meet here).
  await db.schema
    .createIndex('presets_workspace_slug')
    .on('presets')
    .columns(['workspace_id', 'slug'])
    .unique()
    .execute();
  await db.schema
    .createTable('preset_versions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('preset_id', 'text', (c) => c.notNull().references('presets.id').onDelete('cascade'))
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('config_json', 'text', (c) => c.notNull())
    .addColumn('system_prompt', 'text')
    .addColumn('creator_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('preset_versions_number')
    .on('preset_versions')
    .columns(['preset_id', 'version'])
    .unique()
    .execute();
  await db.schema.alterTable('generations').addColumn('preset_id', 'text').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('generations').dropColumn('preset_id').execute();
  await db.schema.dropTable('preset_versions').ifExists().execute();
  await db.schema.dropTable('presets').ifExists().execute();
}
