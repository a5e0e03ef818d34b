import { resolveAzureDeployments } from './catalog-azure.js';
import { resolveBedrockModelIds } from './catalog-bedrock.js';
import {
  ALL_CAPS,
  CatalogError,
  devCatalog,
  envProviders,
  fileModels,
  fileProviders,
  modelFallbacks,
  readFileConfig,
} from './catalog-config.js';
import { applyCatalogLimits } from './catalog-limits.js';
import { servedCapabilities } from './catalog-presets.js';
import type { Catalog, ModelEntry, ModelLimits, ProviderEntry } from './catalog-types.js';
import { kindOfId, providerData, vendorModels } from './catalog-vendors.js';
import { operatorCredentials } from './credentials/operator-keys.js';
import { matchModel, pricingOf } from './model-data.js';
import { unlistedModel } from './passthrough.js';

export { CatalogError } from './catalog-config.js';
export type {
  Capability,
  Catalog,
  ModelEndpoint,
  ModelEntry,
  Pricing,
  ProviderEntry,
  Vendor,
} from './catalog-types.js';

function unpricedPolicy(env: Record<string, string | undefined>): 'allow' | 'deny' {
  const raw = (env.GATEHOUSE_UNPRICED_MODELS ?? 'allow').trim().toLowerCase() || 'allow';
  if (raw !== 'allow' && raw !== 'deny')
    throw new CatalogError(`GATEHOUSE_UNPRICED_MODELS must be allow or deny, not ${raw}`);
  return raw;
}

/** Adds a model, or its endpoints to the model of the same id (two providers of one vendor); first wins per provider. */
function addModel(models: Map<string, ModelEntry>, m: ModelEntry): void {
  const existing = models.get(m.id);
  if (!existing) models.set(m.id, m);
  else
    for (const e of m.endpoints)
      if (!existing.endpoints.some((x) => x.provider === e.provider)) existing.endpoints.push(e);
}

/** Models an OpenAI-compatible server listed that the catalog does not have yet, as `<slug>/<id>`. */
function discoveredModels(
  provider: ProviderEntry,
  ids: string[],
  models: Map<string, ModelEntry>,
): ModelEntry[] {
  const slug = provider.config.slug;
  const data = providerData(provider);
  const now = new Date();
  return ids
    .filter((upstream) => !models.has(`${slug}/${upstream}`))
    .map((upstream) => {
      const match = data ? matchModel(data, upstream) : undefined;
      const kind = kindOfId(upstream);
      return {
        id: `${slug}/${upstream}`,
        name: match?.name ?? upstream,
        aliases: [],
        kind,
        description: `Served by ${slug} (listed by the server)`,
        endpoints: [
          {
            provider: slug,
            upstreamModel: upstream,
            pricing: match ? pricingOf(match, now) : { prompt: 0, completion: 0 },
            contextLength: match?.context_window ?? 128_000,
            ...(match?.context_window == null ? { contextAssumed: true } : {}),
            maxCompletionTokens: null,
            capabilities: kind === 'chat' ? ALL_CAPS : [],
          },
        ],
        ...(match ? {} : { priced: false }),
      };
    });
}

/**
 * Builds the catalog: the development provider (unless disabled); providers configured by
 * OPENAI_/ANTHROPIC_/GEMINI_ API_KEY/BASE_URL and by GATEHOUSE_CONFIG (same slug replaces); for each
 * provider of a vendor the model data knows, that vendor's current models and prices; the models
 * OpenAI-compatible servers listed (`discovered`); then GATEHOUSE_CONFIG's models, each replacing
 * the catalog model of the same id; last, the limits Anthropic providers' Models API gave (`limits`).
 */
