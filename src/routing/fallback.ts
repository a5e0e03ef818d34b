import { TranslationError } from '../formats/chat.js';
import type { SafeguardRecord, SafeguardResult } from '../guardrails/content-filters.js';
import { CallAbort, type CallSignal } from '../lib/call-abort.js';
import { ApiError } from '../lib/errors.js';
import { isTransientStatus, UpstreamError } from '../providers/types.js';
import { attemptFailed, attemptSpan } from '../telemetry/genai.js';
import type { TracedSpan } from '../telemetry/spans.js';
import type { Attempt, Body, CallChecks, CallHold, InferenceCall, Tried } from './call.js';
import type { ModelEntry } from './catalog.js';
import type { CredentialGate } from './credentials/service.js';
import type { RoutingMetrics } from './metrics.js';
import type { SkippedModel } from './model-chain.js';
import type { Candidate, Exclusion } from './select.js';

/**
 * The fallback loop: the planned attempts are tried in order, each as a sequence of named steps —
 * pay (may the operator's key be used?), open (deadline and cancellation of the attempt), run,
 * then on failure classify (what kind of failure) and decide (next attempt, one retry of the last,
 * or stop). Each step is a small function of its own, tested on fake dependencies and timers.
 */

/** A call checked and planned: the filtered body, its translation if needed, what to try. */
export interface Prepared {
  /** The first model to try (the primary unless it was skipped). */
  model: ModelEntry;
  /** Every model to try, in order (`models`, configured fallbacks): the attempts run through them. */
  models: ModelEntry[];
  /** Models of the list left out (guardrail, context length), for gateway_metadata. */
  skippedModels: SkippedModel[];
  /** The catalog id of the model the caller named. */
  primaryModel: string;
  /** The caller's body after content filters (redactions applied). */
  body: Body;
  /** The canonical request, when a translated attempt needs it (or provider.require_parameters). */
  canonical: unknown;
  attempts: Attempt[];
  excluded: Exclusion[];
  safeguards: SafeguardResult[];
  /** The request's checks as the generation keeps them. */
  safeguardRecords: SafeguardRecord[];
  strategy: string;
  checks: CallChecks;
  /** The call's spend reservation (a billed call; none for count_tokens). */
  hold?: CallHold;
  /** A stream's relay began (it settles the reservation from then on). */
  onStreamStart?: () => void;
}

/** The attempt that failed last. */
export interface Failure {
  err: UpstreamError;
  provider: string;
  /** The model the failed attempt was for (absent: the call's first). */
  model?: string;
  lane: boolean;
}

/** What the fallback loop needs from the engine. */
export interface FallbackContext {
  metrics: RoutingMetrics;
  upstreamTimeoutMs: number;
  maxRetryWaitMs: number;
  /** Observed latency per provider (EWMA, ms), updated on each success. */
  latency: Map<string, number>;
  /** Circuit breakers and sticky routes of the credentials (absent: every credential is always tried). */
  credentials?: CredentialGate;
  /** Every attempt failed: record the failed generation. */
  onExhausted: (
    call: InferenceCall,
    prep: Prepared,
    last: Failure,
    attempts: number,
    startedAt: number,
    tried: Tried[],
  ) => void;
  /** The caller went away during an attempt on `c` (which is then aborted): record it. */
  onCancelled: (
    call: InferenceCall,
    prep: Prepared,
    c: Candidate,
    attempts: number,
    startedAt: number,
    tried: Tried[],
  ) => void;
}

export type { Attempt, Tried } from './call.js';

/** The models of the attempts made, in order, each once. */
export const modelsTried = (tried: readonly Tried[]): string[] =>
  tried.map((t) => t.model).filter((m, i, all) => all.indexOf(m) === i);

/** How a call was routed: the attempt that served it and how many were made. */
export interface Routed<T> {
  result: T;
  served: Attempt;
  attempts: number;
  /** Every attempt made, in order (the serving one last). */
  tried: Tried[];
  startedAt: number;
  /** The serving attempt's span, left open: the engine ends it with the call's usage (null: not traced). */
  span: TracedSpan | null;
}

