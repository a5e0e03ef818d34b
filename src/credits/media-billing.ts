import type { Caller } from '../accounts/caller.js';
import { type MediaBilling, MediaError } from '../media/types.js';
import type { GenerationRow } from '../routing/accounting.js';
import { newGenerationId } from '../routing/engine.js';

/**
 * Charges the media service's priced routes (`price_usd`) to the calling API key: a generation row
 * like an inference call's (endpoint `media`, model `media/<kind>/<route>`, no tokens), recorded
 * through the same accountant, so the key's usage, guardrail budgets and the credits balance count
 * it. A generation is admitted only while the organization's balance covers its price.
 */
export function mediaBilling(deps: {
  balance: (organizationId: string) => Promise<number>;
  record: (row: GenerationRow) => void;
}): MediaBilling {
  return {
    async admit(caller: Caller, costUsd: number) {
      const balance = await deps.balance(caller.organizationId);
      if (balance < costUsd)
        throw new MediaError(
          402,
          'insufficient_credits',
          `Insufficient credits: the organization's balance is $${balance.toFixed(2)} and this generation costs $${costUsd.toFixed(2)}`,
        );
    },
    record(caller, g) {
      const model = `media/${g.kind}/${g.route}`;
      deps.record({
        id: newGenerationId(),
        organization_id: caller.organizationId,
        workspace_id: caller.workspaceId,
        key_hash: caller.keyHash,
        user_id: caller.userId,
        endpoint: 'media',
        requested_model: model,
        model,
        provider: g.provider,
        upstream_model: g.providerModel,
        status: 'success',
        http_status: 200,
        streamed: 0,
        finish_reason: null,
        prompt_tokens: 0,
        completion_tokens: 0,
        reasoning_tokens: 0,
        cached_tokens: 0,
        cache_write_tokens: 0,
        usage_estimated: 0,
        cost_usd: g.costUsd,
        prompt_cost_usd: 0,
        completion_cost_usd: g.costUsd,
        is_byok: 0,
        attempts: 1,
        latency_ms: g.latencyMs,
        generation_time_ms: g.latencyMs,
        error_message: null,
        created_at: new Date().toISOString(),
      });
    },
  };
}
