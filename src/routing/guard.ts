import type { Caller } from '../accounts/caller.js';
import type { KeysService } from '../accounts/keys.service.js';
import type { KeyRow } from '../accounts/keys.store.js';
import type { SpendTracker } from '../credits/spend.js';
import type { SpendAdmission } from '../credits/spend-admission.js';
import { AnswerScan } from '../guardrails/answer-filter.js';
import { applyContentFilters, safeguardRecords } from '../guardrails/content-filters.js';
import {
  type EffectivePolicy,
  modelAllowed,
  type PolicyService,
  type ProviderAttrs,
  providerAllowed,
  regionAllowed,
  serverToolsAllowed,
} from '../guardrails/policy.js';
import type { ScopeLimits, UsageLimits } from '../limits/usage-limits.js';
import type { CallChecks, CallGuard, Verdict } from './call.js';
import type { RateLimiter } from './rate-limit.js';

const refuse = (status: number, message: string, retryAfterMs?: number): Extract<Verdict, { ok: false }> => ({
  ok: false,
  status,
  message,
  ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
});

/** The usage limits a key's calls count against: its own, and each of its guardrails' (counted per guardrail). */
const limitsOf = (row: KeyRow, policy: EffectivePolicy): ScopeLimits[] => [
  {
    scope: `k:${row.hash}`,
    label: `key "${row.name}"`,
    rpm: row.rpm_limit ?? null,
    tpm: row.tpm_limit ?? null,
    concurrency: row.concurrency_limit ?? null,
  },
  ...policy.usageLimits.map((g) => ({
    scope: `g:${g.guardrailId}`,
    label: `guardrail "${g.guardrailName}"`,
    rpm: g.rpm,
    tpm: g.tpm,
    concurrency: g.concurrency,
  })),
];

/** Attributes under which only the allowed/ignored lists can refuse a provider (no ZDR, no training). */
const LISTS_ONLY: ProviderAttrs = { zdr: true, vendor: 'openai', trainsOnData: false, isFree: false };

/**
 * The engine's enforcement: the effective policy of the calling key (its guardrail, its owner's
 * member guardrails and the workspace default, intersected), the key's own limit, guardrail
 * budgets, the organization's balance, content filters, the per-key rate limit and the usage
 * limits of the key and its guardrails (rpm and tpm on admission, a concurrency slot with the
 * spend reservation, freed and the tokens counted when the call ends). Everything comes from
 * in-memory caches in the common case.
 */
export class PolicyGuard implements CallGuard {
  constructor(
    private readonly policies: PolicyService,
    private readonly spend: SpendTracker,
    private readonly keys: KeysService,
    private readonly limiter: RateLimiter,
    private readonly admission: SpendAdmission,
    private readonly usageLimits: UsageLimits,
  ) {}

  async open(caller: Caller, opts: { rateLimit?: boolean; usageLimits?: boolean } = {}): Promise<CallChecks> {
    const rateLimited = opts.rateLimit !== false;
    // Key and guardrail rpm/tpm/concurrency: inference calls only.
    const usageLimited = rateLimited && opts.usageLimits !== false;
    const policy: EffectivePolicy = await this.policies.forKey(caller);
    // The checks below are closures without `this`.
    const spend = this.spend;
    const keys = this.keys;
    const limiter = this.limiter;
    const admission = this.admission;
    const usageLimits = this.usageLimits;
    // A filter that cannot run fails closed on the request, whatever it applies to.
    const requestFilters = policy.contentFilters.filter((f) => f.applyTo !== 'response' || f.broken);
    const answerFilters = policy.contentFilters.filter(
      (f) => f.applyTo !== 'request' && f.scope === 'all_messages',
    );
    return {
      filtering: requestFilters.length > 0,
      async admit() {
        const rate = rateLimited ? await limiter.consume(caller.keyHash) : null;
        if (rate && !rate.ok) {
          return refuse(
            429,
            `Rate limit exceeded for this key; retry in ${Math.ceil(rate.retryAfterMs / 1000)} s`,
            rate.retryAfterMs,
          );
        }
        const row = await keys.row(caller.keyHash);
        if (usageLimited && row) {
          const used = await usageLimits.admit(limitsOf(row, policy));
          if (!used.ok) return refuse(429, used.message, used.retryAfterMs);
        }
        if (row) {
          const limit = await spend.checkKeyLimit(row);
          if (!limit.ok) return refuse(403, limit.reason);
        }
        const budgets = await spend.checkBudgets(policy, caller);
        return budgets.ok ? budgets : refuse(403, budgets.reason);
      },
      modelAllowed(model) {
        const v = modelAllowed(policy, model.id, model.aliases);
        return v.ok ? v : refuse(403, v.reason);
      },
      providerAllowed(provider, model) {
        const free = model.endpoints.every((e) => e.pricing.prompt === 0 && e.pricing.completion === 0);
        const v = providerAllowed(policy, provider.config.slug, {
          zdr: provider.zdr,
          vendor: provider.vendor,
          trainsOnData: provider.trainsOnData,
          isFree: free,
        });
        if (!v.ok) return v;
        return regionAllowed(policy, provider.region === 'local' ? 'global' : provider.region);
      },
      serverToolsAllowed(tools) {
        const v = serverToolsAllowed(policy, tools);
        return v.ok ? v : refuse(403, v.reason);
      },
      providerListed(slug) {
        const v = providerAllowed(policy, slug, LISTS_ONLY);
        return v.ok ? v : refuse(403, v.reason);
      },
      filter(messages) {
        const out = applyContentFilters(requestFilters, messages);
        const b = out.blocked;
        // A pattern stored before patterns were checked against RE2 cannot run: named, not shown.
        const blocked = b?.broken
          ? `${b.label} (its pattern is not supported by this gateway; an administrator must update the guardrail)`
          : (b?.label ?? null);
        return {
          messages: out.messages,
          blocked,
          results: out.results,
          records: safeguardRecords(out.results, requestFilters, 'request'),
        };
      },
      async reserve(worstUsd) {
        const row = await keys.row(caller.keyHash);
        // A slot in flight until the call ends (a stream: its last byte); batches take none.
        const entered = usageLimited && row ? await usageLimits.enter(limitsOf(row, policy)) : null;
        if (entered && !entered.ok) return refuse(429, entered.message, entered.retryAfterMs);
        const slot = entered?.slot;
        const v = await admission.reserve(row ?? null, policy, caller, worstUsd);
        if (!v.ok) {
          slot?.end(0);
          return refuse(v.status, v.reason);
        }
        const { hold } = v;
        return {
          ok: true,
          hold: {
            async credits() {
              const c = await hold.credits();
              return c.ok ? c : refuse(c.status, c.reason);
            },
            settle: (row) => {
              hold.settle(row);
              slot?.end(row.prompt_tokens + row.completion_tokens);
            },
            release: () => {
              hold.release();
              slot?.end(0);
            },
          },
        };
      },
      answerScan: () => (answerFilters.length > 0 ? new AnswerScan(answerFilters) : null),
      async balance(cost) {
        const v = await spend.checkBalance(caller.organizationId, { cost });
        return v.ok ? v : refuse(402, v.reason);
      },
    };
  }
}
