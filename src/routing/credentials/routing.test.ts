/**
 * How the credentials take part in routing: the fallback loop asks each attempt's breaker, settles
 * it with the outcome, and refuses with 503 when every credential is out; selection orders each
 * tier by weight and puts a conversation's previous route first, unless the caller ordered providers.
 */
import { describe, expect, it } from 'vitest';
import { CallAbort } from '../../lib/call-abort.js';
import { ApiError } from '../../lib/errors.js';
import { UpstreamError } from '../../providers/types.js';
import type { CallChecks, InferenceCall } from '../call.js';
import type { Catalog, ModelEntry, ProviderEntry } from '../catalog.js';
import {
  type Attempt,
  attemptList,
  decide,
  type FallbackContext,
  type Prepared,
  routeWithFallbacks,
} from '../fallback.js';
import { type Candidate, type Credential, type SelectInput, selectCandidates } from '../select.js';
import type { CredentialGate } from './service.js';

const cred = (name: string, weight = 1): Credential => ({
  apiKey: `key-${name}`,
  isByok: false,
  name,
  weight,
  health: { key: name, version: 'v1' },
});

const attempt = (provider: string, name: string, model = 'test/model'): Attempt =>
  ({
    candidate: {
      model: { id: model },
      endpoint: { provider, upstreamModel: `${provider}-model` },
      credential: cred(name),
    },
    lane: false,
  }) as unknown as Attempt;

/** A gate whose breakers are open for the credentials named in `open`, recording what it is told. */
function fakeGate(open: string[] = [], reopensAt: number | null = null) {
  const log: string[] = [];
  const gate: CredentialGate = {
    admit: (c) => {
      const ok = !open.includes(c.credential.name as string);
      log.push(`admit ${c.credential.name} ${ok}`);
      return ok;
    },
    settle: (c, err) => log.push(`settle ${c.credential.name} ${err ? err.status : 'ok'}`),
    release: (c) => log.push(`release ${c.credential.name}`),
    served: (_call, c) => log.push(`served ${c.credential.name}`),
    reopensAt: () => reopensAt,
  };
  return { gate, log };
}

function context(gate: CredentialGate): FallbackContext {
  const noop = { inc: () => {}, observe: () => {} };
  return {
    metrics: {
      fallbacks: noop,
      upstreamErrors: noop,
      upstreamLatency: noop,
    } as unknown as FallbackContext['metrics'],
    upstreamTimeoutMs: 1_000,
    maxRetryWaitMs: 0,
    latency: new Map(),
    credentials: gate,
    onExhausted: () => {},
    onCancelled: () => {},
  };
}

const prepared = (attempts: Attempt[]): Prepared =>
  ({
    attempts,
    checks: { balance: async () => ({ ok: true }) } as unknown as CallChecks,
  }) as unknown as Prepared;
const call = (prefs = {}) => ({ prefs, signal: new CallAbort() }) as unknown as InferenceCall;

