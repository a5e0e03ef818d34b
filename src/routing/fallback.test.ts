import { afterEach, describe, expect, it, vi } from 'vitest';
import { TranslationError } from '../formats/chat.js';
import { CallAbort, type CallSignal } from '../lib/call-abort.js';
import { ApiError } from '../lib/errors.js';
import { UpstreamError } from '../providers/types.js';
import type { CallChecks, InferenceCall } from './call.js';
import {
  type Attempt,
  attemptList,
  classify,
  decide,
  type FallbackContext,
  modelsTried,
  openAttempt,
  type Prepared,
  routeWithFallbacks,
  Untranslatable,
  upstreamToApiError,
} from './fallback.js';

/** Counters that remember what they were told. */
function fakeMetrics() {
  const seen: Record<string, unknown[]> = { fallbacks: [], errors: [], latency: [] };
  return {
    seen,
    metrics: {
      fallbacks: { inc: (l: unknown) => seen.fallbacks?.push(l) },
      upstreamErrors: { inc: (l: unknown) => seen.errors?.push(l) },
      upstreamLatency: { observe: (l: unknown) => seen.latency?.push(l) },
    } as unknown as FallbackContext['metrics'],
  };
}

function fakeContext(over: Partial<FallbackContext> = {}) {
  const { seen, metrics } = fakeMetrics();
  const exhausted: unknown[] = [];
  const cancelled: string[] = [];
  const ctx: FallbackContext = {
    metrics,
    upstreamTimeoutMs: 1_000,
    maxRetryWaitMs: 5_000,
    latency: new Map(),
    onExhausted: (_call, _prep, last, attempts) => exhausted.push({ provider: last.provider, attempts }),
    onCancelled: (_call, _prep, c) => cancelled.push(c.endpoint.provider),
    ...over,
  };
  return { ctx, seen, exhausted, cancelled };
}

const attempt = (provider: string, opts: { byok?: boolean; lane?: boolean; model?: string } = {}): Attempt =>
  ({
    candidate: {
      model: { id: opts.model ?? 'test/model' },
      endpoint: { provider, upstreamModel: `${provider}-model` },
      credential: { apiKey: `key-${provider}`, isByok: opts.byok ?? false },
    },
    lane: opts.lane ?? false,
  }) as unknown as Attempt;

function prepared(attempts: Attempt[], balanceOk = true): Prepared {
  const checks = {
    balance: async () =>
      balanceOk ? { ok: true } : { ok: false, status: 402, message: 'Insufficient credits' },
  } as unknown as CallChecks;
  return { attempts, checks } as unknown as Prepared;
}

const callWith = (over: Partial<InferenceCall> = {}): InferenceCall =>
  ({ prefs: {}, signal: new CallAbort(), ...over }) as unknown as InferenceCall;

afterEach(() => vi.useRealTimers());

const at = (isLast: boolean, retried = false, timedOut = false) => ({
  isLast,
  retried,
  timedOut,
  maxRetryWaitMs: 2_000,
});

describe('decide: what follows a failed attempt', () => {
  it('moves on after a retryable failure while attempts remain', () => {
    expect(decide(new UpstreamError(503, 'down'), at(false))).toEqual({ kind: 'next' });
    expect(decide(new UpstreamError(0, 'reset'), at(false))).toEqual({ kind: 'next' });
  });
  it('stops at a failure that is the request’s own (4xx other than 408/429)', () => {
    expect(decide(new UpstreamError(400, 'bad'), at(false))).toEqual({ kind: 'stop' });
  });
  it('retries the last attempt once, after its Retry-After when that is short enough', () => {
    expect(decide(new UpstreamError(429, 'slow', { retryAfterMs: 1_500 }), at(true))).toEqual({
      kind: 'retry',
      waitMs: 1_500,
    });
    expect(decide(new UpstreamError(429, 'slow', { retryAfterMs: 9_000 }), at(true))).toEqual({
      kind: 'stop',
    });
    expect(decide(new UpstreamError(503, 'down'), at(true, true))).toEqual({ kind: 'stop' });
  });
  it('moves on after a failure the provider marks retryable, but never asks the same again for it', () => {
    const missing = new UpstreamError(404, 'deployment not found', { retryable: true });
    expect(decide(missing, at(false))).toEqual({ kind: 'next' });
    expect(decide(missing, at(true))).toEqual({ kind: 'stop' });
  });
  it('never retries an attempt that spent its whole deadline', () => {
    expect(decide(new UpstreamError(0, 'timed out'), at(true, false, true))).toEqual({ kind: 'stop' });
  });
});

