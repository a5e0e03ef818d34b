import { describe, expect, it } from 'vitest';
import { ApiError } from '../lib/errors.js';
import type { Verdict } from './call.js';
import type { ModelEntry } from './catalog.js';
import { modelChain } from './model-chain.js';

const model = (id: string, context = 1_000, extra: Partial<ModelEntry> = {}): ModelEntry =>
  ({
    id,
    aliases: [],
    kind: 'chat',
    endpoints: [{ provider: 'p', contextLength: context }],
    ...extra,
  }) as unknown as ModelEntry;

const catalog = (...models: ModelEntry[]) => {
  const byId = new Map(models.map((m) => [m.id, m]));
  return (id: string) => byId.get(id);
};

const allowAll = (): Verdict => ({ ok: true });
const deny =
  (...ids: string[]) =>
  (m: ModelEntry): Verdict =>
    ids.includes(m.id) ? { ok: false, status: 403, message: `Model ${m.id} is not allowed` } : { ok: true };
const ids = (c: { models: ModelEntry[] }) => c.models.map((m) => m.id);

describe('modelChain: the models a call tries', () => {
  it('is the primary, then the request’s models in order, each once', () => {
    const a = model('a/one');
    const b = model('b/two');
    const chain = modelChain({
      primary: a,
      listed: [a, b, a],
      lookup: catalog(a, b),
      allowed: allowAll,
      promptTokens: 10,
    });
    expect(ids(chain)).toEqual(['a/one', 'b/two']);
    expect(chain.skipped).toEqual([]);
  });

  it('uses the configured fallbacks when the request gives no models, and the request’s over them', () => {
    const c = model('c/three');
    const b = model('b/two');
    const a = model('a/one', 1_000, { fallbacks: ['c/three'] });
    const base = { primary: a, lookup: catalog(a, b, c), allowed: allowAll, promptTokens: 10 };
    expect(ids(modelChain({ ...base, listed: null }))).toEqual(['a/one', 'c/three']);
    expect(ids(modelChain({ ...base, listed: [b] }))).toEqual(['a/one', 'b/two']);
  });

  it('skips a model the guardrail disallows, and refuses with 403 when none is allowed', () => {
    const a = model('a/one');
    const b = model('b/two');
    const chain = modelChain({
      primary: a,
      listed: [b],
      lookup: catalog(a, b),
      allowed: deny('a/one'),
      promptTokens: 10,
    });
    expect(ids(chain)).toEqual(['b/two']);
    expect(chain.skipped).toEqual([{ model: 'a/one', reason: 'Model a/one is not allowed' }]);
    const none = () =>
      modelChain({
        primary: a,
        listed: [b],
        lookup: catalog(a, b),
        allowed: deny('a/one', 'b/two'),
        promptTokens: 10,
      });
    expect(none).toThrowError(ApiError);
    expect(none).toThrowError(/Model a\/one is not allowed/);
  });

  it('sends a prompt too long for a model to its context_fallback, before the rest of the list', () => {
    const big = model('big/one', 200_000);
    const other = model('o/two', 500_000);
    const small = model('s/one', 8_000, { contextFallback: 'big/one' });
    const chain = modelChain({
      primary: small,
      listed: [other],
      lookup: catalog(small, big, other),
      allowed: allowAll,
      promptTokens: 50_000,
    });
    expect(ids(chain)).toEqual(['big/one', 'o/two']);
    expect(chain.skipped[0]).toMatchObject({ model: 's/one', reason: expect.stringMatching(/8000/) });
  });

  it('without a context_fallback, goes to the next model of the list whose context fits', () => {
    const small = model('s/one', 8_000);
    const mid = model('m/two', 16_000);
    const big = model('b/three', 200_000);
    const chain = modelChain({
      primary: small,
      listed: [mid, big],
      lookup: catalog(small, mid, big),
      allowed: allowAll,
      promptTokens: 50_000,
    });
    expect(ids(chain)).toEqual(['b/three']);
  });

  it('refuses with 400 context_length_exceeded naming the context length when no model fits', () => {
    const small = model('s/one', 8_000);
    let err: ApiError | null = null;
    try {
      modelChain({
        primary: small,
        listed: null,
        lookup: catalog(small),
        allowed: allowAll,
        promptTokens: 9_000,
      });
    } catch (e) {
      err = e as ApiError;
    }
    expect(err?.status).toBe(400);
    expect(err?.message).toMatch(/context_length_exceeded.*8000 tokens/);
    expect(err?.metadata).toEqual({
      code: 'context_length_exceeded',
      context_length: 8_000,
      prompt_tokens: 9_000,
    });
  });

  it('leaves a model whose context length is only assumed (not in the model data) to its upstream', () => {
    const unknown = {
      ...model('u/one'),
      endpoints: [{ provider: 'p', contextLength: 128_000, contextAssumed: true }],
    } as unknown as ModelEntry;
    const chain = modelChain({
      primary: unknown,
      listed: null,
      lookup: catalog(unknown),
      allowed: allowAll,
      promptTokens: 300_000,
    });
    expect(ids(chain)).toEqual(['u/one']);
  });

  it('does not try a disallowed context_fallback', () => {
    const big = model('big/one', 200_000);
    const small = model('s/one', 8_000, { contextFallback: 'big/one' });
    expect(() =>
      modelChain({
        primary: small,
        listed: null,
        lookup: catalog(small, big),
        allowed: deny('big/one'),
        promptTokens: 9_000,
      }),
    ).toThrowError(/context_length_exceeded/);
  });
});
