/**
 * Input items of a response a provider stored too (OpenAI's Responses API, on a pass-through
 * lane), asked of that provider with the operator's key. Which workspace may ask is decided before
 * (the response's row in Gatehouse's store): this only ever names a response the caller owns.
 */
import { ApiError } from '../lib/errors.js';
import { isAbortError } from '../providers/http.js';
import type { Provider } from '../providers/types.js';
import { UpstreamError } from '../providers/types.js';
import type { Catalog } from '../routing/catalog.js';
import type { InputItemsQuery } from './input-items.js';
import type { UpstreamInputItems } from './service.js';

export interface UpstreamItemsDeps {
  catalog: Catalog;
  provider(slug: string): Provider;
  /** The model calls' deadline (GATEHOUSE_UPSTREAM_TIMEOUT_MS); a listing waits at most LISTING_WAIT_MS of it. */
  timeoutMs: number;
}

/** A listing answers in a second or two: its caller is not kept waiting as long as a model's answer. */
const LISTING_WAIT_MS = 30_000;

/** The query string OpenAI takes (`include[]` repeated, as its SDKs send it). */
export function inputItemsQueryString(q: InputItemsQuery): string {
  const p = new URLSearchParams({ limit: String(q.limit), order: q.order });
  if (q.after) p.set('after', q.after);
  for (const i of q.include) p.append('include[]', i);
  return `?${p}`;
}

/**
 * null (Gatehouse lists its own copy) when the provider is no longer configured, has no operator
 * key, stores no responses, or does not hold this one (404: e.g. it was created with an
 * organization's own key); other upstream failures are the caller's error, the key scrubbed.
 */
export function upstreamInputItems(deps: UpstreamItemsDeps): UpstreamInputItems {
  return async (slug, responseId, query) => {
    const entry = deps.catalog.providers.get(slug);
    if (!entry?.config.apiKey) return null;
    const provider = deps.provider(slug);
    if (!provider.inputItems || !provider.traits.natives.has('openai-responses')) return null;
    try {
      return await provider.inputItems(responseId, inputItemsQueryString(query), {
        apiKey: entry.config.apiKey,
        signal: AbortSignal.timeout(Math.min(deps.timeoutMs, LISTING_WAIT_MS)),
      });
    } catch (err) {
      if (isAbortError(err)) throw new ApiError(502, `${slug}: no answer in time`);
      if (!(err instanceof UpstreamError)) throw err;
      if (err.status === 404) return null;
      const status = err.status === 0 || err.status >= 500 ? 502 : err.status;
      throw new ApiError(status, `${slug}: ${err.message}`);
    }
  };
}
