import type { Db } from '../db/connection.js';
import { badRequest, conflict, notFound } from '../lib/errors.js';
import { newId } from '../lib/ids.js';
import { nowIso } from '../lib/time.js';
import * as orgs from './organizations.store.js';
import { DEFAULT_CONTENT_RETENTION_DAYS } from './workspaces.service.js';
import * as workspaces from './workspaces.store.js';

export const ORG_ROLES = ['owner', 'admin', 'member'] as const;
/** Organization roles on the wire (GET /organization/members): owners and admins are org:admin. */
export const ORG_MEMBER_ROLES = ['org:admin', 'org:member'] as const;
export type OrgMemberRole = (typeof ORG_MEMBER_ROLES)[number];
const wireRole = (role: orgs.OrgRole): OrgMemberRole => (role === 'member' ? 'org:member' : 'org:admin');

export interface NewUser {
  email: string;
  organization_id: string;
  role: orgs.OrgRole;
  interns_programme?: boolean;
  first_name?: string | null;
  last_name?: string | null;
}

/** Organizations, users and organization membership (the operator's side of tenancy). */
export class OrganizationsService {
  constructor(private readonly db: Db) {}

  /** Creates an organization and its default workspace, in one transaction. */
  async create(name: string) {
    const now = nowIso();
    const org = { id: newId(), name, created_at: now };
    const workspace: workspaces.WorkspaceRow = {
      id: newId(),
      organization_id: org.id,
      name: 'Default Workspace',
      slug: 'default',
      description: null,
      is_default: 1,
      default_text_model: null,
      default_image_model: null,
      default_provider_sort: null,
      disabled_server_tools: null,
      io_logging_api_key_ids: null,
      io_logging_sampling_rate: 1,
      is_data_discount_logging_enabled: 0,
      is_observability_broadcast_enabled: 0,
      is_observability_io_logging_enabled: 0,
      include_byok_in_budgets: 0,
      content_logging: 0,
      content_retention_days: DEFAULT_CONTENT_RETENTION_DAYS,
      video_callback_url: null,
      webhook_secret_ciphertext: null,
      created_by: null,
      created_at: now,
      updated_at: now,
    };
    await this.db.transaction().execute(async (tx) => {
      await orgs.insertOrganization(tx, org);
      await workspaces.insertWorkspace(tx, workspace);
    });
    return { ...org, default_workspace_id: workspace.id };
  }

  async list() {
    const rows = await orgs.listOrganizations(this.db);
    const out = [];
    for (const o of rows) {
      const ws = await workspaces.findDefaultWorkspace(this.db, o.id);
      out.push({ ...o, default_workspace_id: ws?.id ?? null });
    }
    return out;
  }

  async get(id: string) {
    const org = await orgs.findOrganization(this.db, id);
    if (!org) throw notFound('Organization');
    return org;
  }

  /**
   * Creates a user (or finds one by email) and makes them a member of the organization.
   * 409 when they are already a member there.
   */
  async addUser(input: NewUser) {
    if (!(ORG_ROLES as readonly string[]).includes(input.role)) {
      throw badRequest(`role must be one of ${ORG_ROLES.join(', ')}`);
    }
    const org = await orgs.findOrganization(this.db, input.organization_id);
    if (!org) throw badRequest('organization_id does not name an organization');
    const email = input.email.trim().toLowerCase();
    const now = nowIso();
    return this.db.transaction().execute(async (tx) => {
      let user = await orgs.findUserByEmail(tx, email);
      if (!user) {
        user = {
          id: newId(),
          email,
          first_name: input.first_name ?? null,
          last_name: input.last_name ?? null,
          interns_programme: input.interns_programme ? 1 : 0,
          created_at: now,
        };
        await orgs.insertUser(tx, user);
      } else if (await orgs.findMember(tx, org.id, user.id)) {
        throw conflict('That user is already a member of this organization');
      }
      await orgs.insertMember(tx, {
        organization_id: org.id,
        user_id: user.id,
        role: input.role,
        created_at: now,
      });
      return {
        id: user.id,
        email: user.email,
        first_name: user.first_name,
        last_name: user.last_name,
        organization_id: org.id,
        role: input.role,
        interns_programme: user.interns_programme === 1,
        created_at: user.created_at,
      };
    });
  }

  /** Organization ids the user belongs to. */
  async organizationsOfUser(userId: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom('org_members')
      .select('organization_id')
      .where('user_id', '=', userId)
      .execute();
    return rows.map((r) => r.organization_id);
  }

  isMember = (organizationId: string, userId: string) => orgs.findMember(this.db, organizationId, userId);
  membersAmong = (organizationId: string, userIds: string[]) =>
    orgs.membersAmong(this.db, organizationId, userIds);

  /** The operator's view of an organization's members: their stored role and programme flag. */
  async listUsers(organizationId: string, page: { offset: number; limit: number }) {
    await this.get(organizationId);
    const [rows, total] = await Promise.all([
      orgs.listMembers(this.db, organizationId, page),
      orgs.countMembers(this.db, organizationId),
    ]);
    return {
      data: rows.map((r) => ({
        id: r.id,
        email: r.email,
        first_name: r.first_name,
        last_name: r.last_name,
        organization_id: organizationId,
        role: r.role,
        interns_programme: r.interns_programme === 1,
        created_at: r.created_at,
      })),
      total_count: total,
    };
  }

  async listMembers(organizationId: string, page: { offset: number; limit: number }) {
    const [rows, total] = await Promise.all([
      orgs.listMembers(this.db, organizationId, page),
      orgs.countMembers(this.db, organizationId),
    ]);
    return {
      data: rows.map((r) => ({
        id: r.id,
        email: r.email,
        first_name: r.first_name,
        last_name: r.last_name,
        role: wireRole(r.role),
      })),
      total_count: total,
    };
  }
}
