import type { Caller } from '../accounts/caller.js';
import type { KeysService } from '../accounts/keys.service.js';
import type { OrganizationsService } from '../accounts/organizations.service.js';
import type { Db } from '../db/connection.js';
import { badRequest, notFound } from '../lib/errors.js';
import { newId } from '../lib/ids.js';
import { nowIso } from '../lib/time.js';
import * as store from './assignments.store.js';
import { unique } from './fields.js';
import type { GuardrailsService } from './service.js';
import { findGuardrail } from './store.js';

type Who = Pick<Caller, 'organizationId' | 'userId'>;
type Org = Pick<Caller, 'organizationId'>;
type Page = { offset: number; limit: number };

/** Ids are named in error messages up to this many; all of them are in the error's metadata. */
const NAMED = 10;
const LOOKUP_CHUNK = 500;

function named(ids: string[]): string {
  const shown = ids.slice(0, NAMED).join(', ');
  return ids.length > NAMED ? `${shown} and ${ids.length - NAMED} more` : shown;
}

async function inChunks<T>(ids: string[], lookup: (part: string[]) => Promise<Iterable<T>>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < ids.length; i += LOOKUP_CHUNK)
    out.push(...(await lookup(ids.slice(i, i + LOOKUP_CHUNK))));
  return out;
}

/**
 * Which API keys and organization members a guardrail applies to. A key holds at most one
 * guardrail (assigning moves it); a member may hold several. A bulk request naming anything that is
 * not an API key / member of the organization is rejected whole (400), changing nothing.
 */
export class GuardrailAssignmentsService {
  constructor(
    private readonly db: Db,
    private readonly guardrails: GuardrailsService,
    private readonly keys: KeysService,
    private readonly orgs: OrganizationsService,
    /** Told after every write, so cached effective policies are dropped (PolicyService). */
    private readonly policy?: { invalidate(): void },
  ) {}

  /** Key assignments of one guardrail (404 if it is not the caller's), or of the whole organization. */
  async listKeys(caller: Org, page: Page, guardrailId?: string) {
    const scope = await this.scope(caller, guardrailId);
    const [data, total] = await Promise.all([
      store.listKeyAssignments(this.db, scope, page),
      store.countKeyAssignments(this.db, scope),
    ]);
    return { data, total_count: total };
  }

  async listMembers(caller: Org, page: Page, guardrailId?: string) {
    const scope = await this.scope(caller, guardrailId);
    const [data, total] = await Promise.all([
      store.listMemberAssignments(this.db, scope, page),
      store.countMemberAssignments(this.db, scope),
    ]);
    return { data, total_count: total };
  }

  /** Returns how many keys were newly assigned or moved here from another guardrail. */
  async assignKeys(caller: Who, guardrailId: string, hashes: string[]): Promise<number> {
    const guardrail = await this.guardrails.get(caller, guardrailId);
    const wanted = unique(hashes);
    const keys = await this.apiKeys(caller.organizationId, wanted);
    this.rejectUnknownKeys(wanted.filter((h) => !keys.has(h)));
    if (guardrail.workspace_id !== null) {
      const elsewhere = wanted.filter((h) => keys.get(h) !== guardrail.workspace_id);
      if (elsewhere.length > 0) {
        throw badRequest(
          `Keys outside the guardrail's workspace ${guardrail.workspace_id}: ${named(elsewhere)}`,
          { key_hashes_in_other_workspaces: elsewhere },
        );
      }
    }
    const now = nowIso();
    const rows = wanted.map((key_hash) => ({
      id: newId(),
      guardrail_id: guardrail.id,
      organization_id: caller.organizationId,
      key_hash,
      assigned_by: caller.userId,
      created_at: now,
    }));
    return this.written(
      this.db.transaction().execute(async (tx) => {
        await this.stillThere(tx, caller, guardrail.id);
        return store.upsertKeyAssignments(tx, rows);
      }),
    );
  }

