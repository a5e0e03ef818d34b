import type { Db } from '../db/connection.js';
import { forbidden } from '../lib/errors.js';
import type { Caller } from './caller.js';
import type { KeyRow } from './keys.store.js';
import * as orgs from './organizations.store.js';
import * as workspaces from './workspaces.store.js';

/**
 * What a management key may change in its organization:
 * - `organization`: a key the operator minted for the organization itself (no user) — everything;
 * - `owner`, `admin`: everything in the organization;
 * - `member`: only its own API keys; every other management write is refused.
 * null: the key's user is no longer a member of the organization — no writes at all.
 */
export type Authority = 'organization' | orgs.OrgRole;

export const ADMIN_ONLY = 'Only organization owners and admins can perform this operation';

/**
 * Role checks of management writes. The role is read from the membership on every write (not
 * cached with the key), so a changed role applies at once; management writes are rare.
 */
export class Roles {
  constructor(private readonly db: Db) {}

  async authorityOf(caller: Caller): Promise<Authority | null> {
    if (caller.userId === null) return 'organization';
    return (await orgs.findMember(this.db, caller.organizationId, caller.userId))?.role ?? null;
  }

  /** Refuses (403) callers that are not the organization, an owner or an admin. */
  async requireAdmin(caller: Caller): Promise<void> {
    const a = await this.authorityOf(caller);
    if (a !== 'organization' && a !== 'owner' && a !== 'admin') throw forbidden(ADMIN_ONLY);
  }

  /** Members change only the keys they created; owners, admins and the organization any key. */
  async requireKeyControl(caller: Caller, key: KeyRow): Promise<void> {
    const a = await this.authorityOf(caller);
    if (a === 'organization' || a === 'owner' || a === 'admin') return;
    if (a === 'member' && key.creator_user_id === caller.userId) return;
    throw forbidden('Organization members can only change API keys they created');
  }

  /**
   * Who a new key created by `caller` is attributed to. Nobody attributes a key to another user (the
   * operator API does that): `creator_user_id` may name only the caller's own user. A member's key is
   * always theirs (omitted means themselves), in a workspace they belong to; owners, admins and the
   * organization may also create keys acting as the organization (`creator_user_id` null or omitted).
   */
  async creatorFor(
    caller: Caller,
    requested: string | null | undefined,
    workspace: { id: string; is_default: number },
  ): Promise<string | null> {
    const a = await this.authorityOf(caller);
    if (a === null) throw forbidden('The key’s user is no longer a member of this organization');
    if (requested !== undefined && requested !== null && requested !== caller.userId) {
      throw forbidden('creator_user_id may only name the user of the calling management key');
    }
    if (a !== 'member') return requested ?? null;
    if (requested === null) {
      throw forbidden('Organization members cannot create keys that act as the organization');
    }
    const userId = caller.userId as string;
    if (
      workspace.is_default !== 1 &&
      !(await workspaces.findWorkspaceMember(this.db, workspace.id, userId))
    ) {
      throw forbidden('Organization members can only create keys in workspaces they belong to');
    }
    return userId;
  }
}
