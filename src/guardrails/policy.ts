import { LRUCache } from 'lru-cache';
import type { Caller } from '../accounts/caller.js';
import { fromJsonList } from '../db/columns.js';
import type { Db } from '../db/connection.js';
import { defaultGuardrailId } from '../lib/ids.js';
import { type CompiledFilter, compileFilters } from './content-filters.js';
import type { ContentFilter, StoredBuiltinFilter } from './fields.js';
import type { GuardrailRow } from './store.js';

export type { CompiledFilter } from './content-filters.js';

/**
 * The effective policy of an API key: every guardrail that applies to it, combined. Lists that
 * allow intersect, lists that ignore add up, and any guardrail that asks for a protection (ZDR,
 * no training) gets it.
 */

export interface BudgetRule {
  guardrailId: string;
  guardrailName: string;
  limitUsd: number;
  interval: 'daily' | 'weekly' | 'monthly' | null;
  includeByok: boolean;
  scope: { keyHash: string } | { userId: string };
}

/** A guardrail's usage limits, counted over every key it covers (see limits/usage-limits.ts). */
export interface GuardrailUsageLimits {
  guardrailId: string;
  guardrailName: string;
  rpm: number | null;
  tpm: number | null;
  concurrency: number | null;
}

export interface EffectivePolicy {
  guardrailIds: string[]; // applicable, for gateway_metadata and errors
  allowedModels: string[] | null; // intersection of non-null lists; null = unrestricted
  ignoredModels: string[]; // union
  allowedProviders: string[] | null; // intersection
  ignoredProviders: string[]; // union
  allowedDataRegions: string[] | null; // intersection
  zdr: { anthropic: boolean; google: boolean; openai: boolean; xai: boolean; other: boolean }; // OR of the per-vendor flags
  allowTraining: { freeModels: boolean; paidModels: boolean }; // false if any applicable guardrail disables it (null/unset = allowed)
  allowFreeModelPublication: boolean;
  budgets: BudgetRule[]; // one per guardrail with limit_usd; key-assigned and default-guardrail budgets are scoped to the calling key, member-guardrail budgets to the user
  contentFilters: CompiledFilter[]; // union of all filters, builtin and custom
  usageLimits: GuardrailUsageLimits[]; // one per guardrail with any usage limit set
  /** The key's workspace's `disabled_server_tools` (e.g. `openrouter:web_search`). */
  disabledServerTools: string[];
  /** Which guardrail imposed each list restriction, to name it in refusals. */
  sources: {
    allowedModels: string[];
    allowedProviders: string[];
    ignoredModels: string[];
    ignoredProviders: string[];
  };
}

export type Verdict = { ok: true } | { ok: false; reason: string };

/** Refuses a call naming a server tool its workspace disabled (`disabled_server_tools`). */
export function serverToolsAllowed(policy: EffectivePolicy, tools: readonly string[]): Verdict {
  const disabled = tools.find((t) => policy.disabledServerTools.includes(t));
  return disabled
    ? { ok: false, reason: `The server tool ${disabled} is disabled in this workspace` }
    : { ok: true };
}

export type ZdrVendor = keyof EffectivePolicy['zdr'];

export interface ProviderAttrs {
  /** The endpoint guarantees zero data retention. */
  zdr: boolean;
  /** Whose model it serves, for the per-vendor ZDR flags. */
  vendor: ZdrVendor;
  /** The endpoint may train on prompts. */
  trainsOnData: boolean;
  /** The model is a free one (for the free/paid training flags). */
  isFree: boolean;
}

/** How a guardrail reaches the key. */
export type AppliesVia = 'key' | 'member' | 'default';

export interface ApplicableGuardrail {
  row: GuardrailRow;
  via: AppliesVia;
}

// ---------------------------------------------------------------------------------------------
// Combination (pure)

/** One guardrail's fields, parsed; kept beside the policy so refusals can name the right guardrail. */
interface Parsed {
  id: string;
  name: string;
  allowedModels: string[] | null;
  ignoredModels: string[];
  allowedProviders: string[] | null;
  ignoredProviders: string[];
  allowedDataRegions: string[] | null;
  zdr: EffectivePolicy['zdr'];
  freeTraining: boolean;
  paidTraining: boolean;
  freePublication: boolean;
}

