import type { Caller } from '../accounts/caller.js';
import type { KeysService } from '../accounts/keys.service.js';
import { type AppliesVia, combinePolicies, type PolicyService } from './policy.js';

/** The effective policy of one key, as the management API shows it (EffectivePolicy in OpenAPI). */
export type EffectivePolicyView = Awaited<ReturnType<EffectivePolicyService['forKey']>>;

/**
 * What the gateway enforces on an API key, for people managing it: the guardrails that reach the key
 * (assigned to it, to its creator as a member, its workspace's default) and the policy they combine
 * into. Read from the database, not the routing engine's cache, so a change shows at once.
 */
export class EffectivePolicyService {
  constructor(
    private readonly keys: KeysService,
    private readonly policy: PolicyService,
  ) {}

  async forKey(caller: Caller, hash: string) {
    const row = await this.keys.get(caller, hash); // 404 unless an API key of the caller's organization
    const keyCaller: Caller = {
      keyHash: row.hash,
      organizationId: row.organization_id,
      workspaceId: row.workspace_id,
      userId: row.creator_user_id,
      isManagement: false,
    };
    const applicable = await this.policy.applicable(keyCaller);
    const p = combinePolicies(applicable, keyCaller);
    const via = new Map<string, { id: string; name: string; via: AppliesVia[] }>();
    for (const a of applicable) {
      const hit = via.get(a.row.id);
      if (hit) hit.via.push(a.via);
      else via.set(a.row.id, { id: a.row.id, name: a.row.name, via: [a.via] });
    }
    return {
      key_hash: row.hash,
      guardrails: [...via.values()],
      allowed_models: p.allowedModels,
      ignored_models: p.ignoredModels,
      allowed_providers: p.allowedProviders,
      ignored_providers: p.ignoredProviders,
      allowed_data_regions: p.allowedDataRegions,
      enforce_zdr: p.zdr,
      allow_training: { free_models: p.allowTraining.freeModels, paid_models: p.allowTraining.paidModels },
      allow_free_model_publication: p.allowFreeModelPublication,
      budgets: p.budgets.map((b) => ({
        guardrail_id: b.guardrailId,
        guardrail_name: b.guardrailName,
        limit_usd: b.limitUsd,
        reset_interval: b.interval,
        include_byok: b.includeByok,
        scope: 'userId' in b.scope ? ('member' as const) : ('key' as const),
      })),
      usage_limits: p.usageLimits.map((l) => ({
        guardrail_id: l.guardrailId,
        guardrail_name: l.guardrailName,
        rpm_limit: l.rpm,
        tpm_limit: l.tpm,
        concurrency_limit: l.concurrency,
      })),
      // Patterns are the tenant's own configuration; the label and action say enough here.
      content_filters: p.contentFilters.map((f) => ({
        kind: f.kind,
        label: f.label,
        action: f.action,
        apply_to: f.applyTo,
        guardrail_id: f.guardrailId,
      })),
    };
  }
}
