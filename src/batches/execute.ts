import type { Caller } from '../accounts/caller.js';
import { TranslationError } from '../formats/chat.js';
import { type CallerWire, type ChatWire, WIRES } from '../inference/wires/index.js';
import { isObj } from '../inference/wires/texts.js';
import { forwardedHeaders } from '../inference/wires/wire.js';
import { ApiError } from '../lib/errors.js';
import type { CallHooks, InferenceCall } from '../routing/call.js';
import type { Completed, Engine, Served } from '../routing/engine.js';
import { parsePreferences } from '../routing/preferences.js';
import type { Cost } from '../routing/pricing.js';
import type { TraceParent } from '../telemetry/spans.js';
import { BATCH_ENDPOINTS, type BatchEndpoint, type BatchProviderPrefs } from './model.js';
import type { BatchRow, RequestResult } from './store.js';

/**
 * The provider headers a batch's create call may carry for its requests: every batch endpoint's own
 * allow-list (the synchronous routes'), since `POST /batches` learns its endpoint only from the body.
 * Each request then gets only those its endpoint forwards (see `executeRequest`).
 */
export const BATCH_FORWARD_HEADERS: readonly string[] = [
  ...new Set(Object.values(BATCH_ENDPOINTS).flatMap((name) => WIRES[name].forwardHeaders)),
];

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
  batch: Pick<BatchRow, 'endpoint' | 'provider_json' | 'headers_json'>,
  caller: Caller,
  item: string,
  signal: AbortSignal,
  hooks: CallHooks,
  /** Provider-native batches: served by this provider only, priced at `discount` off. */
  native?: { provider: string; discount: number },
  /** The batch item's span (its attempts go under it). */
  trace?: TraceParent,
): Promise<Execution> {
  const wire = WIRES[BATCH_ENDPOINTS[batch.endpoint as BatchEndpoint]];
  const sent = (JSON.parse(item) as { body: Record<string, unknown> }).body;
  // A batch request is answered whole: its `stream` flag is ignored.
  const body = sent.stream === undefined ? sent : { ...sent, stream: false };
  // The batch's `provider` (only / allow_fallbacks) overrides the request's own preferences.
  const batchPrefs = batch.provider_json ? (JSON.parse(batch.provider_json) as BatchProviderPrefs) : {};
  try {
    const call: InferenceCall = {
      caller,
      wire,
      body,
      model: wire.inspect(body).model,
      stream: false,
      // The create call's allow-listed provider headers (anthropic-beta, …), as the synchronous
      // endpoint passes the caller's on — only those its allow-list names (a batch may have captured
      // another endpoint's): translation and lanes then filter them per provider.
      headers: batch.headers_json
        ? forwardedHeaders(JSON.parse(batch.headers_json) as Record<string, string>, wire.forwardHeaders)
        : {},
      prefs: {
        ...parsePreferences(body.provider),
        ...batchPrefs,
        ...(native ? { only: [native.provider], allow_fallbacks: false } : {}),
      },
      echoUpstream: isObj(body.debug) && body.debug.echo_upstream_body === true,
      signal,
      hooks,
      ...(trace ? { trace } : {}),
    };
    // The body of each answer is exactly what the synchronous endpoint would have answered.
    if (wire === WIRES.embeddings) {
      const done = discounted(await engine.embed(call), native?.discount);
      return { kind: 'served', result: resultOf(done, answerText(WIRES.embeddings, done, call)) };
    }
    const done = discounted(await engine.complete(call), native?.discount);
    return { kind: 'served', result: resultOf(done, answerText(wire as ChatWire, done, call)) };
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

/** The answer's cost less the provider's batch discount (its generation row is discounted by the caller's hook). */
function discounted<T extends Served>(done: T, discount: number | undefined): T {
  if (!discount) return done;
  return { ...done, cost: applyDiscount(done.cost, discount) };
}

/** USD rounded as pricing rounds it (1e-12), so sums stay stable across databases. */
const round = (usd: number) => Math.round(usd * 1e12) / 1e12;

export function applyDiscount(cost: Cost, discount: number): Cost {
  const f = 1 - discount;
  return {
    total: round(cost.total * f),
    prompt: round(cost.prompt * f),
    completion: round(cost.completion * f),
  };
}

/** The body the synchronous endpoint answers for a served call (a lane's as it relays it). */
function answerText<R>(wire: CallerWire<R>, done: Completed<R>, call: InferenceCall): string {
  if (!done.lane) return JSON.stringify(wire.encodeResponse(done, call));
  const added = wire.relayJson?.(done, call);
  if (added === undefined) return done.forwarded.text;
  return typeof added === 'string' ? added : JSON.stringify(added);
}

function resultOf(served: Served, responseBody: string): RequestResult {
  const { usage, cost, info } = served;
  const byok = info.served.credential.isByok;
  return {
    status_code: 200,
    generation_id: info.generationId,
    response_body: responseBody,
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