const details = new WeakMap<EffectivePolicy, Parsed[]>();

const lower = (xs: readonly string[] | null): string[] | null =>
  xs === null ? null : [...new Set(xs.map((x) => x.trim().toLowerCase()))];

/** A model id without its `:variant` suffix (`openai/gpt-4o:free` → `openai/gpt-4o`). */
export function baseModelSlug(slug: string): string {
  const colon = slug.lastIndexOf(':');
  return colon > slug.lastIndexOf('/') && colon > 0 ? slug.slice(0, colon) : slug;
}

const patterns = new Map<string, RegExp>();
/** `anthropic/*`, `openai/gpt-5*`: `*` stands for any run of characters, `/` included. */
function pattern(entry: string): RegExp {
  let re = patterns.get(entry);
  if (!re) {
    const body = entry.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'));
    re = new RegExp(`^${body.join('.*')}$`);
    if (patterns.size > 10_000) patterns.clear();
    patterns.set(entry, re);
  }
  return re;
}

/**
 * Whether a guardrail list entry covers the model: the same id, the model's id without variant,
 * or a wildcard entry matching either.
 */
const modelMatches = (model: string, entry: string) =>
  model === entry ||
  baseModelSlug(model) === entry ||
  (entry.includes('*') && (pattern(entry).test(model) || pattern(entry).test(baseModelSlug(model))));

/** Whether a provider list entry covers the provider: the same slug, or its base (`a/b` → `a`). */
const providerMatches = (provider: string, entry: string) =>
  provider === entry || provider.split('/')[0] === entry;

/** `null` (unset) and 1 allow; 0 disables. */
const allows = (bit: number | null) => bit !== 0;

function parse(row: GuardrailRow): Parsed {
  return {
    id: row.id,
    name: row.name,
    allowedModels: lower(fromJsonList<string>(row.allowed_models)),
    ignoredModels: lower(fromJsonList<string>(row.ignored_models)) ?? [],
    allowedProviders: lower(fromJsonList<string>(row.allowed_providers)),
    ignoredProviders: lower(fromJsonList<string>(row.ignored_providers)) ?? [],
    allowedDataRegions: lower(fromJsonList<string>(row.allowed_data_regions)),
    zdr: {
      anthropic: row.enforce_zdr_anthropic === 1,
      google: row.enforce_zdr_google === 1,
      openai: row.enforce_zdr_openai === 1,
      xai: row.enforce_zdr_xai === 1,
      other: row.enforce_zdr_other === 1,
    },
    freeTraining: allows(row.enable_free_model_training),
    paidTraining: allows(row.enable_paid_model_training),
    freePublication: allows(row.enable_free_model_publication),
  };
}

/**
 * The intersection of several allow-lists of models under the matching rule: an entry of one list
 * is kept when every other list covers it. A model is then covered by the result exactly when every
 * list covers it (`x` in one list and `x:free` in another keep `x:free`).
 */
export function intersectModelLists(lists: readonly (readonly string[])[]): string[] {
  const out = new Set<string>();
  for (const list of lists) {
    for (const entry of list) {
      if (lists.every((other) => other.some((e) => modelMatches(entry, e)))) out.add(entry);
    }
  }
  return [...out];
}

function intersectPlain(lists: readonly (readonly string[])[]): string[] {
  const [first, ...rest] = lists;
  return (first ?? []).filter((x) => rest.every((l) => l.includes(x)));
}

const union = (lists: readonly (readonly string[])[]) => [...new Set(lists.flat())];

/**
 * Combines the applicable guardrails of a key into its effective policy. A guardrail reached in
 * several ways counts once; its budget is scoped to the user when it reaches the key through a
 * member assignment (the user's spend includes this key's), else to the key.
 */
