import type { Updateable } from 'kysely';
import { deleteWorkspaceFiles } from '../batches/openai-files-store.js';
import { deleteWorkspaceContents } from '../content-log/store.js';
import { fromJsonList, isForeignKeyViolation, isUniqueViolation } from '../db/columns.js';
import type { Db } from '../db/connection.js';
import type { WorkspacesTable } from '../db/schema.js';
import { CALLBACK_URL_MAX_LENGTH, httpsCallbackUrl } from '../lib/callback-url.js';
import { badRequest, conflict, notFound } from '../lib/errors.js';
import { defaultGuardrailId, derivedId, isUuid, newId } from '../lib/ids.js';
import { nowIso } from '../lib/time.js';
import type { Caller } from './caller.js';
import * as keysStore from './keys.store.js';
import * as orgsStore from './organizations.store.js';
import * as store from './workspaces.store.js';

export const PROVIDER_SORTS = ['price', 'throughput', 'latency', 'exacto'] as const;
export type ProviderSort = (typeof PROVIDER_SORTS)[number];
export const WORKSPACE_MEMBER_ROLES = ['admin', 'member'] as const;
export type WorkspaceMemberRole = (typeof WORKSPACE_MEMBER_ROLES)[number];

/** Lowercase alphanumeric segments joined by single hyphens. */
export const SLUG_PATTERN = '^[a-z0-9]+(-[a-z0-9]+)*$';
export const SLUG_MAX_LENGTH = 64;
export const SAMPLING_RATE_MIN = 0.0001;
/** Content logging's retention: 30 days unless the workspace says otherwise, at most a year. */
export const DEFAULT_CONTENT_RETENTION_DAYS = 30;
export const MAX_CONTENT_RETENTION_DAYS = 365;

export interface WorkspaceInput {
  name: string;
  slug: string;
  description?: string | null;
  default_text_model?: string | null;
  default_image_model?: string | null;
  default_provider_sort?: string | null;
  /** [] or null clears the list. */
  disabled_server_tools?: string[] | null;
  /** null = all keys. */
  io_logging_api_key_ids?: number[] | null;
  io_logging_sampling_rate?: number;
  is_data_discount_logging_enabled?: boolean;
  is_observability_broadcast_enabled?: boolean;
  is_observability_io_logging_enabled?: boolean;
  /** Keep the content of the workspace's generations (off by default). */
  content_logging?: boolean;
  content_retention_days?: number;
  /** Where the workspace's video jobs without a `callback_url` send their end (https); null clears it. */
  video_callback_url?: string | null;
}

export type WorkspacePatch = Partial<WorkspaceInput>;

interface Page {
  offset: number;
  limit: number;
}

/** The Workspace wire object (digest §5), plus `is_default`. */
export function workspaceView(row: store.WorkspaceRow) {
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    description: row.description,
    is_default: row.is_default === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
    created_by: row.created_by,
    default_guardrail_id: defaultGuardrailId(row.id),
    default_text_model: row.default_text_model,
    default_image_model: row.default_image_model,
    default_provider_sort: row.default_provider_sort,
    disabled_server_tools: fromJsonList<string>(row.disabled_server_tools),
    io_logging_api_key_ids: fromJsonList<number>(row.io_logging_api_key_ids),
    io_logging_sampling_rate: row.io_logging_sampling_rate,
    is_data_discount_logging_enabled: row.is_data_discount_logging_enabled === 1,
    is_observability_broadcast_enabled: row.is_observability_broadcast_enabled === 1,
    is_observability_io_logging_enabled: row.is_observability_io_logging_enabled === 1,
    include_byok_in_budgets: row.include_byok_in_budgets === 1,
    content_logging: row.content_logging === 1,
    content_retention_days: row.content_retention_days,
    video_callback_url: row.video_callback_url,
    // Whether the workspace's video job events are signed; the secret is shown only when made.
    has_webhook_secret: row.webhook_secret_ciphertext !== null,
  };
}
export type WorkspaceView = ReturnType<typeof workspaceView>;

