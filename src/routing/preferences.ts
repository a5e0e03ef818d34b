import { badRequest } from '../lib/errors.js';

/** The request's `provider` routing preferences (OpenRouter-compatible). */
export interface ProviderPreferences {
  order?: string[];
  only?: string[];
  ignore?: string[];
  /** Default true: on a retryable failure, try the next endpoint. */
  allow_fallbacks?: boolean;
  /** `deny`: only providers that do not train on or store data. */
  data_collection?: 'allow' | 'deny';
  /** true: only zero-data-retention endpoints. */
  zdr?: boolean;
  /** true: only endpoints that support every parameter the request uses. */
  require_parameters?: boolean;
  /** USD per million tokens (request: per call). */
  max_price?: { prompt?: number; completion?: number; request?: number };
  sort?: 'price' | 'throughput' | 'latency' | { by: 'price' | 'throughput' | 'latency' };
}

const isStringList = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');

/**
 * `provider.max_price` with its prices as numbers: OpenRouter takes each as a number or a numeric
 * string (`"0.5"`, as its SDKs type them).
 */
function prices(raw: unknown): Record<string, number> {
  const bad = () =>
    badRequest('provider.max_price must map prompt/completion/request to non-negative numbers');
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw bad();
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(raw)) {
    const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) throw bad();
    out[k] = n;
  }
  return out;
}

/** Validates the raw `provider` object of a request body (400 on a malformed one). */
export function parsePreferences(raw: unknown): ProviderPreferences {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw badRequest('provider must be an object');
  const p = raw as Record<string, unknown>;
  for (const f of ['order', 'only', 'ignore'] as const) {
    if (p[f] !== undefined && p[f] !== null && !isStringList(p[f]))
      throw badRequest(`provider.${f} must be a list of provider slugs`);
  }
  for (const f of ['allow_fallbacks', 'zdr', 'require_parameters'] as const) {
    if (p[f] !== undefined && p[f] !== null && typeof p[f] !== 'boolean')
      throw badRequest(`provider.${f} must be a boolean`);
  }
  if (
    p.data_collection !== undefined &&
    p.data_collection !== null &&
    p.data_collection !== 'allow' &&
    p.data_collection !== 'deny'
  ) {
    throw badRequest('provider.data_collection must be "allow" or "deny"');
  }
  const maxPrice = p.max_price === undefined || p.max_price === null ? undefined : prices(p.max_price);
  const sortBy = typeof p.sort === 'object' && p.sort !== null ? (p.sort as { by?: unknown }).by : p.sort;
  if (
    sortBy !== undefined &&
    sortBy !== null &&
    !['price', 'throughput', 'latency'].includes(sortBy as string)
  ) {
    throw badRequest('provider.sort must be price, throughput or latency');
  }
  return {
    order: (p.order as string[] | undefined) ?? undefined,
    only: (p.only as string[] | undefined) ?? undefined,
    ignore: (p.ignore as string[] | undefined) ?? undefined,
    allow_fallbacks: (p.allow_fallbacks as boolean | undefined) ?? undefined,
    data_collection: (p.data_collection as 'allow' | 'deny' | undefined) ?? undefined,
    zdr: (p.zdr as boolean | undefined) ?? undefined,
    require_parameters: (p.require_parameters as boolean | undefined) ?? undefined,
    max_price: maxPrice as ProviderPreferences['max_price'],
    sort: sortBy ? (sortBy as 'price' | 'throughput' | 'latency') : undefined,
  };
}