export function combinePolicies(
  applicable: readonly ApplicableGuardrail[],
  caller: Pick<Caller, 'keyHash' | 'userId'>,
): EffectivePolicy {
  const byId = new Map<string, { row: GuardrailRow; via: Set<AppliesVia> }>();
  for (const a of applicable) {
    const hit = byId.get(a.row.id);
    if (hit) hit.via.add(a.via);
    else byId.set(a.row.id, { row: a.row, via: new Set([a.via]) });
  }
  const rows = [...byId.values()];
  const parsed = rows.map((r) => parse(r.row));
  const namesWhere = (has: (p: Parsed) => boolean) => parsed.filter(has).map((p) => p.name);

  const allowedModelLists = parsed.flatMap((p) => (p.allowedModels ? [p.allowedModels] : []));
  const allowedProviderLists = parsed.flatMap((p) => (p.allowedProviders ? [p.allowedProviders] : []));
  const regionLists = parsed.flatMap((p) => (p.allowedDataRegions ? [p.allowedDataRegions] : []));

  const budgets: BudgetRule[] = [];
  for (const { row, via } of rows) {
    if (row.limit_usd === null) continue;
    const byUser = via.has('member') && caller.userId !== null;
    budgets.push({
      guardrailId: row.id,
      guardrailName: row.name,
      limitUsd: row.limit_usd,
      interval: (row.reset_interval as BudgetRule['interval']) ?? null,
      includeByok: row.include_byok_in_budgets === 1,
      scope: byUser ? { userId: caller.userId as string } : { keyHash: caller.keyHash },
    });
  }

  const usageLimits: GuardrailUsageLimits[] = rows
    .map(({ row }) => ({
      guardrailId: row.id,
      guardrailName: row.name,
      rpm: row.rpm_limit ?? null,
      tpm: row.tpm_limit ?? null,
      concurrency: row.concurrency_limit ?? null,
    }))
    .filter((l) => l.rpm !== null || l.tpm !== null || l.concurrency !== null);

  const policy: EffectivePolicy = {
    guardrailIds: parsed.map((p) => p.id),
    allowedModels: allowedModelLists.length > 0 ? intersectModelLists(allowedModelLists) : null,
    ignoredModels: union(parsed.map((p) => p.ignoredModels)),
    allowedProviders: allowedProviderLists.length > 0 ? intersectPlain(allowedProviderLists) : null,
    ignoredProviders: union(parsed.map((p) => p.ignoredProviders)),
    allowedDataRegions: regionLists.length > 0 ? intersectPlain(regionLists) : null,
    zdr: {
      anthropic: parsed.some((p) => p.zdr.anthropic),
      google: parsed.some((p) => p.zdr.google),
      openai: parsed.some((p) => p.zdr.openai),
      xai: parsed.some((p) => p.zdr.xai),
      other: parsed.some((p) => p.zdr.other),
    },
    allowTraining: {
      freeModels: parsed.every((p) => p.freeTraining),
      paidModels: parsed.every((p) => p.paidTraining),
    },
    allowFreeModelPublication: parsed.every((p) => p.freePublication),
    budgets,
    usageLimits,
    disabledServerTools: [],
    contentFilters: compileFilters(
      rows.map(({ row }) => ({
        guardrailId: row.id,
        custom: fromJsonList<ContentFilter>(row.content_filters),
        builtins: fromJsonList<StoredBuiltinFilter>(row.content_filter_builtins),
      })),
    ),
    sources: {
      allowedModels: namesWhere((p) => p.allowedModels !== null),
      allowedProviders: namesWhere((p) => p.allowedProviders !== null),
      ignoredModels: namesWhere((p) => p.ignoredModels.length > 0),
      ignoredProviders: namesWhere((p) => p.ignoredProviders.length > 0),
    },
  };
  details.set(policy, parsed);
  return policy;
}

// ---------------------------------------------------------------------------------------------
// Checks (pure)

const quoteNames = (names: readonly string[]) => {
  const q = names.map((n) => `"${n}"`);
  return q.length === 1 ? `guardrail ${q[0]}` : `guardrails ${q.join(', ')}`;
};

/**
 * The guardrails responsible for a refusal: those whose own list refuses, when the policy was built
 * here; otherwise (a policy built elsewhere) every guardrail named in `fallback`.
 */