/**
 * The attempts the loop runs: all of them, or with `allow_fallbacks: false` those of the first
 * provider of each model — its several credentials included (that flag is about providers; the
 * request's `models` still fall back).
 */
export function attemptList(
  prep: Pick<Prepared, 'attempts'>,
  allowFallbacks: boolean | undefined,
): Attempt[] {
  if (allowFallbacks !== false) return prep.attempts;
  const first = new Map<string, string>();
  return prep.attempts.filter((a) => {
    const id = a.candidate.model.id;
    const provider = a.candidate.endpoint.provider;
    if (!first.has(id)) first.set(id, provider);
    return first.get(id) === provider;
  });
}

// ---------------------------------------------------------------------------------------------
// Steps

/**
 * pay: an attempt on the operator's key needs the organization's balance (BYOK calls do not).
 * False skips the attempt; when it is the only one that could run, the refusal (402) is thrown.
 */
export async function pay(
  prep: Pick<Prepared, 'checks' | 'hold'>,
  a: Attempt,
  onlyChance: boolean,
): Promise<boolean> {
  if (a.candidate.credential.isByok) return true;
  // A billed call reserves its worst case against the credits; others check the balance only.
  const verdict = prep.hold ? await prep.hold.credits() : await prep.checks.balance();
  if (verdict.ok) return true;
  if (onlyChance) throw new ApiError(verdict.status, verdict.message);
  return false;
}

/** An attempt's own cancellation: the caller's, or its deadline's. */
export interface AttemptScope {
  signal: CallSignal;
  timedOut(): boolean;
  /** After a failure: stop following the caller's signal (a success keeps it: a stream uses it). */
  unlink(): void;
  /** The attempt is over (its deadline no longer applies). */
  close(): void;
}

/**
 * open: one CallAbort aborted by the caller's signal or by the deadline. The deadline bounds the
 * attempt until it resolves (a whole answer, or a stream's headers): a stream that keeps sending
 * must not be cut by it later — its silences are bounded by the adapters (idleTimeoutMs, the
 * engine's streamIdleTimeoutMs).
 * (AbortSignal.any or an AbortController would cost an EventTarget per attempt.)
 */
export function openAttempt(callSignal: CallSignal, timeoutMs: number): AttemptScope {
  const abort = new CallAbort();
  let timedOut = false;
  const follow = () => abort.abort(callSignal.reason);
  if (callSignal.aborted) follow();
  else callSignal.addEventListener('abort', follow, { once: true });
  const timer = setTimeout(() => {
    timedOut = true;
    abort.abort(new DOMException(`timed out after ${timeoutMs} ms`, 'TimeoutError'));
  }, timeoutMs);
  timer.unref(); // as AbortSignal.timeout's: never what keeps the process alive
  return {
    signal: abort,
    timedOut: () => timedOut,
    unlink: () => callSignal.removeEventListener('abort', follow),
    close: () => clearTimeout(timer),
  };
}

/**
 * An attempt whose adapter could not translate the request for its provider (an image form it
 * cannot take, …): nothing was sent. Another provider of the model may still take the request;
 * when none does it is the caller's 400 naming the field — not an upstream failure, and no mark
 * against the credential's health.
 */
export class Untranslatable extends UpstreamError {
  constructor(
    message: string,
    /** What the caller's client may act on (TranslationError's `details`). */
    readonly details?: Record<string, unknown>,
  ) {
    super(400, message, { retryable: false });
    this.name = 'Untranslatable';
  }
}

/** classify: what an attempt threw, as an UpstreamError (a timeout and a transport error are status 0). */
export function classify(raw: unknown, timedOut: boolean, timeoutMs: number): UpstreamError {
  if (raw instanceof UpstreamError) return raw;
  if (raw instanceof TranslationError) return new Untranslatable(raw.message, raw.details);
  if (timedOut) return new UpstreamError(0, `timed out after ${timeoutMs} ms`);
  return new UpstreamError(0, (raw as Error)?.message || 'upstream call failed');
}

export type Next = { kind: 'next' } | { kind: 'retry'; waitMs: number } | { kind: 'stop' };

