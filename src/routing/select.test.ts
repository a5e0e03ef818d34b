import { describe, expect, it } from 'vitest';
import type { ChatRequest } from '../formats/chat.js';
import type { Catalog, ModelEntry, ProviderEntry } from './catalog.js';
import { requiredCapabilities, type SelectInput, selectCandidates } from './select.js';

const provider = (slug: string, attrs: Partial<ProviderEntry> = {}): ProviderEntry => ({
  config: { slug, kind: 'openai-compatible', baseUrl: `http://${slug}`, apiKey: `key-${slug}` },
  zdr: false,
  trainsOnData: false,
  vendor: 'other',
  region: 'global',
  development: false,
  byok: true,
  ...attrs,
});

const model: ModelEntry = {
  id: 'a/m',
  name: 'm',
  aliases: [],
  kind: 'chat',
  description: '',
  endpoints: [
    {
      provider: 'pricey',
      upstreamModel: 'm',
      pricing: { prompt: 5, completion: 10 },
      contextLength: 1,
      maxCompletionTokens: null,
      capabilities: ['tools', 'json'],
    },
    {
      provider: 'cheap',
      upstreamModel: 'm',
      pricing: { prompt: 0.1, completion: 0.2 },
      contextLength: 1,
      maxCompletionTokens: null,
      capabilities: [],
    },
    {
      provider: 'private',
      upstreamModel: 'm',
      pricing: { prompt: 1, completion: 2 },
      contextLength: 1,
      maxCompletionTokens: null,
      capabilities: ['tools'],
    },
  ],
};

const catalog: Catalog = {
  providers: new Map([
    ['pricey', provider('pricey', { trainsOnData: true })],
    ['cheap', provider('cheap')],
    ['private', provider('private', { zdr: true })],
  ]),
  models: new Map([[model.id, model]]),
  lookup: new Map([[model.id, model.id]]),
};

const noByok = () => ({ primary: [], fallback: [], byokOnly: false });
const base = (over: Partial<SelectInput> = {}): SelectInput => ({
  catalog,
  model,
  request: { model: 'a/m', messages: [{ role: 'user', content: 'x' }] },
  prefs: {},
  providerAllowed: () => ({ ok: true }),
  byok: noByok,
  latency: () => 0,
  keyOptional: () => false,
  ...over,
});
const order = (input: SelectInput) => selectCandidates(input).candidates.map((c) => c.endpoint.provider);

describe('selectCandidates', () => {
  it('keeps catalog order by default and sorts by price or observed latency on request', () => {
    expect(order(base())).toEqual(['pricey', 'cheap', 'private']);
    expect(order(base({ prefs: { sort: 'price' } }))).toEqual(['cheap', 'private', 'pricey']);
    const latency = (slug: string) => ({ pricey: 30, cheap: 20, private: 10 })[slug] ?? 0;
    expect(order(base({ prefs: { sort: 'latency' }, latency }))).toEqual(['private', 'cheap', 'pricey']);
  });

  it('sorts by observed output speed for sort=throughput, fastest first, unmeasured before measured', () => {
    const speeds: Record<string, number> = { pricey: 120, cheap: 40, private: 80 };
    const throughput = (slug: string) => speeds[slug];
    expect(order(base({ prefs: { sort: 'throughput' }, throughput }))).toEqual([
      'pricey',
      'private',
      'cheap',
    ]);
    // Latency does not decide it: the slowest to answer may still stream the most tokens per second.
    const latency = (slug: string) => ({ pricey: 90, cheap: 10, private: 50 })[slug] ?? 0;
    expect(order(base({ prefs: { sort: 'throughput' }, throughput, latency }))).toEqual([
      'pricey',
      'private',
      'cheap',
    ]);
    delete speeds.cheap;
    expect(order(base({ prefs: { sort: 'throughput' }, throughput }))).toEqual([
      'cheap',
      'pricey',
      'private',
    ]);
  });

  it('applies only, ignore and order', () => {
    expect(order(base({ prefs: { only: ['cheap', 'private'], order: ['private'] } }))).toEqual([
      'private',
      'cheap',
    ]);
    expect(order(base({ prefs: { ignore: ['pricey'] } }))).toEqual(['cheap', 'private']);
  });

  it('filters by zdr, data collection and max price, saying why', () => {
    expect(order(base({ prefs: { zdr: true } }))).toEqual(['private']);
    expect(order(base({ prefs: { data_collection: 'deny' } }))).toEqual(['cheap', 'private']);
    const r = selectCandidates(base({ prefs: { max_price: { prompt: 1 } } }));
    expect(r.candidates.map((c) => c.endpoint.provider)).toEqual(['cheap', 'private']);
    expect(r.excluded).toEqual([{ provider: 'pricey', reason: 'above provider.max_price' }]);
  });

  it('requires the parameters a request uses only with require_parameters', () => {
    const req: ChatRequest = {
      model: 'a/m',
      messages: [{ role: 'user', content: 'x' }],
      tools: [{ type: 'function', function: { name: 'f' } }],
      response_format: { type: 'json_object' },
    };
    expect(requiredCapabilities(req)).toEqual(['tools', 'json']);
    expect(order(base({ request: req }))).toHaveLength(3);
    expect(order(base({ request: req, prefs: { require_parameters: true } }))).toEqual(['pricey']);
  });

  it('leaves out providers the policy refuses, with its reason', () => {
    const r = selectCandidates(
      base({
        providerAllowed: (p) =>
          p.config.slug === 'cheap' ? { ok: false, reason: 'Provider cheap is ignored' } : { ok: true },
      }),
    );
    expect(r.candidates.map((c) => c.endpoint.provider)).toEqual(['pricey', 'private']);
    expect(r.excluded).toContainEqual({ provider: 'cheap', reason: 'Provider cheap is ignored' });
  });

  it('tries BYOK credentials before the operator key and fallback ones after; byok-only drops the operator key', () => {
    const byok = (slug: string) =>
      slug === 'cheap'
        ? {
            primary: [{ apiKey: 'byok-1', isByok: true, byokId: 'b1' }],
            fallback: [{ apiKey: 'byok-2', isByok: true, byokId: 'b2' }],
            byokOnly: false,
          }
        : slug === 'private'
          ? { primary: [{ apiKey: 'byok-3', isByok: true, byokId: 'b3' }], fallback: [], byokOnly: true }
          : noByok();
    const keys = selectCandidates(base({ byok, prefs: { only: ['cheap', 'private'] } })).candidates.map(
      (c) => c.credential.apiKey,
    );
    expect(keys).toEqual(['byok-1', 'key-cheap', 'byok-2', 'byok-3']);
  });

  it('calls a provider without any key only when its adapter says keys are optional', () => {
    const keyless = { ...catalog, providers: new Map(catalog.providers) };
    const cheap = keyless.providers.get('cheap') as ProviderEntry;
    keyless.providers.set('cheap', { ...cheap, config: { ...cheap.config, apiKey: null } });
    const refused = selectCandidates(base({ catalog: keyless, prefs: { only: ['cheap'] } }));
    expect(refused.candidates).toEqual([]);
    expect(refused.excluded).toContainEqual({
      provider: 'cheap',
      reason: 'no credential (operator key or BYOK) for this provider',
    });
    const local = selectCandidates(
      base({ catalog: keyless, prefs: { only: ['cheap'] }, keyOptional: (slug) => slug === 'cheap' }),
    );
    expect(local.candidates.map((c) => c.credential)).toEqual([{ apiKey: null, isByok: false }]);
  });
});