function culprits(policy: EffectivePolicy, refuses: (p: Parsed) => boolean, fallback: string[]): string[] {
  const parsed = details.get(policy);
  const names = parsed ? parsed.filter(refuses).map((p) => p.name) : fallback;
  return names.length > 0 ? names : fallback.length > 0 ? fallback : ['(unknown)'];
}

/**
 * Whether the policy lets the key use the model. `modelSlug` matches a list entry exactly, without
 * its `:variant` suffix, or by a wildcard entry (`anthropic/*`); `alsoKnownAs` (e.g. the model's
 * canonical slug) may match instead.
 */
export function modelAllowed(
  policy: EffectivePolicy,
  modelSlug: string,
  alsoKnownAs: readonly string[] = [],
): Verdict {
  const ids = [modelSlug, ...alsoKnownAs].map((s) => s.trim().toLowerCase());
  const covered = (list: readonly string[]) => ids.some((id) => list.some((e) => modelMatches(id, e)));
  if (policy.allowedModels !== null && !covered(policy.allowedModels)) {
    const names = culprits(
      policy,
      (p) => p.allowedModels !== null && !covered(p.allowedModels),
      policy.sources.allowedModels,
    );
    return { ok: false, reason: `Model ${modelSlug} is not in the allowed models of ${quoteNames(names)}` };
  }
  if (covered(policy.ignoredModels)) {
    const names = culprits(policy, (p) => covered(p.ignoredModels), policy.sources.ignoredModels);
    return { ok: false, reason: `Model ${modelSlug} is in the ignored models of ${quoteNames(names)}` };
  }
  return { ok: true };
}

/**
 * Whether the policy lets the call go to this provider endpoint: the provider lists, the per-vendor
 * ZDR requirement and the training permissions.
 */
export function providerAllowed(
  policy: EffectivePolicy,
  providerSlug: string,
  attrs: ProviderAttrs,
): Verdict {
  const slug = providerSlug.trim().toLowerCase();
  const covered = (list: readonly string[]) => list.some((e) => providerMatches(slug, e));
  if (policy.allowedProviders !== null && !covered(policy.allowedProviders)) {
    const names = culprits(
      policy,
      (p) => p.allowedProviders !== null && !covered(p.allowedProviders),
      policy.sources.allowedProviders,
    );
    return {
      ok: false,
      reason: `Provider ${providerSlug} is not in the allowed providers of ${quoteNames(names)}`,
    };
  }
  if (covered(policy.ignoredProviders)) {
    const names = culprits(policy, (p) => covered(p.ignoredProviders), policy.sources.ignoredProviders);
    return {
      ok: false,
      reason: `Provider ${providerSlug} is in the ignored providers of ${quoteNames(names)}`,
    };
  }
  if (policy.zdr[attrs.vendor] && !attrs.zdr) {
    const names = culprits(policy, (p) => p.zdr[attrs.vendor], []);
    return {
      ok: false,
      reason: `Provider ${providerSlug} does not guarantee zero data retention, which ${quoteNames(names)} requires for ${attrs.vendor} models`,
    };
  }
  if (attrs.trainsOnData) {
    const free = attrs.isFree;
    if (free ? !policy.allowTraining.freeModels : !policy.allowTraining.paidModels) {
      const names = culprits(policy, (p) => (free ? !p.freeTraining : !p.paidTraining), []);
      return {
        ok: false,
        reason: `Provider ${providerSlug} may train on prompts, which ${quoteNames(names)} does not allow for ${free ? 'free' : 'paid'} models`,
      };
    }
  }
  return { ok: true };
}

/** Whether the policy allows serving the call from a data region (`global`, `europe`, `us`). */
export function regionAllowed(policy: EffectivePolicy, region: string): Verdict {
  const r = region.trim().toLowerCase();
  if (policy.allowedDataRegions === null || policy.allowedDataRegions.includes(r)) return { ok: true };
  const names = culprits(
    policy,
    (p) => p.allowedDataRegions !== null && !p.allowedDataRegions.includes(r),
    [],
  );
  return {
    ok: false,
    reason: `Data region ${region} is not in the allowed data regions of ${quoteNames(names)}`,
  };
}

