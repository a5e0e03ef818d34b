import type { ChatRequest } from '../formats/chat.js';
import type { SafeguardResult } from '../guardrails/content-filters.js';
import { CallAbort, type CallSignal } from '../lib/call-abort.js';
import { ApiError } from '../lib/errors.js';
import { UpstreamError } from '../providers/types.js';
import type { CallChecks, InferenceCall, RouteInfo } from './call.js';
import type { ModelEntry } from './catalog.js';
import type { RoutingMetrics } from './metrics.js';
import type { Candidate, Exclusion } from './select.js';

/** A call checked and planned: the filtered request and the endpoints to try, in order. */
export interface Prepared {
  model: ModelEntry;
  request: ChatRequest;
  candidates: Candidate[];
  excluded: Exclusion[];
  safeguards: SafeguardResult[];
  strategy: string;
  checks: CallChecks;
}

/** What the fallback loop needs from the engine. */
export interface FallbackContext {
  metrics: RoutingMetrics;
  newGenerationId: () => string;
  upstreamTimeoutMs: number;
  maxRetryWaitMs: number;
  /** Observed latency per provider (EWMA, ms), updated on each success. */
  latency: Map<string, number>;
  /** Every candidate failed: record the failed generation. */
  onExhausted: (
    call: InferenceCall,
    prep: Prepared,
    last: { err: UpstreamError; provider: string },
    attempts: number,
    startedAt: number,
  ) => void;
  /** The caller went away during an attempt on `c` (which is then aborted): record it. */
  onCancelled: (
    call: InferenceCall,
    prep: Prepared,
    c: Candidate,
    attempts: number,
    startedAt: number,
  ) => void;
}

const sleep = (ms: number, signal: CallSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(t);
      reject(signal.reason);
    });
  });

/** An upstream failure as the caller's error: 429 stays 429 (with its Retry-After), 5xx and unreachable are 502. */
export function upstreamToApiError(err: UpstreamError, provider: string): ApiError {
  const status = err.status === 0 ? 502 : err.status;
  const where = `Upstream provider ${provider}`;
  if (err.status === 0) return new ApiError(502, `${where} could not be reached: ${err.message}`);
  if (status === 429)
    return new ApiError(
      429,
      `${where} is rate limiting requests: ${err.message}`,
      err.retryAfterMs !== undefined ? { retry_after_ms: err.retryAfterMs } : undefined,
    );
  if (status >= 500) return new ApiError(502, `${where} failed (${err.status}): ${err.message}`);
  return new ApiError(status, `${where} rejected the request: ${err.message}`);
}

/**
 * Runs `attempt` over the planned candidates: the next one on a retryable failure (429, 5xx,
 * timeout, connection error) unless fallbacks are off, the last one once more after its
 * Retry-After when that is short enough (not after a timeout), operator-paid candidates only while
 * the balance allows. Each attempt has its own deadline and, for batch callers, waits for a
 * provider slot first.
 */
