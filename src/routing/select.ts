import type { ChatRequest } from '../formats/chat.js';
import type {
  Capability,
  Catalog,
  Credential,
  ModelEndpoint,
  ModelEntry,
  ProviderEntry,
} from './catalog-types.js';
import type { ProviderPreferences } from './preferences.js';

export type { Credential } from './catalog-types.js';

const NO_BYOK = { primary: [] as Credential[], fallback: [] as Credential[], byokOnly: false };

/** One endpoint to try, with the credential to try it with. */
export interface Candidate {
  model: ModelEntry;
  endpoint: ModelEndpoint;
  provider: ProviderEntry;
  credential: Credential;
}

/** Why an endpoint was left out, for the refusal message and gateway_metadata. */
export interface Exclusion {
  provider: string;
  reason: string;
}

export interface SelectInput {
  catalog: Catalog;
  model: ModelEntry;
  request: ChatRequest | null;
  prefs: ProviderPreferences;
  /** Policy check per provider (guardrail allow/deny lists, ZDR, training flags). */
  providerAllowed: (
    provider: ProviderEntry,
    model: ModelEntry,
  ) => { ok: true } | { ok: false; reason: string };
  /** BYOK credentials that apply to this caller for a provider, in try order (non-fallback first). */
  byok: (providerSlug: string) => { primary: Credential[]; fallback: Credential[]; byokOnly: boolean };
  /** Observed latency per provider (ms), for sort=latency. */
  latency: (providerSlug: string) => number;
  /**
   * Observed output speed per provider (completion tokens per second), for sort=throughput;
   * undefined until one call has been measured (such a provider sorts first, so it gets measured).
   */
  throughput?: (providerSlug: string) => number | undefined;
  /** Whether a provider may be called without any key (its adapter says so). */
  keyOptional: (providerSlug: string) => boolean;
  /** Orders one tier of a provider's credentials (weighted, the sticky one first); absent: as listed. */
  arrange?: (tier: Credential[], prefer: string | null | undefined) => Credential[];
  /**
   * The route that served this conversation's previous turn (credentials/sticky.ts). Asked only
   * when the call has more than one route to choose from: looking it up hashes the conversation.
   */
  sticky?: () => { provider: string; credential: string | null } | undefined;
}

/** The capabilities a request needs from an endpoint. */
export function requiredCapabilities(req: ChatRequest | null): Capability[] {
  if (!req) return [];
  const caps: Capability[] = [];
  if (req.tools?.length) caps.push('tools');
  if (req.response_format && req.response_format.type !== 'text') caps.push('json');
  if (req.logprobs || req.top_logprobs !== undefined) caps.push('logprobs');
  if (req.reasoning) caps.push('reasoning');
  if (req.messages.some((m) => Array.isArray(m.content) && m.content.some((p) => p.type === 'image_url'))) {
    caps.push('images');
  }
  return caps;
}

const totalPrice = (e: ModelEndpoint) => e.pricing.prompt + e.pricing.completion;

/**
 * The endpoints to try, in order, each with its credentials expanded (BYOK before the operator's
 * key, fallback BYOK credentials after it), and the endpoints left out with the reason.
 */
