/**
 * Every audited write route, by Fastify's route id (`METHOD url`), and what its events say. One
 * table rather than a line in each route's config, so the whole catalogue of audited actions reads
 * in one place; test/reliability/authorization.test.ts fails for a management, operator or vault
 * write route that is in neither this table nor NOT_AUDITED.
 */
export interface AuditedRoute {
  /** `resource.verb`, e.g. `key.create`. */
  action: string;
  resource: string;
  /**
   * A GET route (same parameters) whose answer is the resource's state before the write, read with
   * the caller's own credentials just before the handler runs. Omitted: no before state (creates).
   */
  before?: string;
  /** The route parameters that name the resource, joined with `/` (default `id`, else the created object's id). */
  id?: string[];
}

const P = '/api/v1';

export const AUDITED: Record<string, AuditedRoute> = {
  // Management API (management keys).
  [`POST ${P}/guardrails`]: { action: 'guardrail.create', resource: 'guardrail' },
  [`PATCH ${P}/guardrails/:id`]: {
    action: 'guardrail.update',
    resource: 'guardrail',
    before: '/guardrails/:id',
  },
  [`DELETE ${P}/guardrails/:id`]: {
    action: 'guardrail.delete',
    resource: 'guardrail',
    before: '/guardrails/:id',
  },
  [`POST ${P}/guardrails/:id/assignments/keys`]: {
    action: 'guardrail.assign_keys',
    resource: 'guardrail',
    before: '/guardrails/:id/assignments/keys',
  },
  [`POST ${P}/guardrails/:id/assignments/keys/remove`]: {
    action: 'guardrail.unassign_keys',
    resource: 'guardrail',
    before: '/guardrails/:id/assignments/keys',
  },
  [`POST ${P}/guardrails/:id/assignments/members`]: {
    action: 'guardrail.assign_members',
    resource: 'guardrail',
    before: '/guardrails/:id/assignments/members',
  },
  [`POST ${P}/guardrails/:id/assignments/members/remove`]: {
    action: 'guardrail.unassign_members',
    resource: 'guardrail',
    before: '/guardrails/:id/assignments/members',
  },
  [`POST ${P}/keys`]: { action: 'key.create', resource: 'key' },
  [`PATCH ${P}/keys/:hash`]: { action: 'key.update', resource: 'key', before: '/keys/:hash', id: ['hash'] },
  [`DELETE ${P}/keys/:hash`]: { action: 'key.delete', resource: 'key', before: '/keys/:hash', id: ['hash'] },
  // Presets (API keys, in their own workspace).
  [`POST ${P}/presets/:slug/chat/completions`]: {
    action: 'preset.save',
    resource: 'preset',
    before: '/presets/:slug',
    id: ['slug'],
  },
  [`POST ${P}/presets/:slug/messages`]: {
    action: 'preset.save',
    resource: 'preset',
    before: '/presets/:slug',
    id: ['slug'],
  },
  [`POST ${P}/presets/:slug/responses`]: {
    action: 'preset.save',
    resource: 'preset',
    before: '/presets/:slug',
    id: ['slug'],
  },
  [`DELETE ${P}/presets/:slug`]: {
    action: 'preset.delete',
    resource: 'preset',
    before: '/presets/:slug',
    id: ['slug'],
  },
  [`POST ${P}/workspaces`]: { action: 'workspace.create', resource: 'workspace' },
  [`PATCH ${P}/workspaces/:id`]: {
    action: 'workspace.update',
    resource: 'workspace',
    before: '/workspaces/:id',
  },
  [`DELETE ${P}/workspaces/:id`]: {
    action: 'workspace.delete',
    resource: 'workspace',
    before: '/workspaces/:id',
  },
  [`POST ${P}/workspaces/:id/members/add`]: {
    action: 'workspace.add_members',
    resource: 'workspace',
    before: '/workspaces/:id/members',
  },
  [`POST ${P}/workspaces/:id/members/remove`]: {
    action: 'workspace.remove_members',
    resource: 'workspace',
    before: '/workspaces/:id/members',
  },
  [`POST ${P}/workspaces/:id/webhook-secret`]: {
    action: 'workspace.rotate_webhook_secret',
    resource: 'workspace',
    before: '/workspaces/:id',
  },
  [`DELETE ${P}/workspaces/:id/webhook-secret`]: {
    action: 'workspace.delete_webhook_secret',
    resource: 'workspace',
    before: '/workspaces/:id',
  },
  [`PUT ${P}/workspaces/:workspace_ref/budgets/:interval`]: {
    action: 'budget.set',
    resource: 'budget',
    before: '/workspaces/:workspace_ref/budgets/:interval',
    id: ['workspace_ref', 'interval'],
  },
  [`DELETE ${P}/workspaces/:workspace_ref/budgets/:interval`]: {
    action: 'budget.delete',
    resource: 'budget',
    before: '/workspaces/:workspace_ref/budgets/:interval',
    id: ['workspace_ref', 'interval'],
  },
  [`POST ${P}/byok`]: { action: 'byok.create', resource: 'byok' },
  [`PATCH ${P}/byok/:id`]: { action: 'byok.update', resource: 'byok', before: '/byok/:id' },
  [`DELETE ${P}/byok/:id`]: { action: 'byok.delete', resource: 'byok', before: '/byok/:id' },
  [`POST ${P}/observability/destinations`]: {
    action: 'destination.create',
    resource: 'observability_destination',
  },
  [`PATCH ${P}/observability/destinations/:id`]: {
    action: 'destination.update',
    resource: 'observability_destination',
    before: '/observability/destinations/:id',
  },
  [`DELETE ${P}/observability/destinations/:id`]: {
    action: 'destination.delete',
    resource: 'observability_destination',
    before: '/observability/destinations/:id',
  },

  // Console sign-in: sign-out deletes the session's key (sign-ins record their own events).
  [`POST ${P}/auth/sign-out`]: { action: 'console.sign_out', resource: 'key' },

  // Operator API (GATEHOUSE_ADMIN_TOKEN).
  [`POST ${P}/admin/organizations`]: { action: 'organization.create', resource: 'organization' },
  [`POST ${P}/admin/users`]: { action: 'user.create', resource: 'user' },
  [`POST ${P}/admin/keys`]: { action: 'key.create', resource: 'key' },
  [`POST ${P}/admin/credits`]: { action: 'credits.grant', resource: 'credit_grant' },
  [`POST ${P}/admin/catalog/reload`]: { action: 'catalog.reload', resource: 'catalog' },

  // Vault secrets (API keys): their values never reach the log, their names, hosts and owners do.
  [`PUT ${P}/vault/secrets/:name`]: { action: 'vault_secret.put', resource: 'vault_secret', id: ['name'] },
  [`DELETE ${P}/vault/secrets/:name`]: {
    action: 'vault_secret.delete',
    resource: 'vault_secret',
    id: ['name'],
  },
  [`PUT ${P}/vault/interns/:internId/secrets/:name`]: {
    action: 'vault_secret.put',
    resource: 'intern_vault_secret',
    id: ['internId', 'name'],
  },
  [`DELETE ${P}/vault/interns/:internId/secrets/:name`]: {
    action: 'vault_secret.delete',
    resource: 'intern_vault_secret',
    id: ['internId', 'name'],
  },
  [`POST ${P}/vault/interns/:internId/secrets/copy`]: {
    action: 'vault_secret.copy',
    resource: 'intern_vault',
    id: ['internId'],
  },
};

/** Write-method routes of those APIs that change nothing, with the reason they are not audited. */
export const NOT_AUDITED: Record<string, string> = {
  [`POST ${P}/analytics/query`]: 'a read whose query is a body',
};
