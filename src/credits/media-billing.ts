import type { Caller } from '../accounts/caller.js';
import { type MediaBilling, MediaError } from '../media/types.js';
import type { GenerationRow } from '../routing/accounting.js';
import type { CallGuard } from '../routing/call.js';
import { newGenerationId } from '../routing/engine.js';
import { baseRow } from '../routing/records.js';

/** Error codes of the media service for the engine's refusals, by status. */
const CODES: Record<number, string> = { 402: 'insufficient_credits', 403: 'forbidden', 429: 'rate_limited' };

/**
 * Charges the media service's priced routes (`price_usd`) to the calling API key: a generation row
 * like an inference call's (endpoint `media`, model `media/<kind>/<route>`, no tokens), recorded
 * through the same accountant, so the key's usage, guardrail budgets and the credits balance count
 * it. A generation is admitted as an inference call is (the key's rate limit 429, its spending
 * limit and guardrail budgets 403, the balance 402), and only while the balance covers its price.
 * Guardrail model/provider lists and content filters do not apply to media routes.
 */
export function mediaBilling(deps: {
  guard: CallGuard;
  balance: (organizationId: string) => Promise<number>;
  record: (row: GenerationRow) => void;
}): MediaBilling {
  return {
    async admit(caller: Caller, costUsd: number) {
      const checks = await deps.guard.open(caller);
      for (const verdict of [await checks.admit(), await checks.balance()]) {
        if (!verdict.ok)
          throw new MediaError(verdict.status, CODES[verdict.status] ?? 'forbidden', verdict.message);
      }
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
        ...baseRow({ caller, endpoint: 'media', requestedModel: model }, newGenerationId()),
        model,
        provider: g.provider,
        upstream_model: g.providerModel,
        cost_usd: g.costUsd,
        completion_cost_usd: g.costUsd,
        latency_ms: g.latencyMs,
        generation_time_ms: g.latencyMs,
      });
    },
  };
}
