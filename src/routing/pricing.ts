import type { Usage } from '../formats/chat.js';
import type { Pricing } from './catalog.js';

export interface Cost {
  total: number;
  prompt: number;
  completion: number;
}

const PER_TOKEN = 1 / 1_000_000;
/** Costs are rounded to 1e-12 USD so sums of stored costs are stable across databases. */
const round = (usd: number) => Math.round(usd * 1e12) / 1e12;

/**
 * The cost of one call from catalog prices (USD per million tokens). Cached prompt tokens and cache
 * writes are priced separately when the endpoint has such prices; reasoning tokens are part of
 * completion tokens (as every provider reports them). Above a long-context threshold the tier's
 * prices apply to every token of the call. Web searches the provider ran are priced per search, in
 * the total (neither prompt nor completion), as is the per-request price.
 */
export function costOf(listed: Pricing, usage: Usage): Cost {
  // A long-context tier prices the whole call once its prompt is over the threshold.
  const tier = listed.long_context;
  const pricing = tier && usage.prompt_tokens > tier.above ? { ...listed, ...tier } : listed;
  const cached = usage.prompt_tokens_details?.cached_tokens ?? 0;
  const written = usage.prompt_tokens_details?.cache_write_tokens ?? 0;
  const plain = Math.max(0, usage.prompt_tokens - cached - written);
  const prompt =
    (plain * pricing.prompt +
      cached * (pricing.cached_prompt ?? pricing.prompt) +
      written * (pricing.cache_write ?? pricing.prompt)) *
    PER_TOKEN;
  const completion = usage.completion_tokens * pricing.completion * PER_TOKEN;
  // Audio priced by its text or its duration: part of the input's cost.
  const audio =
    (usage.audio?.characters ?? 0) * (listed.characters ?? 0) * PER_TOKEN +
    ((usage.audio?.seconds ?? 0) / 60) * (listed.audio_minute ?? 0);
  // A rerank call reporting search units is that many searches, each at the per-request price.
  const request = (pricing.request ?? 0) * (usage.search_units ?? 1);
  const searches = (usage.server_tool_use?.web_search_requests ?? 0) * (listed.web_search ?? 0);
  return {
    total: round(prompt + audio + completion + request + searches),
    prompt: round(prompt + audio),
    completion: round(completion),
  };
}

/** Per-token price strings, as /models reports them. */
export const perToken = (usdPerMillion: number | undefined): string =>
  usdPerMillion === undefined ? '0' : String(round(usdPerMillion * PER_TOKEN));