// ---------------------------------------------------------------------------------------------
// Resolution and cache

/** Effective policies stay cached this long; other nodes see guardrail writes within it. */
export const POLICY_TTL_MS = 5_000;

/**
 * Resolves the effective policy of an API key: its key-assigned guardrail, the member guardrails of
 * its creator in the key's organization (guardrails of the key's workspace or with no workspace),
 * and its workspace's default guardrail once materialised. Cached per key hash for five seconds;
 * `invalidate()` (called after every guardrail or assignment write on this node) drops everything.
 */
export class PolicyService {
  private readonly cache: LRUCache<string, EffectivePolicy>;
  private readonly inflight = new Map<string, Promise<EffectivePolicy>>();
  /** Bumped by invalidate(): a load that started before it is not cached. */
  private generation = 0;

  constructor(
    private readonly db: Db,
    opts: { ttlMs?: number; max?: number } = {},
  ) {
    this.cache = new LRUCache({ max: opts.max ?? 50_000, ttl: opts.ttlMs ?? POLICY_TTL_MS });
  }

  forKey(caller: Caller): Promise<EffectivePolicy> {
    const hit = this.cache.get(caller.keyHash);
    if (hit) return Promise.resolve(hit);
    const pending = this.inflight.get(caller.keyHash);
    if (pending) return pending;
    const generation = this.generation;
    const load = this.load(caller)
      .then((policy) => {
        if (generation === this.generation) this.cache.set(caller.keyHash, policy);
        return policy;
      })
      .finally(() => {
        if (this.inflight.get(caller.keyHash) === load) this.inflight.delete(caller.keyHash);
      });
    this.inflight.set(caller.keyHash, load);
    return load;
  }

  /** Drops every cached policy (after any write to guardrails or their assignments). */
  invalidate(): void {
    this.generation++;
    this.cache.clear();
    this.inflight.clear();
  }

  /** The applicable guardrails of the key, straight from the database, key first, default last. */
  async applicable(caller: Caller): Promise<ApplicableGuardrail[]> {
    const org = caller.organizationId;
    const [keyRows, memberRows, defaultRow] = await Promise.all([
      this.db
        .selectFrom('guardrail_key_assignments as a')
        .innerJoin('guardrails as g', 'g.id', 'a.guardrail_id')
        .selectAll('g')
        .where('a.key_hash', '=', caller.keyHash)
        .where('g.organization_id', '=', org)
        .execute(),
      caller.userId === null
        ? Promise.resolve([])
        : this.db
            .selectFrom('guardrail_member_assignments as m')
            .innerJoin('guardrails as g', 'g.id', 'm.guardrail_id')
            .selectAll('g')
            .where('m.user_id', '=', caller.userId)
            .where('m.organization_id', '=', org)
            .where('g.organization_id', '=', org)
            .where((eb) =>
              eb.or([eb('g.workspace_id', '=', caller.workspaceId), eb('g.workspace_id', 'is', null)]),
            )
            .orderBy('g.created_at')
            .orderBy('g.id')
            .execute(),
      this.db
        .selectFrom('guardrails')
        .selectAll()
        .where('id', '=', defaultGuardrailId(caller.workspaceId))
        .where('organization_id', '=', org)
        .executeTakeFirst(),
    ]);
    return [
      ...keyRows.map((row) => ({ row, via: 'key' as const })),
      ...memberRows.map((row) => ({ row, via: 'member' as const })),
      ...(defaultRow ? [{ row: defaultRow, via: 'default' as const }] : []),
    ];
  }

  private async load(caller: Caller): Promise<EffectivePolicy> {
    const [applicable, workspace] = await Promise.all([
      this.applicable(caller),
      this.db
        .selectFrom('workspaces')
        .select('disabled_server_tools')
        .where('id', '=', caller.workspaceId)
        .executeTakeFirst(),
    ]);
    const policy = combinePolicies(applicable, caller);
    policy.disabledServerTools = fromJsonList<string>(workspace?.disabled_server_tools ?? null) ?? [];
    return policy;
  }
}