export function selectCandidates(input: SelectInput): { candidates: Candidate[]; excluded: Exclusion[] } {
  const { catalog, model, prefs } = input;
  const excluded: Exclusion[] = [];
  const needs = prefs.require_parameters ? requiredCapabilities(input.request) : [];
  const eligible: { endpoint: ModelEndpoint; provider: ProviderEntry }[] = [];

  for (const endpoint of model.endpoints) {
    const provider = catalog.providers.get(endpoint.provider);
    const slug = endpoint.provider;
    const out = (reason: string) => excluded.push({ provider: slug, reason });
    if (!provider) {
      out('provider not configured');
      continue;
    }
    if (prefs.only && !prefs.only.includes(slug)) {
      out('not in provider.only');
      continue;
    }
    if (prefs.ignore?.includes(slug)) {
      out('in provider.ignore');
      continue;
    }
    if (prefs.zdr && !provider.zdr) {
      out('not a zero-data-retention endpoint (provider.zdr)');
      continue;
    }
    if (prefs.data_collection === 'deny' && provider.trainsOnData) {
      out('collects data (provider.data_collection=deny)');
      continue;
    }
    const missing = needs.filter((c) => !endpoint.capabilities.includes(c));
    if (missing.length > 0) {
      out(`does not support ${missing.join(', ')} (provider.require_parameters)`);
      continue;
    }
    const mp = prefs.max_price;
    if (
      mp &&
      ((mp.prompt !== undefined && endpoint.pricing.prompt > mp.prompt) ||
        (mp.completion !== undefined && endpoint.pricing.completion > mp.completion) ||
        (mp.request !== undefined && (endpoint.pricing.request ?? 0) > mp.request))
    ) {
      out('above provider.max_price');
      continue;
    }
    const policy = input.providerAllowed(provider, model);
    if (!policy.ok) {
      out(policy.reason);
      continue;
    }
    eligible.push({ endpoint, provider });
  }

  const sort = prefs.sort;
  if (sort === 'price') eligible.sort((a, b) => totalPrice(a.endpoint) - totalPrice(b.endpoint));
  else if (sort === 'latency') {
    eligible.sort((a, b) => input.latency(a.endpoint.provider) - input.latency(b.endpoint.provider));
  } else if (sort === 'throughput') {
    const speed = (slug: string) => input.throughput?.(slug) ?? Number.POSITIVE_INFINITY;
    eligible.sort((a, b) => speed(b.endpoint.provider) - speed(a.endpoint.provider) || 0);
  }
  if (prefs.order?.length) {
    const rank = (slug: string) => {
      const i = prefs.order?.indexOf(slug) ?? -1;
      return i < 0 ? Number.MAX_SAFE_INTEGER : i;
    };
    eligible.sort((a, b) => rank(a.endpoint.provider) - rank(b.endpoint.provider)); // stable
  }
  // Each eligible endpoint's credential tiers: BYOK only where the operator allows it (elsewhere
  // the call goes out, and is billed, as theirs), BYOK primaries, the operator's keys, fallbacks.
  let routes = 0;
  const tiered = eligible.map(({ endpoint, provider }) => {
    const creds = provider.byok ? input.byok(endpoint.provider) : NO_BYOK;
    const operator: Credential[] =
      creds.byokOnly || (provider.config.apiKey === null && !input.keyOptional(endpoint.provider))
        ? []
        : (provider.credentials ?? [{ apiKey: provider.config.apiKey, isByok: false }]);
    routes += creds.primary.length + operator.length + creds.fallback.length;
    return { endpoint, provider, tiers: [creds.primary, operator, creds.fallback] };
  });

  // A conversation goes back to the provider of its previous turn (its prompt cache), unless the
  // caller ordered the providers itself; health still decides (an open breaker is passed over).
  const sticky = routes > 1 ? input.sticky?.() : undefined;
  if (sticky && !sort && !prefs.order?.length) {
    const i = tiered.findIndex((e) => e.endpoint.provider === sticky.provider);
    if (i > 0) tiered.unshift(...tiered.splice(i, 1));
  }

  const candidates: Candidate[] = [];
  for (const { endpoint, provider, tiers } of tiered) {
    // Each tier in weighted random order, the sticky credential first.
    const arrange = input.arrange;
    const prefer = sticky?.provider === endpoint.provider ? sticky.credential : null;
    const all = arrange ? tiers.flatMap((tier) => arrange(tier, prefer)) : tiers.flat();
    if (all.length === 0) {
      excluded.push({
        provider: endpoint.provider,
        reason: 'no credential (operator key or BYOK) for this provider',
      });
      continue;
    }
    for (const credential of all) candidates.push({ model, endpoint, provider, credential });
  }
  return { candidates, excluded };
}
