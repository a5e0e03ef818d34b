import type { Caller } from '../accounts/caller.js';
import { TranslationError } from '../formats/chat.js';
import { chatParsers, embeddingsRequestFromBody, responseBodies } from '../inference/bodies.js';
import { ApiError } from '../lib/errors.js';
import type { CallHooks } from '../routing/call.js';
import type { Engine } from '../routing/engine.js';
import { parsePreferences } from '../routing/preferences.js';
import { BATCH_ENDPOINTS, type BatchEndpoint, type BatchProviderPrefs } from './model.js';
import type { BatchRow, RequestResult } from './store.js';

/** How one run of a batch request ended. */
export type Execution =
  | { kind: 'served'; result: RequestResult }
  | { kind: 'failed'; status: number; message: string; retryAfterMs?: number };

/**
 * Runs one stored batch request through the routing engine, exactly as its endpoint would
 * (non-streaming), and returns the endpoint's response body with its usage — or the refusal or
 * upstream failure. Throws only when `signal` aborted the call.
 */
export async function executeRequest(
  engine: Engine,
  batch: Pick<BatchRow, 'endpoint' | 'provider_json'>,
  caller: Caller,
  item: string,
  signal: AbortSignal,
  hooks: CallHooks,
): Promise<Execution> {
  const endpoint = BATCH_ENDPOINTS[batch.endpoint as BatchEndpoint];
  const body = (JSON.parse(item) as { body: Record<string, unknown> }).body;
  // The batch's `provider` (only / allow_fallbacks) overrides the request's own preferences.
  const batchPrefs = batch.provider_json ? (JSON.parse(batch.provider_json) as BatchProviderPrefs) : {};
  const prefs = { ...parsePreferences(body.provider), ...batchPrefs };
  try {
    if (endpoint === 'embeddings') {
      const served = await engine.embeddings({
        caller,
        endpoint,
        request: embeddingsRequestFromBody(body),
        prefs,
        echoUpstream: false,
        signal,
        hooks,
      });
      return { kind: 'served', result: resultOf(served, responseBodies.embeddings(served)) };
    }
    const request = { ...chatParsers[endpoint](body), stream: false };
    const echo = (body.debug as { echo_upstream_body?: unknown } | undefined)?.echo_upstream_body === true;
    const served = await engine.chat({ caller, endpoint, request, prefs, echoUpstream: echo, signal, hooks });
    return { kind: 'served', result: resultOf(served, responseBodies[endpoint](served, request, echo)) };
  } catch (err) {
    if (signal.aborted) throw err;
    if (err instanceof ApiError) {
      const retryAfter = err.metadata?.retry_after_ms;
      return {
        kind: 'failed',
        status: err.status,
        message: err.message,
        ...(typeof retryAfter === 'number' ? { retryAfterMs: retryAfter } : {}),
      };
    }
    if (err instanceof TranslationError) return { kind: 'failed', status: 400, message: err.message };
    throw err;
  }
}

type Served = Parameters<typeof responseBodies.embeddings>[0] | Parameters<typeof responseBodies.chat>[0];

function resultOf(served: Served, body: unknown): RequestResult {
  const { usage, cost, info } = served;
  const byok = info.served.credential.isByok;
  return {
    status_code: 200,
    generation_id: info.generationId,
    response_body: JSON.stringify(body),
    error_json: null,
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    reasoning_tokens: usage.completion_tokens_details?.reasoning_tokens ?? 0,
    cached_tokens: usage.prompt_tokens_details?.cached_tokens ?? 0,
    cache_write_tokens: usage.prompt_tokens_details?.cache_write_tokens ?? 0,
    cost_usd: byok ? 0 : cost.total,
    prompt_cost_usd: cost.prompt,
    completion_cost_usd: cost.completion,
    upstream_cost_usd: byok ? cost.total : 0,
    is_byok: byok ? 1 : 0,
  };
}
