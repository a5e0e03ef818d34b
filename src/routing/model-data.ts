import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import type { ModelInfo, ModelPrice, Provider as PriceProvider } from '@pydantic/genai-prices';
import * as bundled from '@pydantic/genai-prices';
import type { Pricing } from './catalog-types.js';

/**
 * Model data (ids, names, context windows, prices with cache reads/writes and long-context tiers)
 * from `@pydantic/genai-prices`, bundled with the package: nothing is fetched at run time. Updating
 * the data is updating the package; `refreshModelData` picks a newly installed version up without
 * a restart.
 */
type PricesModule = Pick<typeof bundled, 'calcPrice' | 'findProvider'>;

const require = createRequire(import.meta.url);
let data: PricesModule = bundled;
let loadedVersion = installedVersion();

function packageJsonPath(): string | null {
  try {
    // The package's exports hide package.json; its entry point sits in dist/ beside it.
    return require.resolve('@pydantic/genai-prices').replace(/dist[\\/][^\\/]+$/, 'package.json');
  } catch {
    return null;
  }
}

function installedVersion(): string | null {
  const path = packageJsonPath();
  if (!path) return null;
  try {
    return (JSON.parse(readFileSync(path, 'utf8')) as { version?: string }).version ?? null;
  } catch {
    return null;
  }
}

/** The version of the model data in use. */
export const modelDataVersion = (): string | null => loadedVersion;

/**
 * Loads the model-data package again when the installed version differs from the one in use (an
 * `npm update` since start). Returns whether the data changed. An unchanged version costs a read
 * of package.json; only a new version is imported (each import stays in memory, so only then).
 */
export async function refreshModelData(): Promise<boolean> {
  const version = installedVersion();
  if (!version || version === loadedVersion) return false;
  const entry = require.resolve('@pydantic/genai-prices').replace(/index\.c?js$/, 'index.js');
  data = (await import(`${pathToFileURL(entry).href}?v=${encodeURIComponent(version)}`)) as PricesModule;
  loadedVersion = version;
  return true;
}

/** The data's provider for a vendor id (`openai`, `anthropic`, `google`, `groq`, `x-ai`…). */
export const vendorData = (id: string): PriceProvider | undefined => data.findProvider({ providerId: id });

/** The data's provider an OpenAI-compatible base URL belongs to (`https://api.groq.com/…` → groq). */
export const vendorDataForUrl = (baseUrl: string): PriceProvider | undefined =>
  data.findProvider({ providerApiUrl: baseUrl });

type Tiered = { base: number; tiers: { start: number; price: number }[] };
const isTiered = (v: unknown): v is Tiered =>
  typeof v === 'object' && v !== null && 'base' in v && Array.isArray((v as Tiered).tiers);

/**
 * The prices in force now: the last date-constrained set that has started, else the unconstrained
 * one. Time-of-day discounts are left out (the catalog prices every hour alike).
 */
function currentPrices(model: ModelInfo, now: Date): ModelPrice {
  if (!Array.isArray(model.prices)) return model.prices;
  for (let i = model.prices.length - 1; i >= 0; i--) {
    const { constraint, prices } = model.prices[i] as (typeof model.prices)[number];
    if (!constraint) return prices;
    if (constraint.type === 'start_date' && now >= new Date(constraint.start_date)) return prices;
  }
  return (model.prices[0] as (typeof model.prices)[number]).prices;
}

const KEYS: [keyof ModelPrice & string, keyof Omit<Pricing, 'long_context' | 'request' | 'web_search'>][] = [
  ['input_mtok', 'prompt'],
  ['output_mtok', 'completion'],
  ['cache_read_mtok', 'cached_prompt'],
  ['cache_write_mtok', 'cache_write'],
];

/** The data's prices as catalog pricing (USD per million tokens); long-context tiers kept. */
export function pricingOf(model: ModelInfo, now = new Date()): Pricing {
  const prices = currentPrices(model, now);
  const pricing: Pricing = { prompt: 0, completion: 0 };
  let tier: NonNullable<Pricing['long_context']> | null = null;
  for (const [from, to] of KEYS) {
    const v = prices[from];
    if (typeof v === 'number') pricing[to] = v;
    else if (isTiered(v)) {
      pricing[to] = v.base;
      // Above the first threshold the whole call is priced at that tier (how the providers bill).
      const first = v.tiers[0];
      if (first) {
        tier ??= { above: first.start };
        if (first.start === tier.above) tier[to] = first.price;
      }
    }
  }
  const perThousandRequests = prices.requests_kcount;
  if (typeof perThousandRequests === 'number') pricing.request = perThousandRequests / 1000;
  // Web searches per thousand (the data has them; its published types do not name them yet).
  const perThousandSearches = (prices as Record<string, unknown>).web_searches_kcount;
  if (typeof perThousandSearches === 'number') pricing.web_search = perThousandSearches / 1000;
  if (tier) pricing.long_context = tier;
  return pricing;
}

/** Whether the data prices text tokens for this model (audio-, image- or hour-priced ones are not). */
export const pricesText = (model: ModelInfo, now = new Date()): boolean =>
  typeof currentPrices(model, now).input_mtok !== 'undefined';

/**
 * The data's model that an upstream id is priced as, using the data's own match rules (dated ids
 * such as `claude-sonnet-4-5-20250929` → `claude-sonnet-4-5`).
 */
export function matchModel(vendor: PriceProvider, upstreamId: string): ModelInfo | undefined {
  const found = data.calcPrice({ input_tokens: 0 }, upstreamId, { provider: vendor });
  return found?.model;
}
