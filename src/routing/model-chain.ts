import { ApiError, badRequest } from '../lib/errors.js';
import type { Verdict } from './call.js';
import type { ModelEntry } from './catalog.js';

/**
 * The model list of a call (OpenRouter's `models`): the primary, then the models tried in order
 * when every provider of the one before failed. Each is checked against the caller's guardrail
 * (a disallowed one is skipped) and against the prompt's size (one whose context is too small
 * gives way to its `context_fallback`, else to the next model of the list).
 */

export interface ChainInput {
  primary: ModelEntry;
  /** The request's `models` (catalog entries, in order, the primary possibly among them), or null. */
  listed: ModelEntry[] | null;
  /** A catalog model by id (configured fallbacks and context fallbacks name catalog ids). */
  lookup: (id: string) => ModelEntry | undefined;
  allowed: (model: ModelEntry) => Verdict;
  /** Estimated tokens of the prompt. */
  promptTokens: number;
}

/** A model of the list that was not tried, and why. */
export interface SkippedModel {
  model: string;
  reason: string;
}

export interface ModelChain {
  models: ModelEntry[];
  skipped: SkippedModel[];
}

/**
 * The longest context any endpoint of a model is known to take (each endpoint may differ); an
 * endpoint whose length is only the default is not limited here (its upstream decides).
 */
export const contextLength = (m: ModelEntry): number =>
  Math.max(0, ...m.endpoints.map((e) => (e.contextAssumed ? Number.POSITIVE_INFINITY : e.contextLength)));

/**
 * The models to try, in order. Without `listed`, the primary's configured `fallbacks` follow it.
 * Throws the first guardrail refusal (403) when no model is allowed, and a 400
 * `context_length_exceeded` naming the context length when no allowed model fits the prompt.
 */
export function modelChain(input: ChainInput): ModelChain {
  const { primary, lookup } = input;
  const rest =
    input.listed ?? (primary.fallbacks ?? []).map(lookup).filter((m): m is ModelEntry => m !== undefined);
  const queue = [primary, ...rest];
  const seen = new Set<string>();
  const models: ModelEntry[] = [];
  const skipped: SkippedModel[] = [];
  let refusal: Verdict | null = null;
  let tooLong: { model: ModelEntry; context: number } | null = null;
  for (let i = 0; i < queue.length; i++) {
    const m = queue[i] as ModelEntry;
    if (seen.has(m.id)) continue;
    seen.add(m.id);
    const verdict = input.allowed(m);
    if (!verdict.ok) {
      refusal ??= verdict;
      skipped.push({ model: m.id, reason: verdict.message });
      continue;
    }
    const context = contextLength(m);
    if (input.promptTokens > context) {
      tooLong ??= { model: m, context };
      skipped.push({
        model: m.id,
        reason: `context length ${context} tokens is below the prompt's ~${input.promptTokens}`,
      });
      // Its larger-context model is tried in its place, before the rest of the list.
      const larger = m.contextFallback ? lookup(m.contextFallback) : undefined;
      if (larger) queue.splice(i + 1, 0, larger);
      continue;
    }
    models.push(m);
  }
  if (models.length > 0) return { models, skipped };
  if (tooLong)
    // `error.code` stays the status (clients validate it as a number): the OpenAI code is metadata.
    throw badRequest(
      `context_length_exceeded: ${tooLong.model.id}'s maximum context length is ${tooLong.context} tokens; the prompt has about ${input.promptTokens}. Shorten the prompt, or name a model with a larger context.`,
      { code: 'context_length_exceeded', context_length: tooLong.context, prompt_tokens: input.promptTokens },
    );
  const r = refusal as (Verdict & { ok: false }) | null;
  throw new ApiError(r?.status ?? 403, r?.message ?? `Model ${primary.id} is not allowed`);
}