/**
 * decide: after a failure, the next attempt when there is one and the failure is retryable (429,
 * 5xx, timeouts, connection errors, or what the provider marks so: Azure's DeploymentNotFound);
 * the last attempt once more after its Retry-After when that is short enough and the failure is
 * transient (a missing deployment stays missing) — but not after a timeout (it already spent the whole deadline: the caller of a
 * stalled provider would wait twice as long for the same answer); otherwise stop.
 */
export function decide(
  err: UpstreamError,
  s: { isLast: boolean; retried: boolean; timedOut: boolean; maxRetryWaitMs: number },
): Next {
  // A refused credential (401/403) is that credential's failure: the next one may serve the call;
  // a request one provider's adapter cannot carry may still go to the next (never the same again).
  if (err instanceof Untranslatable) return s.isLast ? { kind: 'stop' } : { kind: 'next' };
  if (err.status === 401 || err.status === 403) return s.isLast ? { kind: 'stop' } : { kind: 'next' };
  if (!err.retryable) return { kind: 'stop' };
  if (!s.isLast) return { kind: 'next' };
  const waitMs = err.retryAfterMs ?? 0;
  if (isTransientStatus(err.status) && !s.retried && !s.timedOut && waitMs <= s.maxRetryWaitMs)
    return { kind: 'retry', waitMs };
  return { kind: 'stop' };
}

/** An upstream failure as the caller's error: 429 stays 429 (with its Retry-After), 5xx and unreachable are 502. */
export function upstreamToApiError(last: Failure): ApiError {
  const { err, provider } = last;
  if (err instanceof Untranslatable)
    return new ApiError(
      400,
      `The request cannot be sent to ${provider}: ${err.message}`,
      err.details && { details: err.details },
    );
  const where = `Upstream provider ${provider}`;
  // On a lane the caller speaks the provider's format: its own error body can go back as it is.
  const native = last.lane && err.body !== undefined ? { upstream_error: err.body } : undefined;
  if (err.status === 0) return new ApiError(502, `${where} could not be reached: ${err.message}`);
  if (err.status === 429)
    return new ApiError(429, `${where} is rate limiting requests: ${err.message}`, {
      ...(err.retryAfterMs !== undefined ? { retry_after_ms: err.retryAfterMs } : {}),
      ...native,
    });
  if (err.status >= 500) return new ApiError(502, `${where} failed (${err.status}): ${err.message}`, native);
  return new ApiError(err.status, `${where} rejected the request: ${err.message}`, native);
}

/** pay, for an attempt the breaker admitted: one that does not go out gives its turn back. */
async function payAdmitted(
  prep: Pick<Prepared, 'checks' | 'hold'>,
  a: Attempt,
  onlyChance: boolean,
  gate: CredentialGate | undefined,
): Promise<boolean> {
  let paid = false;
  try {
    paid = await pay(prep, a, onlyChance);
    return paid;
  } finally {
    if (!paid) gate?.release(a.candidate);
  }
}

/**
 * Every credential that could serve the call is out (open or disabled breakers) and none was
 * tried: 503, with Retry-After when one of them reopens (no upstream error to relay).
 */
function coolingDown(gate: CredentialGate | undefined, skipped: Candidate[]): ApiError {
  const providers = [...new Set(skipped.map((c) => c.endpoint.provider))].join(', ');
  const at = gate?.reopensAt(skipped) ?? null;
  return new ApiError(
    503,
    `Every credential of ${providers} is cooling down or disabled after upstream failures; try again later`,
    at !== null ? { retry_after_ms: Math.max(1000, at - Date.now()) } : undefined,
  );
}

const sleep = (ms: number, signal: CallSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(t);
      reject(signal.reason);
    });
  });

// ---------------------------------------------------------------------------------------------
// The loop

/**
 * Runs `run` over the planned attempts — every provider of the first model, then of the next
 * model of the list (`attemptList`: only each model's first when the caller turned fallbacks off),
 * each through the steps above; a batch caller waits for a provider slot before each attempt.
 * Throws the caller's error for the last failure once every attempt failed.
 */
