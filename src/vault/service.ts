import type { InternsConfig } from '../config.js';
import type { Db } from '../db/connection.js';

/** A secret as the egress layer uses it: decrypted, with the hosts it may be sent to. */
export interface UsableSecret {
  name: string;
  value: string;
  /** Exact hostnames; null on a legacy row (never released). */
  hosts: string[] | null;
}

/**
 * Vaults: a workspace's secrets and each intern's private vault (digest §7). Values are sealed
 * under the master key and never returned; `fingerprint` is an HMAC under the vault's own key.
 */
export class VaultService {
  constructor(readonly deps: { db: Db; masterKey: Buffer; config: InternsConfig }) {}

  /** Creates the intern's private vault (idempotent: returns the existing one's id). */
  async createInternVault(_workspaceId: string, _internId: string): Promise<string> {
    throw new Error('VaultService.createInternVault: not implemented yet');
  }

  /** The intern owning vault `vaultId` in this workspace (for `vault_id` borrowing), or null. */
  async ownerOfVault(_workspaceId: string, _vaultId: string): Promise<string | null> {
    throw new Error('VaultService.ownerOfVault: not implemented yet');
  }

  /** Deletes the intern's private vault and its secrets (intern destroyed). */
  async deleteInternVault(_internId: string): Promise<void> {
    throw new Error('VaultService.deleteInternVault: not implemented yet');
  }

  /**
   * The secrets an intern's runtime may use: its own vault's and its attached (borrowed) vault's,
   * its own winning on a name both hold.
   */
  async secretsForIntern(_internId: string): Promise<UsableSecret[]> {
    throw new Error('VaultService.secretsForIntern: not implemented yet');
  }
}
