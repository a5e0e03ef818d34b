import type { CreditsService } from '../credits/service.js';
import { badRequest } from '../lib/errors.js';
import type { KeysService } from './keys.service.js';
import type { NewUser, OrganizationsService } from './organizations.service.js';

export interface AdminKeyInput {
  name: string;
  user_id?: string;
  organization_id?: string;
  workspace_id?: string;
  management?: boolean;
}

/** The operator's operations, shared by the admin HTTP API and the CLI. */
export class AdminService {
  constructor(
    private readonly orgs: OrganizationsService,
    private readonly keys: KeysService,
    private readonly credits: CreditsService,
  ) {}

  createOrganization = (name: string) => this.orgs.create(name);
  listOrganizations = () => this.orgs.list();
  createUser = (input: NewUser) => this.orgs.addUser(input);
  /** 404 when the organization does not exist. */
  listUsers = (organizationId: string, page: { offset: number; limit: number }) =>
    this.orgs.listUsers(organizationId, page);

  /** An organization's credit totals and its ledger page (404 when it does not exist). */
  async creditsOf(organizationId: string, page: { offset: number; limit: number }) {
    await this.orgs.get(organizationId);
    const [totals, ledger] = await Promise.all([
      this.credits.totals(organizationId),
      this.credits.ledger(organizationId, page),
    ]);
    return { ...ledger, ...totals };
  }

  /**
   * A key for a user (acting as that user in their organization) or for an organization
   * (`creator_user_id: null`). A user in several organizations must also name `organization_id`.
   */
  async createKey(input: AdminKeyInput) {
    let organizationId = input.organization_id;
    if (input.user_id) {
      const memberOf = await this.orgs.organizationsOfUser(input.user_id);
      if (memberOf.length === 0) throw badRequest('user_id does not name a member of any organization');
      if (organizationId === undefined) {
        if (memberOf.length > 1)
          throw badRequest('The user belongs to several organizations; pass organization_id');
        organizationId = memberOf[0];
      } else if (!memberOf.includes(organizationId)) {
        throw badRequest('The user is not a member of organization_id');
      }
    }
    if (!organizationId) throw badRequest('Pass user_id or organization_id');
    await this.orgs.get(organizationId).catch(() => {
      throw badRequest('organization_id does not name an organization');
    });
    const { row, key } = await this.keys.create(
      organizationId,
      { name: input.name, creator_user_id: input.user_id ?? null, workspace_id: input.workspace_id },
      { management: input.management ?? false },
    );
    return { data: { ...(await this.keys.view(row)), is_management_key: row.is_management === 1 }, key };
  }

  async addCredits(organizationId: string, amountUsd: number, note?: string | null) {
    await this.orgs.get(organizationId).catch(() => {
      throw badRequest('organization_id does not name an organization');
    });
    return this.credits.add(organizationId, amountUsd, { kind: 'purchase', note: note ?? null });
  }
}
