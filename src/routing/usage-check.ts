import type { Usage } from '../formats/chat.js';

/**
 * A provider's usage numbers are not trusted: a negative, fractional-garbage, non-numeric or
 * absurd count would bill a negative (or astronomical) cost, and has failed the generation's
 * write. Each count is checked; a bad prompt or completion count is replaced by the estimate from
 * the text (as when a provider reports nothing), other bad counts by 0, counts above
 * MAX_REPORTED_TOKENS clamped to it. The generation is kept, flagged (`usage_estimated`, and its
 * `error_message` says `usage_invalid: …`), and counted in gatehouse_usage_invalid_total.
 */

/** More tokens than any model takes or writes in one call: a count beyond it is clamped. */
export const MAX_REPORTED_TOKENS = 100_000_000;

const bad = (v: unknown): boolean => typeof v !== 'number' || !Number.isFinite(v) || v < 0;

/** The usage to bill, and what was wrong with the reported one (null: nothing). */
export function checkUsage(
  reported: Usage,
  estimate: () => { prompt_tokens: number; completion_tokens: number },
): { usage: Usage; invalid: string | null } {
  const wrong: string[] = [];
  const fix = (name: string, v: unknown, fallback: () => number): number => {
    if (bad(v)) {
      wrong.push(`${name}=${String(v)}`);
      return fallback();
    }
    if ((v as number) > MAX_REPORTED_TOKENS) {
      wrong.push(`${name}=${String(v)}`);
      return MAX_REPORTED_TOKENS;
    }
    return Math.round(v as number);
  };
  const opt = (name: string, v: unknown) => (v === undefined ? undefined : fix(name, v, () => 0));
  let est: { prompt_tokens: number; completion_tokens: number } | null = null;
  const estimated = () => {
    est ??= estimate();
    return est;
  };
  const prompt = fix('prompt_tokens', reported.prompt_tokens, () => estimated().prompt_tokens);
  const completion = fix(
    'completion_tokens',
    reported.completion_tokens,
    () => estimated().completion_tokens,
  );
  const usage: Usage = {
    ...reported,
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
  };
  const pd = reported.prompt_tokens_details;
  if (pd) {
    usage.prompt_tokens_details = {
      ...pd,
      cached_tokens: opt('cached_tokens', pd.cached_tokens),
      cache_write_tokens: opt('cache_write_tokens', pd.cache_write_tokens),
    };
    // Cached tokens are part of the prompt: never more than it.
    const d = usage.prompt_tokens_details;
    if ((d.cached_tokens ?? 0) + (d.cache_write_tokens ?? 0) > prompt) {
      wrong.push('cached tokens above prompt_tokens');
      d.cached_tokens = Math.min(d.cached_tokens ?? 0, prompt);
      d.cache_write_tokens = Math.min(d.cache_write_tokens ?? 0, prompt - d.cached_tokens);
    }
  }
  const cd = reported.completion_tokens_details;
  if (cd)
    usage.completion_tokens_details = {
      ...cd,
      reasoning_tokens: opt('reasoning_tokens', cd.reasoning_tokens),
    };
  const st = reported.server_tool_use;
  if (st)
    usage.server_tool_use = {
      ...st,
      web_search_requests: opt('web_search_requests', st.web_search_requests),
    };
  if (reported.search_units !== undefined)
    usage.search_units = fix('search_units', reported.search_units, () => 1);
  return { usage, invalid: wrong.length ? `usage_invalid: ${wrong.join(', ')}` : null };
}