export async function routeWithFallbacks<T>(
  ctx: FallbackContext,
  call: InferenceCall,
  prep: Prepared,
  attempt: (c: Candidate, req: ChatRequest, signal: CallSignal) => Promise<T>,
): Promise<{ result: T; info: RouteInfo }> {
  const startedAt = Date.now();
  const allowFallbacks = call.prefs.allow_fallbacks !== false;
  const list = allowFallbacks ? prep.candidates : prep.candidates.slice(0, 1);
  let attempts = 0;
  let retried = false;
  let lastError: { err: UpstreamError; provider: string } | null = null;
  for (let i = 0; i < list.length; i++) {
    const c = list[i] as Candidate;
    // Paying on the operator's key needs credits; BYOK calls do not.
    if (!c.credential.isByok) {
      const verdict = await prep.checks.balance();
      if (!verdict.ok) {
        if (i === list.length - 1 && !lastError) throw new ApiError(verdict.status, verdict.message);
        continue;
      }
    }
    attempts++;
    const upstreamRequest = { ...prep.request, model: c.endpoint.upstreamModel };
    // The deadline bounds the attempt until it resolves (a whole completion, or a stream's
    // headers): a stream that keeps sending must not be cut by it later. The silence between a
    // stream's chunks is bounded by the adapters (CallContext.idleTimeoutMs).
    // One CallAbort aborted by the caller's signal or the deadline (AbortSignal.any, or even an
    // AbortController, would cost an EventTarget per attempt).
    const attemptAbort = new CallAbort();
    const signal: CallSignal = attemptAbort;
    let timedOut = false;
    const onCallAbort = () => attemptAbort.abort(call.signal.reason);
    if (call.signal.aborted) onCallAbort();
    else call.signal.addEventListener('abort', onCallAbort, { once: true });
    const timer = setTimeout(() => {
      timedOut = true;
      attemptAbort.abort(new DOMException(`timed out after ${ctx.upstreamTimeoutMs} ms`, 'TimeoutError'));
    }, ctx.upstreamTimeoutMs);
    timer.unref(); // as AbortSignal.timeout's: never what keeps the process alive
    const release = call.hooks?.acquire ? await call.hooks.acquire(c.endpoint.provider) : null;
    const t0 = performance.now();
    try {
      const result = await attempt(c, upstreamRequest, signal);
      clearTimeout(timer);
      const seconds = (performance.now() - t0) / 1000;
      ctx.metrics.upstreamLatency.observe({ provider: c.endpoint.provider, outcome: 'ok' }, seconds);
      const prev = ctx.latency.get(c.endpoint.provider);
      ctx.latency.set(c.endpoint.provider, prev === undefined ? seconds * 1000 : prev * 0.8 + seconds * 200);
      return {
        result,
        info: {
          generationId: ctx.newGenerationId(),
          requested: call.request.model,
          model: prep.model,
          served: c,
          attempts,
          considered: prep.model.endpoints.map((e) => ({
            model: prep.model.id,
            provider: e.provider,
            selected: e.provider === c.endpoint.provider,
          })),
          excluded: prep.excluded,
          startedAt,
          safeguards: prep.safeguards,
          upstreamRequest,
          strategy: prep.strategy,
        },
      };
    } catch (raw) {
      if (call.signal.aborted) {
        ctx.onCancelled(call, prep, c, attempts, startedAt);
        throw raw;
      }
      // (After a success the link stays: a stream keeps using the signal after the attempt resolved.)
      call.signal.removeEventListener('abort', onCallAbort);
      const err =
        raw instanceof UpstreamError
          ? raw
          : timedOut
            ? new UpstreamError(0, `timed out after ${ctx.upstreamTimeoutMs} ms`)
            : new UpstreamError(0, (raw as Error).message ?? 'upstream call failed');
      ctx.metrics.upstreamErrors.inc({ provider: c.endpoint.provider, status: String(err.status) });
      ctx.metrics.upstreamLatency.observe(
        { provider: c.endpoint.provider, outcome: 'error' },
        (performance.now() - t0) / 1000,
      );
      lastError = { err, provider: c.endpoint.provider };
      if (!err.retryable) break;
      const isLast = i === list.length - 1;
      if (!isLast) {
        ctx.metrics.fallbacks.inc({ from_provider: c.endpoint.provider });
        continue;
      }
      // A timed-out attempt has already spent the whole deadline: trying it again would make the
      // caller of a stalled provider wait twice as long for the same answer.
      const wait = err.retryAfterMs ?? 0;
      if (!retried && !timedOut && wait <= ctx.maxRetryWaitMs) {
        retried = true;
        await sleep(wait, call.signal);
        i--; // the same candidate once more
      }
    } finally {
      clearTimeout(timer);
      release?.();
    }
  }
  if (!lastError) throw new ApiError(502, 'No provider could serve the request');
  ctx.onExhausted(call, prep, lastError, attempts, startedAt);
  throw upstreamToApiError(lastError.err, lastError.provider);
}
