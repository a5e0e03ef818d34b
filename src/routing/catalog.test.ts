import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CatalogError, findModel, loadCatalog, reloadCatalog } from './catalog.js';
import { admitUnpriced } from './passthrough.js';

const file = (name: string, text: string) => {
  const path = join(mkdtempSync(join(tmpdir(), 'catalog-')), name);
  writeFileSync(path, text);
  return path;
};

describe('loadCatalog', () => {
  it('reads model fallbacks: on a declared model, or on a catalog model by an entry without endpoints', () => {
    const path = file(
      'gatehouse.yaml',
      `models:
  - id: meta/small
    fallbacks: [echo, gatehouse/scripted]
    context_fallback: meta/big
    endpoints:
      - { provider: gatehouse, upstream_model: echo, context_length: 8000 }
  - id: meta/big
    endpoints:
      - { provider: gatehouse, upstream_model: echo }
  - id: gatehouse/echo
    fallbacks: [meta/big]
`,
    );
    const c = loadCatalog({ GATEHOUSE_CONFIG: path });
    expect(findModel(c, 'meta/small')).toMatchObject({
      fallbacks: ['gatehouse/echo', 'gatehouse/scripted'],
      contextFallback: 'meta/big',
    });
    // The entry without endpoints annotates the development model, which keeps its endpoints.
    expect(findModel(c, 'echo')).toMatchObject({
      fallbacks: ['meta/big'],
      endpoints: [{ provider: 'gatehouse' }],
    });
  });

  it('refuses a fallback the catalog does not have, and an entry with neither endpoints nor fallbacks', () => {
    const bad = (yaml: string) => () => loadCatalog({ GATEHOUSE_CONFIG: file('g.yaml', yaml) });
    expect(bad('models:\n  - id: gatehouse/echo\n    fallbacks: [nobody/none]\n')).toThrowError(
      /gatehouse\/echo: fallback nobody\/none is not in the catalog/,
    );
    expect(bad('models:\n  - id: gatehouse/echo\n    context_fallback: nobody/none\n')).toThrowError(
      CatalogError,
    );
    expect(bad('models:\n  - id: nobody/none\n    fallbacks: [echo]\n')).toThrowError(
      /nobody\/none: not in the catalog/,
    );
    expect(bad('models:\n  - id: meta/x\n')).toThrowError(/meta\/x: needs at least one endpoint/);
  });

  it('has only the development provider by default', () => {
    const c = loadCatalog({});
    expect([...c.providers.keys()]).toEqual(['gatehouse']);
    expect(findModel(c, 'echo')?.id).toBe('gatehouse/echo');
    expect(findModel(c, 'gatehouse/echo:free')?.id).toBe('gatehouse/echo');
  });

  it('adds providers configured by environment with their default models, and turns the dev provider off', () => {
    const c = loadCatalog({
      OPENAI_API_KEY: 'sk-x',
      ANTHROPIC_API_KEY: 'sk-y',
      GEMINI_BASE_URL: 'http://127.0.0.1:9/v1beta/',
      GATEHOUSE_DEV_PROVIDER: 'false',
    });
    expect([...c.providers.keys()].sort()).toEqual(['anthropic', 'google-ai-studio', 'openai']);
    expect(c.providers.get('google-ai-studio')?.config).toMatchObject({
      baseUrl: 'http://127.0.0.1:9/v1beta',
      apiKey: null,
    });
    expect(findModel(c, 'gpt-4o-mini')?.endpoints[0]).toMatchObject({
      provider: 'openai',
      upstreamModel: 'gpt-4o-mini',
    });
    expect(findModel(c, 'gatehouse/echo')).toBeUndefined();
  });

  it('reads providers, models, prices and data policy from a YAML file', () => {
    const path = file(
      'gatehouse.yaml',
      `providers:
  - slug: local
    kind: openai-compatible
    base_url: http://127.0.0.1:8000/v1/
    api_key_env: LOCAL_KEY
    zdr: true
    trains_on_data: false
models:
  - id: meta/llama
    aliases: [llama]
    endpoints:
      - provider: local
        upstream_model: llama-3
        pricing: { prompt: 0.05, completion: 0.08 }
        capabilities: [tools]
`,
    );
    const c = loadCatalog({ GATEHOUSE_CONFIG: path, LOCAL_KEY: 'k-local' });
    expect(c.providers.get('local')).toMatchObject({
      zdr: true,
      config: { apiKey: 'k-local', baseUrl: 'http://127.0.0.1:8000/v1' },
    });
    expect(findModel(c, 'llama')?.endpoints[0]).toMatchObject({
      upstreamModel: 'llama-3',
      pricing: { prompt: 0.05, completion: 0.08 },
      capabilities: ['tools'],
    });
  });

  it("lets the operator's aliases win over the model data's", () => {
    // The data lists gpt-4o-mini (alias `gpt-4o-mini`); the operator names its own model by it.
    const path = file(
      'alias.json',
      JSON.stringify({
        models: [
          {
            id: 'acme/mini',
            aliases: ['gpt-4o-mini'],
            endpoints: [
              { provider: 'openai', upstream_model: 'gpt-4o-mini', pricing: { prompt: 9, completion: 9 } },
            ],
          },
        ],
      }),
    );
    const c = loadCatalog({ OPENAI_API_KEY: 'sk-x', GATEHOUSE_CONFIG: path });
    expect(findModel(c, 'gpt-4o-mini')?.id).toBe('acme/mini');
    expect(findModel(c, 'openai/gpt-4o-mini')?.id).toBe('openai/gpt-4o-mini');
  });

  it('allows BYOK by default only on the public vendors the operator holds a key for', () => {
    const c = loadCatalog({
      OPENAI_API_KEY: 'sk-op',
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:9/anthropic',
      GATEHOUSE_CONFIG: file(
        'p.json',
        JSON.stringify({
          providers: [
            { slug: 'vllm', kind: 'openai-compatible', base_url: 'http://127.0.0.1:8000/v1' },
            { slug: 'groq', kind: 'openai-compatible', base_url: 'http://g/v1', api_key: 'gsk' },
            { slug: 'gemini', kind: 'google', base_url: 'http://x/v1beta' },
            { slug: 'together', kind: 'openai-compatible', base_url: 'http://t/v1', byok: true },
            { slug: 'own-openai', kind: 'openai', base_url: 'http://o/v1', api_key: 'k', byok: false },
          ],
        }),
      ),
    });
    const byok = Object.fromEntries([...c.providers].map(([slug, p]) => [slug, p.byok]));
    expect(byok).toEqual({
      gatehouse: false,
      openai: true,
      anthropic: false, // no key: whoever answers at that URL would take any key
      vllm: false,
      groq: false,
      gemini: false,
      together: true,
      'own-openai': false,
    });
    const bad = file(
      'b.json',
      JSON.stringify({ providers: [{ slug: 'x', kind: 'openai', base_url: 'http://x', byok: 'yes' }] }),
    );
    expect(() => loadCatalog({ GATEHOUSE_CONFIG: bad })).toThrow(/byok must be true or false/);
  });

  it('reads native_batches and batch_discount per provider, and refuses malformed ones naming the field', () => {
    const ok = file(
      'n.json',
      JSON.stringify({
        providers: [
          { slug: 'o', kind: 'openai', base_url: 'http://o', native_batches: false },
          { slug: 'a', kind: 'anthropic', base_url: 'http://a', batch_discount: 0.25 },
        ],
      }),
    );
    const c = loadCatalog({ GATEHOUSE_CONFIG: ok });
    expect(c.providers.get('o')).toMatchObject({ nativeBatches: false });
    expect(c.providers.get('a')).toMatchObject({ batchDiscount: 0.25 });
    expect(c.providers.get('a')?.nativeBatches).toBeUndefined(); // the kind's default (on)
    const bad = (entry: object) =>
      file(
        'nb.json',
        JSON.stringify({ providers: [{ slug: 'x', kind: 'openai', base_url: 'http://x', ...entry }] }),
      );
    expect(() => loadCatalog({ GATEHOUSE_CONFIG: bad({ native_batches: 'yes' }) })).toThrow(
      /provider x: native_batches must be true or false/,
    );
    for (const batch_discount of [1.5, -0.1, '0.5'])
      expect(() => loadCatalog({ GATEHOUSE_CONFIG: bad({ batch_discount }) })).toThrow(
        /provider x: batch_discount must be a number from 0 to 1/,
      );
  });

  it('refuses a model naming an unknown provider', () => {
    const path = file(
      'bad.json',
      JSON.stringify({ models: [{ id: 'a/b', endpoints: [{ provider: 'nowhere' }] }] }),
    );
    expect(() => loadCatalog({ GATEHOUSE_CONFIG: path })).toThrow(CatalogError);
  });

  it('lists the current models of each configured vendor from the model data, with prices and context', () => {
    const c = loadCatalog({ OPENAI_API_KEY: 'k', ANTHROPIC_API_KEY: 'k', GEMINI_API_KEY: 'k' });
    // Ids users relied on before the model data keep resolving.
    for (const id of [
      'openai/gpt-4o-mini',
      'openai/gpt-4o',
      'anthropic/claude-sonnet-4',
      'google/gemini-2.5-flash',
    ])
      expect(c.models.has(id)).toBe(true);
    expect(findModel(c, 'anthropic/claude-sonnet-4')?.endpoints[0]).toMatchObject({
      provider: 'anthropic',
      upstreamModel: 'claude-sonnet-4-0',
      pricing: { prompt: 3, completion: 15, cached_prompt: 0.3, cache_write: 3.75 },
      contextLength: 200_000,
    });
    // OpenRouter-style slugs, with the vendor's own id as an alias.
    expect(findModel(c, 'claude-haiku-4-5')?.id).toBe('anthropic/claude-haiku-4.5');
    expect(findModel(c, 'anthropic/claude-haiku-4-5')?.id).toBe('anthropic/claude-haiku-4.5');
    expect(findModel(c, 'openai/text-embedding-3-small')?.kind).toBe('embeddings');
    // Models of other vendors a data provider also prices (Claude on Vertex) are not Google's.
    expect([...c.models.keys()].filter((id) => id.startsWith('google/claude'))).toEqual([]);
    // Nothing that a chat route cannot serve (speech, images, realtime).
    expect([...c.models.keys()].filter((id) => /tts|realtime|image|whisper/.test(id))).toEqual([]);
  });

  it('lets GATEHOUSE_CONFIG models replace the data model of the same id', () => {
    const path = file(
      'override.json',
      JSON.stringify({
        models: [
          {
            id: 'openai/gpt-4o',
            endpoints: [
              {
                provider: 'openai',
                upstream_model: 'gpt-4o-2024-11-20',
                pricing: { prompt: 9, completion: 9 },
              },
            ],
          },
        ],
      }),
    );
    const c = loadCatalog({ OPENAI_API_KEY: 'k', GATEHOUSE_CONFIG: path });
    expect(findModel(c, 'openai/gpt-4o')?.endpoints).toEqual([
      expect.objectContaining({ upstreamModel: 'gpt-4o-2024-11-20', pricing: { prompt: 9, completion: 9 } }),
    ]);
  });

  it('lists the models of an OpenAI-compatible vendor the data knows by its base URL, under its slug', () => {
    const path = file(
      'groq.yaml',
      `providers:
  - slug: fast
    kind: openai-compatible
    base_url: https://api.groq.com/openai/v1
  - slug: local
    kind: openai-compatible
    base_url: http://127.0.0.1:11434/v1
`,
    );
    const c = loadCatalog({ GATEHOUSE_CONFIG: path });
    const fast = [...c.models.values()].filter((m) => m.endpoints.some((e) => e.provider === 'fast'));
    expect(fast.length).toBeGreaterThan(3);
    expect(fast.every((m) => m.id.startsWith('fast/') && (m.endpoints[0]?.pricing.prompt ?? 0) > 0)).toBe(
      true,
    );
    expect([...c.models.values()].some((m) => m.endpoints.some((e) => e.provider === 'local'))).toBe(false);
  });
});