export async function routeWithFallbacks<T>(
  ctx: FallbackContext,
  call: InferenceCall,
  prep: Prepared,
  run: (a: Attempt, signal: CallSignal) => Promise<T>,
): Promise<Routed<T>> {
  const startedAt = Date.now();
  const list = attemptList(prep, call.prefs.allow_fallbacks);
  const tried: Tried[] = [];
  let attempts = 0;
  let retried = false;
  let retrying = false;
  let last: Failure | null = null;
  const gate = ctx.credentials;
  /** Attempts passed over because their credential's breaker is open (for the refusal below). */
  const skipped: Candidate[] = [];
  for (let i = 0; i < list.length; i++) {
    const a = list[i] as Attempt;
    const provider = a.candidate.endpoint.provider;
    const isLast = i === list.length - 1;
    // A retry after Retry-After is the probe itself: it does not ask the breaker again.
    if (gate && !retrying && !gate.admit(a.candidate)) {
      skipped.push(a.candidate);
      continue;
    }
    retrying = false;
    if (!(await payAdmitted(prep, a, isLast && !last, gate))) continue;
    attempts++;
    const scope = openAttempt(call.signal, ctx.upstreamTimeoutMs);
    const release = call.hooks?.acquire ? await call.hooks.acquire(provider) : null;
    const t0 = performance.now();
    // One span per attempt, siblings under the request's: a fallback shows as the next one.
    const span = attemptSpan(call, prep, a, i);
    const attempted = (status: number | null) =>
      tried.push({
        model: a.candidate.model.id,
        provider,
        status,
        latencyMs: Math.round(performance.now() - t0),
        isByok: a.candidate.credential.isByok,
      });
    try {
      span?.bindSignal(scope.signal);
      const result = await run(a, scope.signal);
      const seconds = (performance.now() - t0) / 1000;
      // An answer a hook stood in for (a provider batch's, replayed) says nothing of the provider's speed.
      if (!call.hooks?.upstream) {
        ctx.metrics.upstreamLatency.observe({ provider, outcome: 'ok' }, seconds);
        const prev = ctx.latency.get(provider);
        ctx.latency.set(provider, prev === undefined ? seconds * 1000 : prev * 0.8 + seconds * 200);
      }
      attempted(200);
      gate?.settle(a.candidate, null);
      gate?.served(call, a.candidate);
      return { result, served: a, attempts, tried, startedAt, span };
    } catch (raw) {
      if (call.signal.aborted) {
        gate?.release(a.candidate);
        attempted(null);
        attemptFailed(span, raw, null);
        ctx.onCancelled(call, prep, a.candidate, attempts, startedAt, tried);
        throw raw;
      }
      scope.unlink();
      const err = classify(raw, scope.timedOut(), ctx.upstreamTimeoutMs);
      if (err instanceof Untranslatable) {
        // Nothing went upstream: no verdict on the credential, no upstream metrics, and a real
        // upstream failure before it stays the one the caller is told of.
        gate?.release(a.candidate);
        attempted(null);
        if (!last) last = { err, provider, model: a.candidate.model.id, lane: a.lane };
      } else {
        gate?.settle(a.candidate, err);
        attempted(err.status || null);
        ctx.metrics.upstreamErrors.inc({ provider, status: String(err.status) });
        ctx.metrics.upstreamLatency.observe({ provider, outcome: 'error' }, (performance.now() - t0) / 1000);
        last = { err, provider, model: a.candidate.model.id, lane: a.lane };
      }
      attemptFailed(span, err, err.status || null);
      const next = decide(err, {
        isLast,
        retried,
        timedOut: scope.timedOut(),
        maxRetryWaitMs: ctx.maxRetryWaitMs,
      });
      if (next.kind === 'stop') break;
      if (next.kind === 'next') {
        ctx.metrics.fallbacks.inc({ from_provider: provider });
        continue;
      }
      retried = true;
      retrying = true;
      await sleep(next.waitMs, call.signal);
      i--; // the same attempt once more
    } finally {
      scope.close();
      release?.();
    }
  }
  if (!last && skipped.length > 0) throw coolingDown(gate, skipped);
  if (!last) throw new ApiError(502, 'No provider could serve the request');
  ctx.onExhausted(call, prep, last, attempts, startedAt, tried);
  throw upstreamToApiError(last);
}
