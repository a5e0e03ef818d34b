import type { Caller } from '../accounts/caller.js';
import type { KeysService } from '../accounts/keys.service.js';
import type { WorkspacesService } from '../accounts/workspaces.service.js';
import type { InternsConfig } from '../config.js';
import type { Db } from '../db/connection.js';
import type { InternsTable } from '../db/schema.js';
import type { VaultService } from '../vault/service.js';
import type { Provisioner } from './provisioner.js';

export type InternRow = InternsTable & { archive_failed: number };

export interface InternsLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Interns: create (idempotent), lifecycle transitions, provisioning and the boot-time reconcile. */
export class InternsService {
  constructor(
    readonly deps: {
      db: Db;
      config: InternsConfig;
      vault: VaultService;
      provisioner: Provisioner;
      keys: KeysService;
      workspaces: WorkspacesService;
    },
  ) {}

  /** The intern `id` if the caller's workspace holds it; throws 404 `not_found` otherwise. */
  async visible(_caller: Caller, _id: string): Promise<InternRow> {
    throw new Error('InternsService.visible: not implemented yet');
  }

  /** The caller an intern's runs are billed to (its owner key), or null when that key is gone or disabled. */
  async ownerCaller(_internId: string): Promise<Caller | null> {
    throw new Error('InternsService.ownerCaller: not implemented yet');
  }

  /** Boot: reconciles statuses with this node's runtimes (GATEHOUSE_INTERNS_RUNTIMES=on). */
  async start(_log: InternsLog): Promise<void> {}

  /** Shutdown: stops provisioning loops and the runtimes of this node. */
  async close(): Promise<void> {
    await this.deps.provisioner.close();
  }
}
