import type { Caller } from '../accounts/caller.js';
import type { Db } from '../db/connection.js';
import { ApiError, codedError } from '../lib/errors.js';
import { InternErrorCode } from './model.js';

const NO_ACTING_USER =
  'This key acts as the organization and has no member to act for; use a key created by a member';

/** The fields of an intern that decide who may see and act on it. */
export interface OwnedIntern {
  workspace_id: string;
  organization_id: string;
  creator_user_id: string;
}

/**
 * Who may do what with an intern (docs/interns.md, "Owners"):
 * - its owner (the member who created it) and the administrators of its workspace — organization
 *   owners and admins, and members whose role in that workspace is `admin` — read it and act on it
 *   (chat, update, provision, suspend, delete, write its vault);
 * - other members of the workspace neither see nor reach it: 404, as if it did not exist;
 * - a key acting as the organization (no user) reads every intern of its workspace but acts on
 *   none: 403 `no_acting_user`, whatever the intern.
 */
export class InternAccess {
  constructor(private readonly db: Db) {}

  /**
   * 403 for a key without a user: writes need a member to answer for them. The interns API names
   * the code (`no_acting_user`); the vault API keeps the standard envelope's integer code and says
   * it in `metadata.reason`.
   */
  requireUser(caller: Caller, envelope: 'named' | 'standard' = 'named'): void {
    if (caller.userId !== null) return;
    if (envelope === 'standard')
      throw new ApiError(403, NO_ACTING_USER, { reason: InternErrorCode.noActingUser });
    throw codedError(403, InternErrorCode.noActingUser, NO_ACTING_USER);
  }

  /** Whether the caller's member administers `workspaceId` (organization owner/admin or workspace admin). */
  async administers(caller: Caller, workspaceId: string): Promise<boolean> {
    if (caller.userId === null) return false;
    const org = await this.db
      .selectFrom('org_members')
      .select('role')
      .where('organization_id', '=', caller.organizationId)
      .where('user_id', '=', caller.userId)
      .executeTakeFirst();
    if (!org) return false;
    if (org.role === 'owner' || org.role === 'admin') return true;
    const ws = await this.db
      .selectFrom('workspace_members')
      .select('role')
      .where('workspace_id', '=', workspaceId)
      .where('user_id', '=', caller.userId)
      .executeTakeFirst();
    return ws?.role === 'admin';
  }

  /** Reads: the owner, the workspace's administrators, and keys acting as the organization. */
  async mayRead(caller: Caller, intern: OwnedIntern): Promise<boolean> {
    if (intern.organization_id !== caller.organizationId) return false;
    if (caller.userId === null || caller.userId === intern.creator_user_id) return true;
    return this.administers(caller, intern.workspace_id);
  }

  /** Actions: the owner and the workspace's administrators (a userless key is refused before this). */
  async mayAct(caller: Caller, intern: OwnedIntern): Promise<boolean> {
    if (intern.organization_id !== caller.organizationId || caller.userId === null) return false;
    if (caller.userId === intern.creator_user_id) return true;
    return this.administers(caller, intern.workspace_id);
  }
}
