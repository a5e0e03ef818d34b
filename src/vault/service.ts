import { randomBytes } from 'node:crypto';
import type { InternsConfig } from '../config.js';
import { fromJsonList, isUniqueViolation } from '../db/columns.js';
import type { Db } from '../db/connection.js';
import { decrypt, encrypt } from '../lib/crypto.js';
import { newId } from '../lib/ids.js';
import * as store from './store.js';

/** A secret as the egress layer uses it: decrypted, with the hosts it may be sent to. */
export interface UsableSecret {
  name: string;
  value: string;
  /** Exact hostnames; null on a legacy row (never released). */
  hosts: string[] | null;
}

/** The additional data binding a sealed value to its vault and name (so rows cannot be swapped). */
export const secretAad = (vaultId: string, name: string) => `vault-secret:${vaultId}:${name}`;
const vaultKeyAad = (vaultId: string) => `vault-key:${vaultId}`;

/**
 * Vaults: a workspace's secrets and each intern's private vault (digest §7). Values are sealed
 * under the master key and never returned; `fingerprint` is an HMAC under the vault's own key.
 */
export class VaultService {
  constructor(readonly deps: { db: Db; masterKey: Buffer; config: InternsConfig }) {}

  /** Creates the intern's private vault (idempotent: returns the existing one's id). */
  async createInternVault(workspaceId: string, internId: string): Promise<string> {
    const existing = await store.vaultOfIntern(this.deps.db, internId);
    if (existing) return existing.id;
    const id = newId();
    try {
      await store.insertVault(this.deps.db, {
        id,
        workspace_id: workspaceId,
        owner_intern_id: internId,
        hmac_key_sealed: encrypt(this.deps.masterKey, randomBytes(32).toString('base64'), vaultKeyAad(id)),
        created_at: new Date().toISOString(),
      });
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
    }
    return (await store.vaultOfIntern(this.deps.db, internId))?.id ?? id;
  }

  /** The intern owning vault `vaultId` in this workspace (for `vault_id` borrowing), or null. */
  async ownerOfVault(workspaceId: string, vaultId: string): Promise<string | null> {
    const row = await store.findVault(this.deps.db, workspaceId, vaultId);
    return row?.owner_intern_id ?? null;
  }

  /** Deletes the intern's private vault and its secrets (intern destroyed). */
  async deleteInternVault(internId: string): Promise<void> {
    await store.deleteVaultOfIntern(this.deps.db, internId);
  }

  /**
   * The secrets an intern's runtime may use: its own vault's and its attached (borrowed) vault's,
   * its own winning on a name both hold.
   */
  async secretsForIntern(internId: string): Promise<UsableSecret[]> {
    const intern = await this.deps.db
      .selectFrom('interns')
      .select(['vault_id', 'attached_vault_id'])
      .where('id', '=', internId)
      .executeTakeFirst();
    if (!intern) return [];
    const order = [intern.vault_id, intern.attached_vault_id].filter((v): v is string => v !== null);
    const rows = await store.secretRowsOf(this.deps.db, order);
    const byName = new Map<string, UsableSecret>();
    for (const vaultId of order) {
      for (const r of rows) {
        if (r.vault_id !== vaultId || byName.has(r.name)) continue;
        byName.set(r.name, {
          name: r.name,
          value: decrypt(this.deps.masterKey, r.value_sealed, secretAad(vaultId, r.name)),
          hosts: fromJsonList(r.hosts_json),
        });
      }
    }
    return [...byName.values()];
  }
}