describe('unlisted ids', () => {
  const c = loadCatalog({ OPENAI_API_KEY: 'k', ANTHROPIC_API_KEY: 'k', GEMINI_API_KEY: 'k' });

  it('pass through to the vendor provider, priced from the data when it matches the id', () => {
    const dated = findModel(c, 'claude-sonnet-4-5-20250929');
    expect(dated).toMatchObject({
      id: 'anthropic/claude-sonnet-4-5-20250929',
      unlisted: true,
      priced: true,
      endpoints: [
        {
          provider: 'anthropic',
          upstreamModel: 'claude-sonnet-4-5-20250929',
          pricing: { prompt: 3, completion: 15, cached_prompt: 0.3, cache_write: 3.75 },
        },
      ],
    });
    expect(findModel(c, 'anthropic/claude-sonnet-4-5-20250929')?.priced).toBe(true);
    expect(findModel(c, 'gpt-4o-mini-2024-07-18')?.endpoints[0]?.pricing.prompt).toBe(0.15);
  });

  it('route the bare ids coding agents send and vendor or provider prefixes; others stay unknown', () => {
    const cases: [string, string, string][] = [
      ['gpt-7-turbo', 'openai/gpt-7-turbo', 'openai'],
      ['o9-mini', 'openai/o9-mini', 'openai'],
      ['codex-max', 'openai/codex-max', 'openai'],
      ['claude-next', 'anthropic/claude-next', 'anthropic'],
      ['gemini-9-ultra', 'google/gemini-9-ultra', 'google-ai-studio'],
      ['google/gemini-9-ultra', 'google/gemini-9-ultra', 'google-ai-studio'],
      ['google-ai-studio/gemini-9-ultra', 'google-ai-studio/gemini-9-ultra', 'google-ai-studio'],
      ['openai/anything-new', 'openai/anything-new', 'openai'],
    ];
    for (const [requested, id, provider] of cases) {
      const m = findModel(c, requested);
      expect(m, requested).toMatchObject({ id, unlisted: true, priced: false });
      expect(m?.endpoints.map((e) => e.provider)).toEqual([provider]);
      expect(m?.endpoints[0]?.upstreamModel).toBe(requested.replace(/^[^/]+\//, ''));
    }
    for (const unknown of [
      'mistral/large',
      'llama-3',
      'gatehouse/new',
      'openai/',
      'openai/a b',
      'o-mini',
      'google/../../v1/files',
      'openai/x//y',
    ])
      expect(findModel(c, unknown), unknown).toBeUndefined();
    // No provider of the vendor configured: not routed.
    expect(findModel(loadCatalog({}), 'claude-next')).toBeUndefined();
  });

  it('are refused when unpriced and GATEHOUSE_UNPRICED_MODELS=deny, with the variable named', () => {
    const denying = loadCatalog({ OPENAI_API_KEY: 'k', GATEHOUSE_UNPRICED_MODELS: 'deny' });
    const counted: string[] = [];
    const counter = { inc: (l: { decision: string }) => counted.push(l.decision) };
    expect(() => admitUnpriced(denying, findModel(denying, 'gpt-7') as never, counter)).toThrow(
      /GATEHOUSE_UNPRICED_MODELS=deny/,
    );
    expect(() =>
      admitUnpriced(denying, findModel(denying, 'gpt-4o-mini-2024-07-18') as never, counter),
    ).not.toThrow();
    expect(() => admitUnpriced(c, findModel(c, 'gpt-7') as never, counter)).not.toThrow();
    expect(counted).toEqual(['denied', 'allowed']);
    expect(() => loadCatalog({ GATEHOUSE_UNPRICED_MODELS: 'maybe' })).toThrow(CatalogError);
  });
});

describe('reloadCatalog', () => {
  it('swaps the data inside the same object, keeping discovered models', () => {
    const path = file('reload.json', JSON.stringify({ models: [] }));
    const c = loadCatalog({ GATEHOUSE_CONFIG: path });
    const { models, lookup } = c;
    expect(findModel(c, 'team/model')).toBeUndefined();
    writeFileSync(
      path,
      JSON.stringify({
        providers: [{ slug: 'team', kind: 'openai-compatible', base_url: 'http://127.0.0.1:9/v1' }],
        models: [
          { id: 'team/model', endpoints: [{ provider: 'team', pricing: { prompt: 1, completion: 1 } }] },
        ],
      }),
    );
    c.discovered?.set('team', ['served-model']);
    const count = reloadCatalog(c, { GATEHOUSE_CONFIG: path });
    expect(count).toBe(c.models.size);
    expect(c.models).toBe(models);
    expect(c.lookup).toBe(lookup);
    expect(findModel(c, 'team/model')?.endpoints[0]?.upstreamModel).toBe('model');
    expect(findModel(c, 'team/served-model')).toMatchObject({ priced: false });
    expect(findModel(c, 'team/served-model')?.unlisted).toBeUndefined();
    // A configuration that no longer loads leaves the catalog as it was.
    writeFileSync(path, '{ not json');
    expect(() => reloadCatalog(c, { GATEHOUSE_CONFIG: path })).toThrow();
    expect(findModel(c, 'team/model')).toBeDefined();
  });
});
