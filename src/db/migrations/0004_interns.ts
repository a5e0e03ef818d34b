import type { Kysely } from 'kysely';

/**
 * Interns, their create operations (idempotency), vaults and vault secrets. Times are ISO 8601 UTC
 * text like the management tables; chat sessions live in each runtime's working directory.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('interns')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('creator_user_id', 'text', (c) => c.notNull())
    // The key that created the intern: its runs are billed to it and checked by its guardrails.
    .addColumn('owner_key_hash', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('instructions', 'text')
    .addColumn('model', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('last_failure_message', 'text')
    // The active provisioning step (1-based) and its label; null once provisioning has settled.
    .addColumn('progress_step', 'integer')
    .addColumn('progress_total', 'integer')
    .addColumn('progress_label', 'text')
    .addColumn('hostname', 'text')
    .addColumn('vault_id', 'text')
    .addColumn('attached_vault_id', 'text')
    // The model resolved at the last provisioning (what the runtime runs; `model` edits wait for the next).
    .addColumn('provisioned_model', 'text')
    // Workspace archive failed on delete: only `acknowledge_workspace_loss: true` deletes it then.
    .addColumn('archive_failed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('interns_name')
    .on('interns')
    .columns(['workspace_id', 'creator_user_id', 'name'])
    .unique()
    .execute();
  await db.schema.createIndex('interns_hostname').on('interns').column('hostname').unique().execute();
  await db.schema
    .createIndex('interns_list')
    .on('interns')
    .columns(['workspace_id', 'created_at', 'id'])
    .execute();

  // One row per Idempotency-Key (given or derived) of a create: which intern it made, and whether
  // every step finished (a replay of a finished one answers 200; an unfinished one is resumed).
  await db.schema
    .createTable('intern_create_ops')
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('idempotency_key', 'text', (c) => c.notNull())
    .addColumn('body_hash', 'text', (c) => c.notNull())
    .addColumn('intern_id', 'text', (c) => c.notNull())
    .addColumn('done', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('intern_create_ops_pk', ['scope', 'idempotency_key'])
    .execute();

  // A workspace's vault has owner_intern_id null; an intern's private vault names its intern.
  await db.schema
    .createTable('vaults')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('owner_intern_id', 'text')
    // The vault's own HMAC key (fingerprints), sealed under the master key.
    .addColumn('hmac_key_sealed', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  // One private vault per intern (NULLs, the workspace vaults, are distinct in both dialects).
  await db.schema.createIndex('vaults_intern').on('vaults').column('owner_intern_id').unique().execute();
  await db.schema.createIndex('vaults_workspace').on('vaults').column('workspace_id').execute();

  await db.schema
    .createTable('vault_secrets')
    .addColumn('vault_id', 'text', (c) => c.notNull().references('vaults.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    // AES-256-GCM under the master key, bound to vault id + name.
    .addColumn('value_sealed', 'text', (c) => c.notNull())
    .addColumn('hosts_json', 'text')
    .addColumn('fingerprint', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('vault_secrets_pk', ['vault_id', 'name'])
    .execute();
}
