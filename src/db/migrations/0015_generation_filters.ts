import { type Kysely, sql } from 'kysely';

/**
 * Indexes for the generations list (GET /generations) and the activity analytics. Every list reads
 * one organization newest first, keyset-paginated on (created_at, id), so each index leads with
 * organization_id and ends with created_at, id: a filtered page is one index range walk, stopped
 * after `limit` rows, whatever the organization's history.
 *
 * - `generations_org` (organization_id, created_at) gives way to the same columns plus id, the
 *   cursor's tie-break (no sort step for rows of one millisecond);
 * - key, user, workspace, provider: one index each (selective equality filters);
 * - model: on coalesce(model, requested_model), the model the generation view shows (a call that
 *   failed before routing has no served model);
 * - status: partial, on the rows that are not successes — errors and cancellations are the few an
 *   operator looks for; "success" is most rows and walks the organization index.
 * Streamed, lane and cost filters are not indexed: they split rows into large shares, so checking
 * them along the organization walk finds a page as fast as an index would, and each index is one
 * more B-tree insertion on every call.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  const index = (name: string, columns: string[]) =>
    db.schema.createIndex(name).on('generations').columns(columns).execute();
  await index('generations_org_time', ['organization_id', 'created_at', 'id']);
  await db.schema.dropIndex('generations_org').ifExists().execute();
  await index('generations_org_key', ['organization_id', 'key_hash', 'created_at', 'id']);
  await index('generations_org_user', ['organization_id', 'user_id', 'created_at', 'id']);
  await index('generations_org_workspace', ['organization_id', 'workspace_id', 'created_at', 'id']);
  await index('generations_org_provider', ['organization_id', 'provider', 'created_at', 'id']);
  await sql`create index generations_org_model on generations (organization_id, (coalesce(model, requested_model)), created_at, id)`.execute(
    db,
  );
  await db.schema
    .createIndex('generations_org_status')
    .on('generations')
    .columns(['organization_id', 'status', 'created_at', 'id'])
    .where('status', '<>', 'success')
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  for (const name of [
    'generations_org_status',
    'generations_org_model',
    'generations_org_provider',
    'generations_org_workspace',
    'generations_org_user',
    'generations_org_key',
  ])
    await db.schema.dropIndex(name).ifExists().execute();
  await db.schema
    .createIndex('generations_org')
    .on('generations')
    .columns(['organization_id', 'created_at'])
    .execute();
  await db.schema.dropIndex('generations_org_time').ifExists().execute();
}
