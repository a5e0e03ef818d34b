import type { Caller } from '../accounts/caller.js';
import { type MediaBilling, MediaError } from '../media/types.js';
import type { GenerationRow } from '../routing/accounting.js';
import type { CallGuard, CallHold, Verdict } from '../routing/call.js';
import { newGenerationId } from '../routing/engine.js';
import { baseRow } from '../routing/records.js';

/** Error codes of the media service for the engine's refusals, by status. */
const CODES: Record<number, string> = { 402: 'insufficient_credits', 403: 'forbidden', 429: 'rate_limited' };

/**
 * Admits and charges the media service's generations by API keys (shared-database mode) as the
 * engine does inference calls: the key's rate limit (429), spending limit and guardrail budgets,
 * the guardrail's model lists (the route as model `media/<kind>/<route>`), provider lists and
 * content filters on the prompt (403: block refuses, redact rewrites what the provider gets, flag
 * passes), and the balance (402, when GATEHOUSE_CREDITS=enforce) for priced routes (`price_usd`). A served generation is a row
 * like an inference call's (endpoint `media`, no tokens) recorded through the same accountant, so
 * the key's usage, guardrail budgets and the credits balance count it.
 */
export function mediaBilling(deps: {
  guard: CallGuard;
  /** Queues the row; the promise resolves once it is journaled (before the answer goes out). */
  record: (row: GenerationRow) => void | Promise<void>;
}): MediaBilling {
  const refuse = (v: Verdict, field?: string): never => {
    if (v.ok) throw new Error('not a refusal');
    throw new MediaError(v.status, CODES[v.status] ?? 'forbidden', v.message, field);
  };
  return {
    async admit(caller: Caller, g) {
      // Media generations count against the rate limit, not the keys' inference usage limits.
      const checks = await deps.guard.open(caller, { usageLimits: false });
      const admitted = await checks.admit();
      if (!admitted.ok) refuse(admitted);
      const model = checks.modelAllowed({ id: g.model, aliases: [] });
      if (!model.ok) refuse(model, 'model');
      const provider = checks.providerListed(g.provider);
      if (!provider.ok) refuse(provider, 'model');
      const filtered = checks.filter([{ role: 'user', content: g.prompt }]);
      if (filtered.blocked)
        throw new MediaError(
          403,
          'content_blocked',
          `Blocked by content filter: ${filtered.blocked}`,
          'prompt',
        );
      // A priced generation reserves its price against the key's limit, budgets and credits while
      // it runs, as an inference call reserves its worst case (concurrent generations count).
      let hold: CallHold | null = null;
      if (g.costUsd > 0) {
        // The price is known: the balance must cover all of it (not just be above zero).
        const covered = await checks.balance({ usd: g.costUsd, of: "this generation's price" });
        if (!covered.ok) refuse(covered);
        const reserved = await checks.reserve(g.costUsd);
        if (!reserved.ok) refuse(reserved);
        hold = (reserved as { hold: CallHold }).hold;
        const paying = await hold.credits();
        if (!paying.ok) {
          hold.release();
          refuse(paying);
        }
      }
      const content = filtered.messages[0]?.content;
      return { prompt: typeof content === 'string' ? content : g.prompt, hold };
    },
    record(caller, g, hold) {
      const model = `media/${g.kind}/${g.route}`;
      const row: GenerationRow = {
        ...baseRow({ caller, endpoint: 'media', requestedModel: model }, newGenerationId()),
        model,
        provider: g.provider,
        upstream_model: g.providerModel,
        cost_usd: g.costUsd,
        completion_cost_usd: g.costUsd,
        latency_ms: g.latencyMs,
        generation_time_ms: g.latencyMs,
      };
      const written = deps.record(row);
      (hold as CallHold | null | undefined)?.settle(row);
      return written;
    },
  };
}
