import type { Usage } from '../formats/chat.js';
import type { Body } from './call.js';
import type { ModelEndpoint } from './catalog.js';
import type { ModelKind } from './catalog-types.js';
import { costOf } from './pricing.js';

/**
 * A call's worst-case cost, reserved against spend limits while it runs (credits/reservations.ts):
 * the prompt as estimated from its text at the input price, plus the most output the call may
 * produce at the output price, on the dearest endpoint it may be served by.
 *
 * The most output: the caller's `max_tokens` / `max_completion_tokens` / `max_output_tokens`
 * (bounded by the endpoint's own maximum), else the endpoint's maximum capped at `defaultOutput`
 * (a call without a cap that writes more than that may overspend a limit by the difference).
 */

/** Output tokens reserved for a call that names no maximum (GATEHOUSE_RESERVE_OUTPUT_TOKENS). */
export const DEFAULT_RESERVED_OUTPUT_TOKENS = 4096;

/** The caller's own output cap, when it names a positive one. */
export function requestedMaxOutput(body: Body): number | null {
  for (const field of ['max_tokens', 'max_completion_tokens', 'max_output_tokens']) {
    const v = body[field];
    if (typeof v === 'number' && Number.isFinite(v) && v > 0) return Math.ceil(v);
  }
  return null;
}

/** The searches a rerank body may be billed: one per 100 documents (Cohere's search unit). */
const rerankSearches = (body: Body): number =>
  Math.max(1, Math.ceil((Array.isArray(body.documents) ? body.documents.length : 0) / 100));

export function worstCaseUsd(
  endpoints: Pick<ModelEndpoint, 'pricing' | 'maxCompletionTokens'>[],
  opts: {
    body: Body;
    promptTokens: number;
    kind: ModelKind;
    defaultOutput: number;
    /** Audio units the body bills before any answer (CallWire.audioUnits). */
    audio?: Usage['audio'];
  },
): number {
  const requested = requestedMaxOutput(opts.body);
  let worst = 0;
  for (const e of endpoints) {
    const ceiling = e.maxCompletionTokens ?? Number.POSITIVE_INFINITY;
    const output =
      opts.kind !== 'chat'
        ? 0
        : requested !== null
          ? Math.min(requested, ceiling)
          : Math.min(opts.defaultOutput, ceiling);
    const usage = {
      prompt_tokens: opts.promptTokens,
      completion_tokens: output,
      total_tokens: opts.promptTokens + output,
      // Cohere bills a search unit per 100 documents.
      ...(opts.kind === 'rerank' ? { search_units: rerankSearches(opts.body) } : {}),
      ...(opts.audio ? { audio: opts.audio } : {}),
    };
    worst = Math.max(worst, costOf(e.pricing, usage).total);
  }
  return worst;
}