export function loadCatalog(
  env: Record<string, string | undefined> = process.env,
  discovered: Map<string, string[]> = new Map(),
  limits: Map<string, ModelLimits[]> = new Map(),
): Catalog {
  const providers = new Map<string, ProviderEntry>();
  const models = new Map<string, ModelEntry>();
  const file = env.GATEHOUSE_CONFIG ? readFileConfig(env.GATEHOUSE_CONFIG) : {};
  const devOn = (env.GATEHOUSE_DEV_PROVIDER ?? String(file.development_provider ?? true)) !== 'false';
  if (devOn) {
    const dev = devCatalog();
    providers.set('gatehouse', dev.provider);
    for (const m of dev.models) models.set(m.id, m);
  }
  for (const p of [...envProviders(env), ...fileProviders(file, env)]) providers.set(p.config.slug, p);
  for (const p of providers.values()) for (const m of vendorModels(p)) addModel(models, m);
  for (const [slug, ids] of discovered) {
    const p = providers.get(slug);
    if (p) for (const m of discoveredModels(p, ids, models)) addModel(models, m);
  }
  const configured = fileModels(file, providers);
  for (const m of configured) models.set(m.id, m);
  // Models whose every provider is gone (e.g. the development provider turned off) are dropped.
  for (const [id, m] of models) {
    m.endpoints = m.endpoints.filter((e) => providers.has(e.provider));
    if (m.endpoints.length === 0) models.delete(id);
    for (const e of m.endpoints) e.capabilities = servedCapabilities(providers.get(e.provider), e);
  }
  applyCatalogLimits(models, providers, limits);
  const lookup = new Map<string, string>();
  for (const m of models.values()) lookup.set(m.id, m.id);
  // The operator's own aliases first: they win over the model data's (a configured model may
  // name the vendor's id that the data lists under another entry).
  for (const m of configured)
    for (const a of m.aliases) if (!lookup.has(a) && models.has(m.id)) lookup.set(a, m.id);
  for (const m of models.values()) for (const a of m.aliases) if (!lookup.has(a)) lookup.set(a, m.id);
  modelFallbacks(file, models, lookup);
  resolveAzureDeployments(providers, models);
  for (const p of providers.values()) p.credentials = operatorCredentials(p.config);
  resolveBedrockModelIds(providers, models);
  return {
    providers,
    models,
    lookup,
    unpriced: unpricedPolicy(env),
    discovered,
    limits,
    passthrough: new Map(),
  };
}

/**
 * Builds the catalog again (GATEHOUSE_CONFIG re-read, the model data as now installed) and swaps
 * the contents of `catalog`'s maps in place, so every holder of the object sees the new data.
 * Returns the number of models. A configuration that does not load, or whose providers' adapters
 * cannot be built, leaves the catalog (and the adapters in use) unchanged.
 */
export function reloadCatalog(catalog: Catalog, env: Record<string, string | undefined>): number {
  const next = loadCatalog(env, catalog.discovered ?? new Map(), catalog.limits ?? new Map());
  const providers = catalog.prepareProviders?.(next.providers);
  const swap = <K, V>(into: Map<K, V>, from: Map<K, V>) => {
    into.clear();
    for (const [k, v] of from) into.set(k, v);
  };
  // One synchronous step: no call sees the new catalog with the old adapters, or the reverse.
  swap(catalog.providers, next.providers);
  providers?.install();
  swap(catalog.models, next.models);
  swap(catalog.lookup, next.lookup);
  catalog.passthrough = new Map();
  catalog.unpriced = next.unpriced;
  catalog.discovered ??= next.discovered;
  catalog.limits ??= next.limits;
  return catalog.models.size;
}

/**
 * The model a request names: canonical slug, alias, or slug with a `:variant` suffix; else, for an
 * id routed to a configured provider (`openai/<any>`, `claude-…`, …), an unlisted model flagged
 * `unlisted` (and `priced: false` when no price is known).
 */
export function findModel(catalog: Catalog, requested: string): ModelEntry | undefined {
  const id = catalog.lookup.get(requested) ?? catalog.lookup.get(requested.replace(/:[\w-]+$/, ''));
  if (id) return catalog.models.get(id);
  return unlistedModel(catalog, requested);
}
