import type { Kysely } from 'kysely';

// Column types valid in both SQLite and PostgreSQL: text, integer, double precision.
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('settings')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('organizations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('users')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull().unique())
    .addColumn('first_name', 'text')
    .addColumn('last_name', 'text')
    .addColumn('interns_programme', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('org_members')
    .addColumn('organization_id', 'text', (c) =>
      c.notNull().references('organizations.id').onDelete('cascade'),
    )
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('org_members_pk', ['organization_id', 'user_id'])
    .execute();

  await db.schema
    .createTable('workspaces')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) =>
      c.notNull().references('organizations.id').onDelete('cascade'),
    )
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('slug', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('is_default', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('default_text_model', 'text')
    .addColumn('default_image_model', 'text')
    .addColumn('default_provider_sort', 'text')
    .addColumn('disabled_server_tools', 'text')
    .addColumn('io_logging_api_key_ids', 'text')
    .addColumn('io_logging_sampling_rate', 'double precision', (c) => c.notNull().defaultTo(1))
    .addColumn('is_data_discount_logging_enabled', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('is_observability_broadcast_enabled', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('is_observability_io_logging_enabled', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('include_byok_in_budgets', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text')
    .addUniqueConstraint('workspaces_org_slug', ['organization_id', 'slug'])
    .execute();

  await db.schema
    .createTable('workspace_members')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('workspace_members_unique', ['workspace_id', 'user_id'])
    .execute();

  await db.schema
    .createTable('workspace_budgets')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('interval', 'text', (c) => c.notNull())
    .addColumn('limit_usd', 'double precision', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('workspace_budgets_unique', ['workspace_id', 'interval'])
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('hash', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) =>
      c.notNull().references('organizations.id').onDelete('cascade'),
    )
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id'))
    .addColumn('creator_user_id', 'text', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('label', 'text', (c) => c.notNull())
    .addColumn('is_management', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('disabled', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('limit_usd', 'double precision')
    .addColumn('limit_reset', 'text')
    .addColumn('include_byok_in_limit', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('expires_at', 'text')
    .addColumn('external_user', 'text')
    .addColumn('external_api_key_hash', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text')
    .execute();
  await db.schema
    .createIndex('api_keys_workspace')
    .on('api_keys')
    .columns(['workspace_id', 'created_at'])
    .execute();

  await db.schema
    .createTable('guardrails')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) =>
      c.notNull().references('organizations.id').onDelete('cascade'),
    )
    .addColumn('workspace_id', 'text', (c) => c.references('workspaces.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('limit_usd', 'double precision')
    .addColumn('reset_interval', 'text')
    .addColumn('allowed_data_regions', 'text')
    .addColumn('allowed_models', 'text')
    .addColumn('allowed_providers', 'text')
    .addColumn('ignored_models', 'text')
    .addColumn('ignored_providers', 'text')
    .addColumn('content_filters', 'text')
    .addColumn('content_filter_builtins', 'text')
    .addColumn('include_byok_in_budgets', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('enable_free_model_publication', 'integer')
    .addColumn('enable_free_model_training', 'integer')
    .addColumn('enable_paid_model_training', 'integer')
    .addColumn('enforce_zdr', 'integer')
    .addColumn('enforce_zdr_anthropic', 'integer')
    .addColumn('enforce_zdr_google', 'integer')
    .addColumn('enforce_zdr_openai', 'integer')
    .addColumn('enforce_zdr_other', 'integer')
    .addColumn('enforce_zdr_xai', 'integer')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text')
    .execute();
  await db.schema
    .createIndex('guardrails_workspace')
    .on('guardrails')
    .columns(['workspace_id', 'created_at'])
    .execute();

  await db.schema
    .createTable('guardrail_key_assignments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('guardrail_id', 'text', (c) => c.notNull().references('guardrails.id').onDelete('cascade'))
    .addColumn('organization_id', 'text', (c) => c.notNull())
    // A key holds at most one guardrail.
    .addColumn('key_hash', 'text', (c) =>
      c.notNull().unique().references('api_keys.hash').onDelete('cascade'),
    )
    .addColumn('assigned_by', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('guardrail_member_assignments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('guardrail_id', 'text', (c) => c.notNull().references('guardrails.id').onDelete('cascade'))
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('assigned_by', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('guardrail_member_unique', ['guardrail_id', 'user_id'])
    .execute();

  await db.schema
    .createTable('byok_credentials')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) =>
      c.notNull().references('organizations.id').onDelete('cascade'),
    )
    .addColumn('workspace_id', 'text', (c) => c.references('workspaces.id').onDelete('cascade'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('label', 'text', (c) => c.notNull())
    .addColumn('secret_ciphertext', 'text')
    .addColumn('disabled', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('is_fallback', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('is_byok_only', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('is_required', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('declared_zdr', 'integer')
    .addColumn('sort_order', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('allowed_api_key_hashes', 'text')
    .addColumn('allowed_models', 'text')
    .addColumn('allowed_user_ids', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text')
    .addColumn('deleted_at', 'text')
    .execute();
  await db.schema
    .createIndex('byok_workspace')
    .on('byok_credentials')
    .columns(['organization_id', 'workspace_id', 'created_at'])
    .execute();

  await db.schema
    .createTable('credit_ledger')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) =>
      c.notNull().references('organizations.id').onDelete('cascade'),
    )
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('amount_usd', 'double precision', (c) => c.notNull())
    .addColumn('note', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('credit_ledger_org').on('credit_ledger').column('organization_id').execute();

  await db.schema
    .createTable('usage_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'text')
    .addColumn('user_id', 'text')
    .addColumn('model', 'text')
    .addColumn('provider', 'text')
    .addColumn('cost_usd', 'double precision', (c) => c.notNull())
    .addColumn('is_byok', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('usage_events_key')
    .on('usage_events')
    .columns(['key_hash', 'created_at'])
    .execute();
  await db.schema
    .createIndex('usage_events_org')
    .on('usage_events')
    .columns(['organization_id', 'created_at'])
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  for (const t of [
    'usage_events',
    'credit_ledger',
    'byok_credentials',
    'guardrail_member_assignments',
    'guardrail_key_assignments',
    'guardrails',
    'api_keys',
    'workspace_budgets',
    'workspace_members',
    'workspaces',
    'org_members',
    'users',
    'organizations',
    'settings',
  ]) {
    await db.schema.dropTable(t).ifExists().execute();
  }
}