  /**
   * Returns how many of the keys were removed from the guardrail. Keys of the organization that are
   * not on it count 0; hashes that are neither keys of the organization nor on it are a 400.
   */
  async unassignKeys(caller: Org, guardrailId: string, hashes: string[]): Promise<number> {
    const guardrail = await this.guardrails.get(caller, guardrailId);
    const wanted = unique(hashes);
    const assigned = await store.keysAssignedTo(this.db, guardrail.id, wanted);
    const keys = await this.apiKeys(
      caller.organizationId,
      wanted.filter((h) => !assigned.has(h)),
    );
    this.rejectUnknownKeys(wanted.filter((h) => !assigned.has(h) && !keys.has(h)));
    return this.written(
      this.db.transaction().execute((tx) => store.deleteKeyAssignments(tx, guardrail.id, wanted)),
    );
  }

  /** Returns how many members were newly assigned (members already on the guardrail count 0). */
  async assignMembers(caller: Who, guardrailId: string, userIds: string[]): Promise<number> {
    const guardrail = await this.guardrails.get(caller, guardrailId);
    const wanted = unique(userIds);
    const members = await this.members(caller.organizationId, wanted);
    this.rejectNonMembers(wanted.filter((u) => !members.has(u)));
    const now = nowIso();
    const rows = wanted.map((user_id) => ({
      id: newId(),
      guardrail_id: guardrail.id,
      organization_id: caller.organizationId,
      user_id,
      assigned_by: caller.userId,
      created_at: now,
    }));
    return this.written(
      this.db.transaction().execute(async (tx) => {
        await this.stillThere(tx, caller, guardrail.id);
        return store.insertMemberAssignments(tx, rows);
      }),
    );
  }

  /**
   * Returns how many members were removed from the guardrail. An assigned user can always be removed
   * (even after leaving the organization); others must be members of the organization.
   */
  async unassignMembers(caller: Org, guardrailId: string, userIds: string[]): Promise<number> {
    const guardrail = await this.guardrails.get(caller, guardrailId);
    const wanted = unique(userIds);
    const assigned = await store.membersAssignedTo(this.db, guardrail.id, wanted);
    const members = await this.members(
      caller.organizationId,
      wanted.filter((u) => !assigned.has(u)),
    );
    this.rejectNonMembers(wanted.filter((u) => !assigned.has(u) && !members.has(u)));
    return this.written(
      this.db.transaction().execute((tx) => store.deleteMemberAssignments(tx, guardrail.id, wanted)),
    );
  }

  /** Awaits a committed write, then drops cached effective policies. */
  private async written<T>(write: Promise<T>): Promise<T> {
    const result = await write;
    this.policy?.invalidate();
    return result;
  }

  /** Re-checks, inside the writing transaction, that the guardrail was not deleted meanwhile. */
  private async stillThere(tx: Db, caller: Org, guardrailId: string): Promise<void> {
    if (!(await findGuardrail(tx, caller.organizationId, guardrailId))) throw notFound('Guardrail');
  }

  private async scope(caller: Org, guardrailId?: string) {
    if (guardrailId === undefined) return { organizationId: caller.organizationId };
    const guardrail = await this.guardrails.get(caller, guardrailId);
    return { organizationId: caller.organizationId, guardrailId: guardrail.id };
  }

  /** API keys (not management keys) of the organization among `hashes`: hash → workspace id. */
  private async apiKeys(organizationId: string, hashes: string[]): Promise<Map<string, string>> {
    const rows = await inChunks(hashes, (part) => this.keys.among(organizationId, part));
    return new Map(rows.filter((k) => k.is_management === 0).map((k) => [k.hash, k.workspace_id]));
  }

  private async members(organizationId: string, userIds: string[]): Promise<Set<string>> {
    return new Set(await inChunks(userIds, (part) => this.orgs.membersAmong(organizationId, part)));
  }

  private rejectUnknownKeys(unknown: string[]): void {
    if (unknown.length === 0) return;
    throw badRequest(`Not API keys of this organization: ${named(unknown)}`, {
      unknown_key_hashes: unknown,
    });
  }

  private rejectNonMembers(nonMembers: string[]): void {
    if (nonMembers.length === 0) return;
    throw badRequest(`Not members of this organization: ${named(nonMembers)}`, {
      unknown_member_user_ids: nonMembers,
    });
  }
}