describe('classify: what an attempt threw', () => {
  it('keeps upstream errors, and makes timeouts and transport failures status 0', () => {
    const upstream = new UpstreamError(502, 'bad gateway');
    expect(classify(upstream, false, 10)).toBe(upstream);
    expect(classify(new Error('aborted'), true, 800)).toMatchObject({
      status: 0,
      message: 'timed out after 800 ms',
    });
    expect(classify(new Error('socket hang up'), false, 800)).toMatchObject({ status: 0, retryable: true });
  });
  it('makes an adapter’s TranslationError an Untranslatable 400: the next provider, never the same again', () => {
    const err = classify(new TranslationError('image_url must be a data: URL'), false, 800);
    expect(err).toBeInstanceOf(Untranslatable);
    expect(err.status).toBe(400);
    expect(decide(err, at(false))).toEqual({ kind: 'next' });
    expect(decide(err, at(true))).toEqual({ kind: 'stop' });
    expect(upstreamToApiError({ err, provider: 'anthropic', lane: false })).toMatchObject({
      status: 400,
      message: 'The request cannot be sent to anthropic: image_url must be a data: URL',
    });
  });
});

describe('openAttempt: an attempt’s deadline and cancellation', () => {
  it('aborts at the deadline, and says it timed out', () => {
    vi.useFakeTimers();
    const scope = openAttempt(new CallAbort(), 500);
    vi.advanceTimersByTime(499);
    expect(scope.signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(scope.signal.aborted).toBe(true);
    expect(scope.timedOut()).toBe(true);
  });
  it('follows the caller’s cancellation until unlinked, and stops its deadline when closed', () => {
    vi.useFakeTimers();
    const caller = new CallAbort();
    const scope = openAttempt(caller, 500);
    scope.close();
    vi.advanceTimersByTime(1_000);
    expect(scope.signal.aborted).toBe(false);
    caller.abort(new Error('client left'));
    expect(scope.signal.aborted).toBe(true);

    const other = new CallAbort();
    const unlinked = openAttempt(other, 500);
    unlinked.unlink();
    other.abort(new Error('gone'));
    expect(unlinked.signal.aborted).toBe(false);
    unlinked.close();
  });
});

describe('upstreamToApiError: the caller’s error for the last failure', () => {
  it('maps statuses and keeps a lane’s own error body for the caller of the same format', () => {
    const body = { type: 'error', error: { type: 'invalid_request_error', message: 'bad field' } };
    const lane = upstreamToApiError({
      err: new UpstreamError(400, 'bad field', { body }),
      provider: 'anthropic',
      lane: true,
    });
    expect(lane).toMatchObject({ status: 400, metadata: { upstream_error: body } });
    const hub = upstreamToApiError({
      err: new UpstreamError(400, 'bad field', { body }),
      provider: 'anthropic',
      lane: false,
    });
    expect(hub.metadata).toBeUndefined();
    expect(
      upstreamToApiError({ err: new UpstreamError(503, 'down'), provider: 'x', lane: false }).status,
    ).toBe(502);
    expect(
      upstreamToApiError({
        err: new UpstreamError(429, 'slow', { retryAfterMs: 700 }),
        provider: 'x',
        lane: false,
      }),
    ).toMatchObject({ status: 429, metadata: { retry_after_ms: 700 } });
  });
});

describe('routeWithFallbacks', () => {
  it('tries the next attempt after a retryable failure and reports the one that served', async () => {
    const { ctx, seen } = fakeContext();
    const tried: string[] = [];
    const routed = await routeWithFallbacks(
      ctx,
      callWith(),
      prepared([attempt('a'), attempt('b', { lane: true })]),
      async (a) => {
        tried.push(a.candidate.endpoint.provider);
        if (a.candidate.endpoint.provider === 'a') throw new UpstreamError(500, 'boom');
        return 'ok';
      },
    );
    expect(tried).toEqual(['a', 'b']);
    expect(routed).toMatchObject({ result: 'ok', attempts: 2, served: { lane: true } });
    expect(seen.fallbacks).toEqual([{ from_provider: 'a' }]);
    expect(ctx.latency.has('b')).toBe(true);
  });

  it('stops at a non-retryable failure: the failure is recorded and answered', async () => {
    const { ctx, exhausted } = fakeContext();
    const run = vi.fn(async () => {
      throw new UpstreamError(400, 'invalid');
    });
    const err = await routeWithFallbacks(ctx, callWith(), prepared([attempt('a'), attempt('b')]), run).catch(
      (e) => e,
    );
    expect(err).toBeInstanceOf(ApiError);
    expect(err.status).toBe(400);
    expect(run).toHaveBeenCalledTimes(1);
    expect(exhausted).toEqual([{ provider: 'a', attempts: 1 }]);
  });

  it('tries only the first attempt when the caller turned fallbacks off', async () => {
    const { ctx } = fakeContext();
    const run = vi.fn(async () => {
      throw new UpstreamError(503, 'down');
    });
    const call = callWith({ prefs: { allow_fallbacks: false } });
    await expect(
      routeWithFallbacks(ctx, call, prepared([attempt('a'), attempt('b')]), run),
    ).rejects.toMatchObject({
      status: 502,
    });
    // The only attempt is also the last: it is retried once (no Retry-After: at once).
    expect(run).toHaveBeenCalledTimes(2);
  });

  it('retries the last attempt once after its Retry-After', async () => {
    vi.useFakeTimers();
    const { ctx } = fakeContext();
    let calls = 0;
    const routed = routeWithFallbacks(ctx, callWith(), prepared([attempt('a')]), async () => {
      calls++;
      if (calls === 1) throw new UpstreamError(429, 'slow down', { retryAfterMs: 1_200 });
      return 'second time';
    });
    await vi.advanceTimersByTimeAsync(1_199);
    expect(calls).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    await expect(routed).resolves.toMatchObject({ result: 'second time', attempts: 2 });
  });

  it('does not retry an attempt that timed out: the caller waits one deadline, not two', async () => {
    vi.useFakeTimers();
    const { ctx } = fakeContext({ upstreamTimeoutMs: 800 });
    const run = vi.fn(
      (_a: Attempt, signal: CallSignal) =>
        new Promise<never>((_resolve, reject) =>
          signal.addEventListener('abort', () => reject(signal.reason)),
        ),
    );
    const routed = routeWithFallbacks(ctx, callWith(), prepared([attempt('a')]), run).catch((e) => e);
    await vi.advanceTimersByTimeAsync(800);
    const err = await routed;
    expect(err).toMatchObject({ status: 502 });
    expect(err.message).toMatch(/timed out after 800 ms/);
    expect(run).toHaveBeenCalledTimes(1);
  });

  it('skips attempts on the operator key when the balance is spent, and answers 402 when none is left', async () => {
    const { ctx } = fakeContext();
    const served = await routeWithFallbacks(
      ctx,
      callWith(),
      prepared([attempt('operator'), attempt('mine', { byok: true })], false),
      async (a) => a.candidate.endpoint.provider,
    );
    expect(served.result).toBe('mine');
    await expect(
      routeWithFallbacks(ctx, callWith(), prepared([attempt('operator')], false), async () => 'never'),
    ).rejects.toMatchObject({ status: 402 });
  });

  it('records a cancellation when the caller leaves during an attempt', async () => {
    const { ctx, cancelled, exhausted } = fakeContext();
    const caller = new CallAbort();
    const err = await routeWithFallbacks(
      ctx,
      callWith({ signal: caller }),
      prepared([attempt('a'), attempt('b')]),
      () => {
        caller.abort(new Error('client left'));
        return Promise.reject(new Error('aborted'));
      },
    ).catch((e) => e);
    expect(err.message).toBe('aborted');
    expect(cancelled).toEqual(['a']);
    expect(exhausted).toEqual([]);
  });
});

describe('routeWithFallbacks over a model list', () => {
  it('moves to the next model once every provider of the first failed, and says which served', async () => {
    const { ctx } = fakeContext();
    const tried: string[] = [];
    const routed = await routeWithFallbacks(
      ctx,
      callWith(),
      prepared([
        attempt('a', { model: 'x/first' }),
        attempt('b', { model: 'x/first' }),
        attempt('c', { model: 'y/second' }),
      ]),
      async (a) => {
        tried.push(`${a.candidate.model.id}@${a.candidate.endpoint.provider}`);
        if (a.candidate.model.id === 'x/first') throw new UpstreamError(500, 'boom');
        return 'ok';
      },
    );
    expect(tried).toEqual(['x/first@a', 'x/first@b', 'y/second@c']);
    expect(routed).toMatchObject({ attempts: 3 });
    expect(modelsTried(routed.tried)).toEqual(['x/first', 'y/second']);
    expect(routed.tried.map((t) => [t.model, t.provider, t.status])).toEqual([
      ['x/first', 'a', 500],
      ['x/first', 'b', 500],
      ['y/second', 'c', 200],
    ]);
    expect(routed.served.candidate.model.id).toBe('y/second');
  });

  it('does not move to the next model after a failure that is the request’s own', async () => {
    const { ctx } = fakeContext();
    const run = vi.fn(async () => {
      throw new UpstreamError(400, 'invalid');
    });
    const list = [attempt('a', { model: 'x/first' }), attempt('c', { model: 'y/second' })];
    await expect(routeWithFallbacks(ctx, callWith(), prepared(list), run)).rejects.toMatchObject({
      status: 400,
    });
    expect(run).toHaveBeenCalledTimes(1);
  });

  it('with allow_fallbacks false tries the first provider of each model', () => {
    const list = [
      attempt('a', { model: 'x/first' }),
      attempt('b', { model: 'x/first' }),
      attempt('c', { model: 'y/second' }),
      attempt('d', { model: 'y/second' }),
    ];
    const providers = (l: Attempt[]) => l.map((a) => a.candidate.endpoint.provider);
    expect(providers(attemptList({ attempts: list }, false))).toEqual(['a', 'c']);
    expect(providers(attemptList({ attempts: list }, undefined))).toEqual(['a', 'b', 'c', 'd']);
  });
});
