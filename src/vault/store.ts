import type { Db } from '../db/connection.js';

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
    .select(['vault_id', 'name', 'value_sealed', 'hosts_json'])
    .where('vault_id', 'in', vaultIds)
    .execute();
}
