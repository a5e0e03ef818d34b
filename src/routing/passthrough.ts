import { forbidden } from '../lib/errors.js';
import { ALL_CAPS } from './catalog-config.js';
import { applyLimits } from './catalog-limits.js';
import { servedCapabilities } from './catalog-presets.js';
import type { Catalog, ModelEndpoint, ModelEntry, ProviderEntry } from './catalog-types.js';
import { kindOfId, providerData } from './catalog-vendors.js';
import { matchModel, pricingOf } from './model-data.js';

/** Vendor prefixes a request may use, with the provider kind serving them natively. */
const VENDOR_KINDS: Record<string, string> = { openai: 'openai', anthropic: 'anthropic', google: 'google' };

/** Bare native ids the coding agents send by default, and the vendor they belong to. */
const BARE_IDS: [RegExp, string][] = [
  [/^claude-/, 'anthropic'],
  [/^(gpt-|o\d|codex-|chatgpt-)/, 'openai'],
  [/^gemini-/, 'google'],
];

/** Characters an upstream model id may have (vLLM serves `org/model`, Ollama `model:tag`). */
const UPSTREAM_CHARS = /^[\w.\-/:@+]{1,200}$/;
/** An id safe to send upstream: no empty, `.` or `..` path segment (ids end up in some URLs). */
const validUpstream = (id: string) =>
  UPSTREAM_CHARS.test(id) && id.split('/').every((seg) => seg !== '' && seg !== '.' && seg !== '..');

/** How many unlisted ids stay resolved before the memo starts over (callers choose the ids). */
const MEMO_LIMIT = 1000;

const providersOfKind = (catalog: Catalog, kind: string): ProviderEntry[] =>
  [...catalog.providers.values()].filter((p) => p.config.kind === kind && !p.development);

/** The configured providers an unlisted id goes to, the id upstream and the catalog id it is given. */
function route(
  catalog: Catalog,
  requested: string,
): { id: string; upstream: string; providers: ProviderEntry[] } | null {
  const slash = requested.indexOf('/');
  if (slash > 0) {
    const prefix = requested.slice(0, slash);
    const upstream = requested.slice(slash + 1);
    if (!validUpstream(upstream)) return null;
    const byVendor = VENDOR_KINDS[prefix] ? providersOfKind(catalog, VENDOR_KINDS[prefix]) : [];
    const bySlug = catalog.providers.get(prefix);
    const providers =
      bySlug && !bySlug.development && !byVendor.includes(bySlug) ? [...byVendor, bySlug] : byVendor;
    return providers.length > 0 ? { id: requested, upstream, providers } : null;
  }
  if (!validUpstream(requested)) return null;
  const vendor = BARE_IDS.find(([pattern]) => pattern.test(requested))?.[1];
  if (!vendor) return null;
  const providers = providersOfKind(catalog, VENDOR_KINDS[vendor] as string);
  return providers.length > 0 ? { id: `${vendor}/${requested}`, upstream: requested, providers } : null;
}

/**
 * A model for an id the catalog does not list, passed through to the configured providers of its
 * vendor (`openai/<any>`, `anthropic/<any>`, `google/<any>`, `<provider slug>/<any>`, and the bare
 * `claude-…`, `gpt-…`, `o<digit>…`, `codex-…`, `gemini-…`). Priced when the model data matches the
 * id (dated ids included); otherwise `priced: false` and GATEHOUSE_UNPRICED_MODELS decides.
 */
export function unlistedModel(catalog: Catalog, requested: string): ModelEntry | undefined {
  catalog.passthrough ??= new Map();
  const memo = catalog.passthrough;
  const known = memo.get(requested);
  if (known) return known;
  const target = route(catalog, requested);
  if (!target) return undefined;
  const now = new Date();
  let priced = true;
  let name: string | undefined;
  let kind = kindOfId(target.upstream);
  const endpoints: ModelEndpoint[] = target.providers.map((p) => {
    const data = providerData(p);
    const match = data ? matchModel(data, target.upstream) : undefined;
    if (!match) priced = false;
    else {
      name ??= match.name;
      kind = kindOfId(match.id);
    }
    return {
      provider: p.config.slug,
      upstreamModel: target.upstream,
      pricing: match ? pricingOf(match, now) : { prompt: 0, completion: 0 },
      contextLength: match?.context_window ?? 128_000,
      ...(match?.context_window == null ? { contextAssumed: true } : {}),
      maxCompletionTokens: null,
      capabilities: ALL_CAPS,
    };
  });
  for (const e of endpoints) {
    e.capabilities = kind !== 'chat' ? [] : servedCapabilities(catalog.providers.get(e.provider), e);
    // What the provider's Models API said of the id (Anthropic's output limit).
    applyLimits(e, catalog.limits?.get(e.provider));
  }
  const model: ModelEntry = {
    id: target.id,
    name: name ?? target.id,
    aliases: [],
    kind,
    description: '',
    endpoints,
    unlisted: true,
    priced,
  };
  if (memo.size >= MEMO_LIMIT) memo.clear();
  memo.set(requested, model);
  return model;
}

/**
 * Refuses a call to a model with no known price when the operator chose
 * GATEHOUSE_UNPRICED_MODELS=deny; allowed ones are counted (they are recorded at cost 0).
 */
export function admitUnpriced(
  catalog: Catalog,
  model: ModelEntry,
  counter?: { inc(labels: { decision: string }): void },
): void {
  if (model.priced !== false) return;
  const deny = catalog.unpriced === 'deny';
  counter?.inc({ decision: deny ? 'denied' : 'allowed' });
  if (deny) {
    throw forbidden(
      `Model ${model.id} has no known price and this gateway refuses unpriced models (GATEHOUSE_UNPRICED_MODELS=deny); an operator can price it in GATEHOUSE_CONFIG or set GATEHOUSE_UNPRICED_MODELS=allow`,
    );
  }
}