describe('the fallback loop with credential breakers', () => {
  it('skips an open credential, settles each attempt with its outcome, and records the one that served', async () => {
    const { gate, log } = fakeGate(['a']);
    const prep = prepared([attempt('p', 'a'), attempt('p', 'b'), attempt('p', 'c')]);
    const routed = await routeWithFallbacks(context(gate), call(), prep, async (a) => {
      if (a.candidate.credential.name === 'b') throw new UpstreamError(401, 'invalid key');
      return 'ok';
    });
    expect(routed.served.candidate.credential.name).toBe('c');
    expect(log).toEqual([
      'admit a false',
      'admit b true',
      'settle b 401', // a refused credential: the call moves on to the next
      'admit c true',
      'settle c ok',
      'served c',
    ]);
  });

  it('answers 503 with Retry-After when every credential is open and none was tried', async () => {
    const at = Date.now() + 30_000;
    const { gate } = fakeGate(['a', 'b'], at);
    const prep = prepared([attempt('p', 'a'), attempt('q', 'b')]);
    const err = await routeWithFallbacks(context(gate), call(), prep, async () => 'never').catch((e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err.status).toBe(503);
    expect(err.message).toMatch(/Every credential of p, q is cooling down/);
    expect(err.metadata.retry_after_ms).toBeGreaterThan(25_000);
  });

  it('relays the last upstream error when some credential was tried before the others were found open', async () => {
    const { gate } = fakeGate(['b']);
    const prep = prepared([attempt('p', 'a'), attempt('p', 'b')]);
    const err = await routeWithFallbacks(context(gate), call(), prep, async () => {
      throw new UpstreamError(503, 'overloaded');
    }).catch((e) => e);
    expect(err.status).toBe(502);
    expect(err.message).toMatch(/overloaded/);
  });

  it('gives a probe back when the caller leaves during it', async () => {
    const { gate, log } = fakeGate();
    const signal = new CallAbort();
    const prep = prepared([attempt('p', 'a')]);
    const pending = routeWithFallbacks(
      context(gate),
      { prefs: {}, signal } as unknown as InferenceCall,
      prep,
      () => {
        signal.abort(new Error('gone'));
        return Promise.reject(new Error('aborted'));
      },
    );
    await expect(pending).rejects.toThrow();
    expect(log).toEqual(['admit a true', 'release a']);
  });

  it('moves on after 401/403 (but stops on the last attempt), and keeps a provider’s credentials with allow_fallbacks: false', () => {
    const at = (isLast: boolean) => ({ isLast, retried: false, timedOut: false, maxRetryWaitMs: 0 });
    expect(decide(new UpstreamError(401, 'x'), at(false))).toEqual({ kind: 'next' });
    expect(decide(new UpstreamError(403, 'x'), at(false))).toEqual({ kind: 'next' });
    expect(decide(new UpstreamError(401, 'x'), at(true))).toEqual({ kind: 'stop' });
    const list = [attempt('p', 'a'), attempt('p', 'b'), attempt('q', 'c'), attempt('r', 'd', 'other/model')];
    expect(attemptList({ attempts: list }, false).map((a) => a.candidate.credential.name)).toEqual([
      'a',
      'b',
      'd',
    ]);
  });
});

describe('selection: weighted tiers and sticky routes', () => {
  const provider = (slug: string, credentials: Credential[]): ProviderEntry => ({
    config: { slug, kind: 'openai-compatible', baseUrl: `http://${slug}`, apiKey: `key-${slug}` },
    credentials,
    zdr: false,
    trainsOnData: false,
    vendor: 'other',
    region: 'global',
    development: false,
    byok: true,
  });
  const endpoint = (p: string) => ({
    provider: p,
    upstreamModel: 'm',
    pricing: { prompt: 1, completion: 1 },
    contextLength: 1,
    maxCompletionTokens: null,
    capabilities: [],
  });
  const model: ModelEntry = {
    id: 'a/m',
    name: 'm',
    aliases: [],
    kind: 'chat',
    description: '',
    endpoints: [endpoint('one'), endpoint('two')],
  };
  const catalog: Catalog = {
    providers: new Map([
      ['one', provider('one', [cred('o1'), cred('o2')])],
      ['two', provider('two', [cred('t1')])],
    ]),
    models: new Map([[model.id, model]]),
    lookup: new Map([[model.id, model.id]]),
  };
  const byokCred: Credential = { apiKey: 'byok', isByok: true, byokId: 'b1', name: 'b1' };
  const base = (over: Partial<SelectInput> = {}): SelectInput => ({
    catalog,
    model,
    request: null,
    prefs: {},
    providerAllowed: () => ({ ok: true }),
    byok: (slug) => ({ primary: slug === 'one' ? [byokCred] : [], fallback: [], byokOnly: false }),
    latency: () => 0,
    keyOptional: () => false,
    // Reverses each tier: shows that every tier goes through it, BYOK before the operator's keys.
    arrange: (tier, prefer) => {
      const r = [...tier].reverse();
      const i = r.findIndex((c) => c.name === prefer);
      return i > 0 ? [r[i] as Credential, ...r.filter((_, j) => j !== i)] : r;
    },
    ...over,
  });
  const names = (cs: Candidate[]) => cs.map((c) => `${c.endpoint.provider}:${c.credential.name}`);

  it('orders each tier (BYOK primaries still before the operator keys)', () => {
    expect(names(selectCandidates(base()).candidates)).toEqual(['one:b1', 'one:o2', 'one:o1', 'two:t1']);
  });

  it('puts the sticky provider and credential first', () => {
    const sticky = () => ({ provider: 'one', credential: 'o1' });
    expect(names(selectCandidates(base({ sticky })).candidates)).toEqual([
      'one:b1',
      'one:o1',
      'one:o2',
      'two:t1',
    ]);
    const moved = selectCandidates(base({ sticky: () => ({ provider: 'two', credential: 't1' }) }));
    expect(names(moved.candidates)).toEqual(['two:t1', 'one:b1', 'one:o2', 'one:o1']);
  });

  it('yields to provider.order, sort and provider.only', () => {
    const sticky = () => ({ provider: 'two', credential: 't1' });
    expect(names(selectCandidates(base({ sticky, prefs: { order: ['one'] } })).candidates)[0]).toBe('one:b1');
    expect(names(selectCandidates(base({ sticky, prefs: { sort: 'price' } })).candidates)[0]).toBe('one:b1');
    expect(names(selectCandidates(base({ sticky, prefs: { only: ['one'] } })).candidates)).toEqual([
      'one:b1',
      'one:o2',
      'one:o1',
    ]);
  });
});

describe('the sticky route is looked up only when a call has a choice', () => {
  it('is not asked for one provider with one credential, and is for two', () => {
    let asked = 0;
    const sticky = () => {
      asked++;
      return undefined;
    };
    const providers = new Map([
      ['one', { slug: 'one', byok: true, config: { apiKey: 'k1' } }],
      ['two', { slug: 'two', byok: false, config: { apiKey: 'k2' } }],
    ]) as unknown as Catalog['providers'];
    const input = (ids: string[]) => ({
      catalog: { providers } as unknown as Catalog,
      model: {
        id: 'm',
        endpoints: ids.map((p) => ({
          provider: p,
          upstreamModel: 'm',
          capabilities: [],
          pricing: { prompt: 0, completion: 0 },
        })),
      } as unknown as ModelEntry,
      request: null,
      prefs: {},
      providerAllowed: () => ({ ok: true as const }),
      byok: () => ({ primary: [], fallback: [], byokOnly: false }),
      latency: () => 0,
      keyOptional: () => false,
      sticky,
    });
    // A BYOK-enabled provider whose caller has no BYOK key: one route, nothing hashed.
    expect(selectCandidates(input(['one'])).candidates).toHaveLength(1);
    expect(asked).toBe(0);
    expect(selectCandidates(input(['one', 'two'])).candidates).toHaveLength(2);
    expect(asked).toBe(1);
  });
});