/** Owners and admins of the organization are admins of its workspaces; members are members. */
export const memberRoleOf = (orgRole: string): WorkspaceMemberRole =>
  orgRole === 'member' ? 'member' : 'admin';

export function memberView(row: store.WorkspaceMemberRow) {
  return {
    id: row.id,
    workspace_id: row.workspace_id,
    user_id: row.user_id,
    role: memberRoleOf(row.role),
    created_at: row.created_at,
  };
}
export type WorkspaceMemberView = ReturnType<typeof memberView>;

const bool = (b: boolean) => (b ? 1 : 0);
const unique = (ids: string[]) => [...new Set(ids)];

/** Validates the fields present in `p` and maps them to columns. */
function columnsOf(p: WorkspacePatch): Updateable<WorkspacesTable> {
  const out: Updateable<WorkspacesTable> = {};
  if (p.name !== undefined) {
    const name = p.name.trim();
    if (name.length === 0) throw badRequest('name must not be empty');
    out.name = name;
  }
  if (p.slug !== undefined) {
    if (p.slug.length > SLUG_MAX_LENGTH || !new RegExp(SLUG_PATTERN).test(p.slug)) {
      throw badRequest(
        `slug must be at most ${SLUG_MAX_LENGTH} characters of lowercase letters and digits in segments joined by single hyphens (e.g. "team-a")`,
      );
    }
    // Refs are resolved as ids when UUID-shaped, so such a slug could never be looked up.
    if (isUuid(p.slug)) throw badRequest('slug must not have the form of a UUID');
    out.slug = p.slug;
  }
  if (p.description !== undefined) out.description = p.description;
  if (p.default_text_model !== undefined) out.default_text_model = p.default_text_model;
  if (p.default_image_model !== undefined) out.default_image_model = p.default_image_model;
  if (p.default_provider_sort !== undefined) {
    const sort = p.default_provider_sort;
    if (sort !== null && !(PROVIDER_SORTS as readonly string[]).includes(sort)) {
      throw badRequest(`default_provider_sort must be one of ${PROVIDER_SORTS.join(', ')} or null`);
    }
    out.default_provider_sort = sort;
  }
  if (p.disabled_server_tools !== undefined) {
    const tools = p.disabled_server_tools;
    if (tools?.some((t) => t.trim().length === 0)) {
      throw badRequest('disabled_server_tools must not contain empty names');
    }
    out.disabled_server_tools = tools && tools.length > 0 ? JSON.stringify(unique(tools)) : null;
  }
  if (p.io_logging_api_key_ids !== undefined) {
    const ids = p.io_logging_api_key_ids;
    if (ids?.some((i) => !Number.isSafeInteger(i))) {
      throw badRequest('io_logging_api_key_ids must be integers');
    }
    out.io_logging_api_key_ids = ids === null ? null : JSON.stringify([...new Set(ids)]);
  }
  if (p.io_logging_sampling_rate !== undefined) {
    const rate = p.io_logging_sampling_rate;
    if (!Number.isFinite(rate) || rate < SAMPLING_RATE_MIN || rate > 1) {
      throw badRequest(`io_logging_sampling_rate must be between ${SAMPLING_RATE_MIN} and 1`);
    }
    out.io_logging_sampling_rate = rate;
  }
  if (p.is_data_discount_logging_enabled !== undefined) {
    out.is_data_discount_logging_enabled = bool(p.is_data_discount_logging_enabled);
  }
  if (p.is_observability_broadcast_enabled !== undefined) {
    out.is_observability_broadcast_enabled = bool(p.is_observability_broadcast_enabled);
  }
  if (p.is_observability_io_logging_enabled !== undefined) {
    out.is_observability_io_logging_enabled = bool(p.is_observability_io_logging_enabled);
  }
  if (p.content_logging !== undefined) out.content_logging = bool(p.content_logging);
  if (p.content_retention_days !== undefined) {
    const days = p.content_retention_days;
    if (!Number.isInteger(days) || days < 1 || days > MAX_CONTENT_RETENTION_DAYS) {
      throw badRequest(
        `content_retention_days must be a whole number from 1 to ${MAX_CONTENT_RETENTION_DAYS}`,
      );
    }
    out.content_retention_days = days;
  }
  if (p.video_callback_url !== undefined) {
    const url = p.video_callback_url === null ? null : httpsCallbackUrl(p.video_callback_url);
    if (p.video_callback_url !== null && url === null) {
      throw badRequest(
        `video_callback_url must be an https:// URL (at most ${CALLBACK_URL_MAX_LENGTH} characters) or null`,
      );
    }
    out.video_callback_url = url;
  }
  return out;
}

