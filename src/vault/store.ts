import { sql } from 'kysely';
import type { Db, Dialect } from '../db/connection.js';

/** SQL of vaults and their secrets. */

export interface VaultRow {
  id: string;
  workspace_id: string;
  owner_intern_id: string | null;
  hmac_key_sealed: string;
  created_at: string;
}

export async function insertVault(db: Db, row: VaultRow): Promise<void> {
  await db.insertInto('vaults').values(row).execute();
}

/** The private vault of an intern, if it has one. */
export async function vaultOfIntern(db: Db, internId: string): Promise<VaultRow | undefined> {
  return db.selectFrom('vaults').selectAll().where('owner_intern_id', '=', internId).executeTakeFirst();
}

export async function findVault(db: Db, workspaceId: string, id: string): Promise<VaultRow | undefined> {
  return db
    .selectFrom('vaults')
    .selectAll()
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
}

/** Deletes the intern's private vault; its secrets go with it (foreign key cascade). */
export async function deleteVaultOfIntern(db: Db, internId: string): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const ids = (
      await tx.selectFrom('vaults').select('id').where('owner_intern_id', '=', internId).execute()
    ).map((r) => r.id);
    if (ids.length === 0) return;
    await tx.deleteFrom('vault_secrets').where('vault_id', 'in', ids).execute();
    await tx.deleteFrom('vaults').where('id', 'in', ids).execute();
  });
}

/** Every secret row of the given vaults (sealed values). */
export async function secretRowsOf(db: Db, vaultIds: string[]) {
  if (vaultIds.length === 0) return [];
  return db
    .selectFrom('vault_secrets')
    .select(['vault_id', 'name', 'value_sealed', 'hosts_json', 'allow_http', 'ports_json'])
    .where('vault_id', 'in', vaultIds)
    .execute();
}

/** A stored secret as the API lists it (the sealed value left out). */
export interface SecretMeta {
  name: string;
  hosts_json: string | null;
  fingerprint: string | null;
  created_at: string;
  allow_http: number;
  ports_json: string | null;
}

/** The columns a listing returns. */
const META = ['name', 'hosts_json', 'fingerprint', 'created_at', 'allow_http', 'ports_json'] as const;

export interface SecretWrite {
  vault_id: string;
  name: string;
  value_sealed: string;
  hosts_json: string;
  fingerprint: string;
  allow_http: number;
  ports_json: string | null;
  at: string;
}

const byName = (dialect: Dialect) =>
  dialect === 'postgres' ? sql<string>`name collate "C"` : sql<string>`name`;

/** The workspace's own vault (owner_intern_id null), the oldest should two ever exist. */
export async function workspaceVault(db: Db, workspaceId: string): Promise<VaultRow | undefined> {
  return db
    .selectFrom('vaults')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('owner_intern_id', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .executeTakeFirst();
}

/** The intern as the vault routes see it: which workspace holds it, its owner, state and own vault. */
export async function findIntern(db: Db, internId: string) {
  return db
    .selectFrom('interns')
    .select(['id', 'workspace_id', 'organization_id', 'creator_user_id', 'status', 'vault_id'])
    .where('id', '=', internId)
    .executeTakeFirst();
}

/** One page of a vault's secrets by name; one row more than `limit` tells whether more follow. */
export async function listSecrets(
  db: Db,
  dialect: Dialect,
  vaultId: string,
  page: { offset: number; limit: number },
): Promise<SecretMeta[]> {
  return db
    .selectFrom('vault_secrets')
    .select(META)
    .where('vault_id', '=', vaultId)
    .orderBy(byName(dialect))
    .offset(page.offset)
    .limit(page.limit + 1)
    .execute();
}

/** The named secrets of a vault, sealed values included. */
export async function secretsNamed(db: Db, vaultId: string, names: string[]) {
  if (names.length === 0) return [];
  return db
    .selectFrom('vault_secrets')
    .select(['vault_id', 'name', 'value_sealed', 'hosts_json', 'fingerprint', 'allow_http', 'ports_json'])
    .where('vault_id', '=', vaultId)
    .where('name', 'in', names)
    .execute();
}

/** Creates or replaces a secret; a replaced one keeps its created_at. Returns what is stored. */
export async function upsertSecret(db: Db, w: SecretWrite): Promise<SecretMeta> {
  await db
    .insertInto('vault_secrets')
    .values({
      vault_id: w.vault_id,
      name: w.name,
      value_sealed: w.value_sealed,
      hosts_json: w.hosts_json,
      fingerprint: w.fingerprint,
      allow_http: w.allow_http,
      ports_json: w.ports_json,
      created_at: w.at,
      updated_at: w.at,
    })
    .onConflict((oc) =>
      oc.columns(['vault_id', 'name']).doUpdateSet({
        value_sealed: w.value_sealed,
        hosts_json: w.hosts_json,
        fingerprint: w.fingerprint,
        allow_http: w.allow_http,
        ports_json: w.ports_json,
        updated_at: w.at,
      }),
    )
    .execute();
  return db
    .selectFrom('vault_secrets')
    .select(META)
    .where('vault_id', '=', w.vault_id)
    .where('name', '=', w.name)
    .executeTakeFirstOrThrow();
}

/** Deletes one secret; false when there was none. */
export async function deleteSecret(db: Db, vaultId: string, name: string): Promise<boolean> {
  const r = await db
    .deleteFrom('vault_secrets')
    .where('vault_id', '=', vaultId)
    .where('name', '=', name)
    .executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}
