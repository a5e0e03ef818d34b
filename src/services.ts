import { AdminService } from './accounts/admin.service.js';
import { KeysService } from './accounts/keys.service.js';
import { OrganizationsService } from './accounts/organizations.service.js';
import { WorkspacesService } from './accounts/workspaces.service.js';
import { ByokService } from './byok/service.js';
import type { Config } from './config.js';
import { BudgetsService } from './credits/budgets.service.js';
import { CreditsService } from './credits/service.js';
import { SpendTracker } from './credits/spend.js';
import { UsageService } from './credits/usage.service.js';
import type { DbHandle } from './db/connection.js';
import { GuardrailAssignmentsService } from './guardrails/assignments.service.js';
import { PolicyService } from './guardrails/policy.js';
import { GuardrailsService } from './guardrails/service.js';

/** The composition root: every domain service, wired once per process. */
export function buildServices(handle: DbHandle, config: Config) {
  const { db } = handle;
  const usage = new UsageService(db);
  // Hot-path caches of the routing engine: effective policies and spend counters.
  const policy = new PolicyService(db);
  const spend = new SpendTracker(db);
  const credits = new CreditsService(db, usage, spend);
  const orgs = new OrganizationsService(db);
  const workspaces = new WorkspacesService(db);
  const budgets = new BudgetsService(db, workspaces);
  const keys = new KeysService(db, workspaces, orgs, usage);
  const admin = new AdminService(orgs, keys, credits);
  const guardrails = new GuardrailsService(db, workspaces, policy);
  const guardrailAssignments = new GuardrailAssignmentsService(db, guardrails, keys, orgs, policy);
  const byok = new ByokService(db, config.masterKey, workspaces, keys, orgs);
  return {
    config,
    db,
    dialect: handle.dialect,
    guardrails,
    guardrailAssignments,
    usage,
    credits,
    orgs,
    workspaces,
    budgets,
    keys,
    admin,
    byok,
    policy,
    spend,
  };
}

export type Services = ReturnType<typeof buildServices>;