const slugConflict = (slug: string) =>
  conflict(`A workspace with slug ${JSON.stringify(slug)} already exists in this organization`);

/** Workspaces of an organization, their members and settings. */
export class WorkspacesService {
  private readonly changed: ((workspaceId: string) => void)[] = [];

  constructor(private readonly db: Db) {}

  /** Called after a workspace's settings changed or it was deleted (caches of them are dropped). */
  onChange(listener: (workspaceId: string) => void): void {
    this.changed.push(listener);
  }

  private announce(workspaceId: string): void {
    for (const l of this.changed) l(workspaceId);
  }

  view = workspaceView;

  /**
   * The workspace named by `ref` (UUID or slug) in the caller's organization, or the default
   * workspace when `ref` is omitted. An unknown or foreign workspace is a 400 (it is a parameter).
   */
  async resolve(caller: Pick<Caller, 'organizationId'>, ref?: string | null): Promise<store.WorkspaceRow> {
    if (ref === undefined || ref === null) {
      const ws = await store.findDefaultWorkspace(this.db, caller.organizationId);
      if (!ws) throw badRequest('The organization has no default workspace; pass workspace_id');
      return ws;
    }
    const ws = await store.findWorkspace(this.db, caller.organizationId, ref);
    if (!ws)
      throw badRequest(`workspace_id ${JSON.stringify(ref)} does not name a workspace of this organization`);
    return ws;
  }

  /** The workspace named by `ref` (UUID or slug) in the caller's organization; 404 otherwise. */
  async get(caller: Pick<Caller, 'organizationId'>, ref: string): Promise<store.WorkspaceRow> {
    const ws = await store.findWorkspace(this.db, caller.organizationId, ref);
    if (!ws) throw notFound('Workspace');
    return ws;
  }

  async list(caller: Pick<Caller, 'organizationId'>, page: Page) {
    const [rows, total] = await Promise.all([
      store.listWorkspaces(this.db, caller.organizationId, page),
      store.countWorkspaces(this.db, caller.organizationId),
    ]);
    return { data: rows.map(workspaceView), total_count: total };
  }

  /** Creates a workspace; the calling user (if the key has one) becomes its first member. */
  async create(
    caller: Pick<Caller, 'organizationId' | 'userId'>,
    input: WorkspaceInput,
  ): Promise<store.WorkspaceRow> {
    const cols = columnsOf(input);
    const now = nowIso();
    const row: store.WorkspaceRow = {
      id: newId(),
      organization_id: caller.organizationId,
      name: cols.name as string,
      slug: cols.slug as string,
      description: cols.description ?? null,
      is_default: 0,
      default_text_model: cols.default_text_model ?? null,
      default_image_model: cols.default_image_model ?? null,
      default_provider_sort: cols.default_provider_sort ?? null,
      disabled_server_tools: cols.disabled_server_tools ?? null,
      io_logging_api_key_ids: cols.io_logging_api_key_ids ?? null,
      io_logging_sampling_rate: cols.io_logging_sampling_rate ?? 1,
      is_data_discount_logging_enabled: cols.is_data_discount_logging_enabled ?? 0,
      is_observability_broadcast_enabled: cols.is_observability_broadcast_enabled ?? 0,
      is_observability_io_logging_enabled: cols.is_observability_io_logging_enabled ?? 0,
      include_byok_in_budgets: 0,
      content_logging: cols.content_logging ?? 0,
      content_retention_days: cols.content_retention_days ?? DEFAULT_CONTENT_RETENTION_DAYS,
      video_callback_url: cols.video_callback_url ?? null,
      webhook_secret_ciphertext: null,
      created_by: caller.userId,
      created_at: now,
      updated_at: now,
    };
    if (await store.slugTaken(this.db, caller.organizationId, row.slug)) throw slugConflict(row.slug);
    try {
      await this.db.transaction().execute(async (tx) => {
        await store.insertWorkspace(tx, row);
        if (caller.userId === null) return;
        const role = (await store.orgRolesOf(tx, caller.organizationId, [caller.userId])).get(caller.userId);
        if (role === undefined) return;
        await store.insertWorkspaceMember(tx, {
          id: newId(),
          workspace_id: row.id,
          user_id: caller.userId,
          role: memberRoleOf(role),
          created_at: now,
        });
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw slugConflict(row.slug);
      throw err;
    }
    return row;
  }

  async update(
    caller: Pick<Caller, 'organizationId'>,
    ref: string,
    patch: WorkspacePatch,
  ): Promise<store.WorkspaceRow> {
    const ws = await this.get(caller, ref);
    const cols = { ...columnsOf(patch), updated_at: nowIso() };
    if (
      cols.slug !== undefined &&
      cols.slug !== ws.slug &&
      (await store.slugTaken(this.db, caller.organizationId, cols.slug, ws.id))
    ) {
      throw slugConflict(cols.slug);
    }
    try {
      await store.updateWorkspace(this.db, ws.id, cols);
    } catch (err) {
      if (isUniqueViolation(err)) throw slugConflict(cols.slug ?? ws.slug);
      throw err;
    }
    this.announce(ws.id);
    const next = await store.findWorkspace(this.db, caller.organizationId, ws.id);
    if (!next) throw notFound('Workspace');
    return next;
  }

  /**
   * Deletes a workspace with its members, budgets, guardrails, disabled keys, kept content and uploaded files. Active keys block
   * it; the default workspace also needs `confirmDefault`.
   */
  async delete(caller: Pick<Caller, 'organizationId'>, ref: string, confirmDefault = false): Promise<void> {
    const ws = await this.get(caller, ref);
    if (ws.is_default === 1 && !confirmDefault) {
      throw badRequest(
        'This is the default workspace of the organization; pass confirm_default_workspace_deletion=true to delete it',
      );
    }
    const activeKeys = (n: number) =>
      badRequest(
        `The workspace still has ${n} active API key(s); disable or delete them before deleting the workspace`,
      );
    try {
      await this.db.transaction().execute(async (tx) => {
        if (!(await store.lockWorkspace(tx, ws.id))) throw notFound('Workspace');
        const active = await keysStore.countKeysInWorkspace(tx, ws.id, true);
        if (active > 0) throw activeKeys(active);
        await store.deleteDisabledKeysOfWorkspace(tx, ws.id);
        await deleteWorkspaceContents(tx, ws.id);
        await deleteWorkspaceFiles(tx, ws.id);
        await store.deleteWorkspace(tx, ws.id);
      });
      this.announce(ws.id);
    } catch (err) {
      // A key created in the workspace while it was being deleted.
      if (isForeignKeyViolation(err)) {
        throw activeKeys(await keysStore.countKeysInWorkspace(this.db, ws.id, true));
      }
      throw err;
    }
  }

  /** Members of a workspace; for the default workspace, every member of the organization. */
  async listMembers(
    caller: Pick<Caller, 'organizationId'>,
    ref: string,
    page: Page,
  ): Promise<{ data: WorkspaceMemberView[]; total_count: number }> {
    const ws = await this.get(caller, ref);
    if (ws.is_default === 1) {
      const [rows, total] = await Promise.all([
        store.listOrgMembersForWorkspace(this.db, caller.organizationId, page),
        orgsStore.countMembers(this.db, caller.organizationId),
      ]);
      return {
        data: rows.map((r) =>
          memberView({
            id: derivedId('workspace-member', `${ws.id}:${r.user_id}`),
            workspace_id: ws.id,
            user_id: r.user_id,
            role: r.role,
            created_at: r.created_at,
          }),
        ),
        total_count: total,
      };
    }
    const [rows, total] = await Promise.all([
      store.listWorkspaceMembers(this.db, ws.id, page),
      store.countWorkspaceMembers(this.db, ws.id),
    ]);
    return { data: rows.map(memberView), total_count: total };
  }

  /**
   * Adds organization members to a workspace with their organization role. Users outside the
   * organization make the whole call a 400; existing members are skipped. On the default workspace
   * (where everyone is a member) nothing is added.
   */
  async addMembers(caller: Pick<Caller, 'organizationId'>, ref: string, userIds: string[]) {
    const ws = await this.get(caller, ref);
    const ids = unique(userIds);
    const roles = await store.orgRolesOf(this.db, caller.organizationId, ids);
    const outsiders = ids.filter((id) => !roles.has(id));
    if (outsiders.length > 0) {
      throw badRequest(`Not members of this organization: ${outsiders.join(', ')}`, { user_ids: outsiders });
    }
    if (ws.is_default === 1) return { added_count: 0, data: [] as WorkspaceMemberView[] };
    const now = nowIso();
    const added: store.WorkspaceMemberRow[] = [];
    await this.db.transaction().execute(async (tx) => {
      for (const userId of ids) {
        const row = {
          id: newId(),
          workspace_id: ws.id,
          user_id: userId,
          role: memberRoleOf(roles.get(userId) as string),
          created_at: now,
        };
        if (await store.addWorkspaceMember(tx, row)) added.push(row);
      }
    });
    return { added_count: added.length, data: added.map(memberView) };
  }

  /**
   * Removes members from a workspace. Members who still have active keys there make the whole call
   * a 400; users who are not members are skipped. The default workspace always holds everyone.
   */
  async removeMembers(caller: Pick<Caller, 'organizationId'>, ref: string, userIds: string[]) {
    const ws = await this.get(caller, ref);
    if (ws.is_default === 1) {
      throw badRequest(
        'Members of the organization are always members of its default workspace and cannot be removed from it',
      );
    }
    const ids = unique(userIds);
    return this.db.transaction().execute(async (tx) => {
      if (!(await store.lockWorkspace(tx, ws.id))) throw notFound('Workspace');
      const present = [...(await store.workspaceMembersAmong(tx, ws.id, ids))];
      const blocked: string[] = [];
      for (const userId of present) {
        if ((await keysStore.countKeysOfUserInWorkspace(tx, ws.id, userId)) > 0) blocked.push(userId);
      }
      if (blocked.length > 0) {
        throw badRequest(
          `These members still have active API keys in this workspace; disable or delete those keys first: ${blocked.join(', ')}`,
          { user_ids: blocked },
        );
      }
      return { removed_count: await store.deleteWorkspaceMembers(tx, ws.id, present) };
    });
  }

  /**
   * For workspace budgets: inside the caller's transaction `tx`, locks the workspace row (so
   * concurrent budget writes serialize) and sets `include_byok_in_budgets` when given.
   * Returns the flag's value after the call.
   */
  async lockForBudgets(tx: Db, workspaceId: string, includeByok?: boolean): Promise<boolean> {
    if (includeByok !== undefined) {
      await store.updateWorkspace(tx, workspaceId, {
        include_byok_in_budgets: bool(includeByok),
        updated_at: nowIso(),
      });
    }
    if (!(await store.lockWorkspace(tx, workspaceId))) throw notFound('Workspace');
    const ws = await store.findWorkspaceById(tx, workspaceId);
    if (!ws) throw notFound('Workspace');
    return ws.include_byok_in_budgets === 1;
  }
}
