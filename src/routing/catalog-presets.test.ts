import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { discoverable } from '../catalog/refresh.js';
import { createProvider } from '../providers/registry.js';
import { CatalogError, findModel, loadCatalog } from './catalog.js';

const config = (providers: object[]) => {
  const path = join(mkdtempSync(join(tmpdir(), 'presets-')), 'gatehouse.json');
  writeFileSync(path, JSON.stringify({ providers }));
  return { GATEHOUSE_CONFIG: path, GATEHOUSE_DEV_PROVIDER: 'false' };
};

describe('vendor presets', () => {
  it('fill in base URL, key, model data, discovery and refused fields from kind and a key', () => {
    const c = loadCatalog(config([{ slug: 'groq', kind: 'groq', api_key: 'gsk-1' }]));
    const groq = c.providers.get('groq');
    expect(groq?.config).toMatchObject({
      kind: 'openai-compatible',
      preset: 'groq',
      baseUrl: 'https://api.groq.com/openai/v1',
      apiKey: 'gsk-1',
      keyRequired: true,
    });
    expect(groq?.config.rejects?.map((q) => q.field)).toEqual([
      'logprobs',
      'top_logprobs',
      'logit_bias',
      'messages[].name',
      'n',
    ]);
    expect(groq).toMatchObject({ modelData: 'groq', discoverModels: true, byok: true, vendor: 'other' });
    expect(discoverable(c).map((p) => p.config.slug)).toEqual(['groq']);
    // The vendor's models and prices come from the model data under the provider's slug.
    expect([...c.models.keys()].some((id) => id.startsWith('groq/'))).toBe(true);
    // A hosted vendor needs a key: the router skips it rather than calling it without one.
    expect(createProvider(groq?.config as never).traits.keyOptional).toBe(false);
  });

  it('read the key from the vendor variable, or configure the provider from the environment alone', () => {
    const fromFile = loadCatalog({
      ...config([{ slug: 'fast', kind: 'cerebras' }]),
      CEREBRAS_API_KEY: 'csk-1',
    });
    expect(fromFile.providers.get('fast')?.config).toMatchObject({
      baseUrl: 'https://api.cerebras.ai/v1',
      apiKey: 'csk-1',
    });
    const fromEnv = loadCatalog({
      GATEHOUSE_DEV_PROVIDER: 'false',
      XAI_API_KEY: 'xai-1',
      OLLAMA_BASE_URL: 'http://10.0.0.5:11434/v1/',
    });
    expect([...fromEnv.providers.keys()].sort()).toEqual(['ollama', 'xai']);
    expect(fromEnv.providers.get('xai')).toMatchObject({
      config: { baseUrl: 'https://api.x.ai/v1', apiKey: 'xai-1', preset: 'xai' },
      vendor: 'xai',
      byok: true,
    });
    expect(fromEnv.providers.get('ollama')?.config).toMatchObject({
      baseUrl: 'http://10.0.0.5:11434/v1',
      apiKey: null,
    });
  });

  it('local servers: default local URL, no key needed, models discovered, never BYOK', () => {
    const c = loadCatalog(
      config([
        { slug: 'ollama', kind: 'ollama' },
        { slug: 'vllm', kind: 'vllm', api_key: 'token' },
        { slug: 'lmstudio', kind: 'lmstudio' },
      ]),
    );
    const urls = Object.fromEntries([...c.providers.values()].map((p) => [p.config.slug, p.config.baseUrl]));
    expect(urls).toEqual({
      ollama: 'http://127.0.0.1:11434/v1',
      vllm: 'http://127.0.0.1:8000/v1',
      lmstudio: 'http://127.0.0.1:1234/v1',
    });
    for (const p of c.providers.values()) {
      expect(p.byok).toBe(false);
      expect(p.config.keyRequired).toBe(false);
      expect(createProvider(p.config).traits.keyOptional).toBe(true);
    }
    expect(discoverable(c).map((p) => p.config.slug)).toEqual(['ollama', 'vllm', 'lmstudio']);
  });

  it('let the entry override every default', () => {
    const c = loadCatalog(
      config([
        {
          slug: 'pplx',
          kind: 'perplexity',
          base_url: 'http://127.0.0.1:9/pplx/',
          api_key: 'pplx-1',
          discover_models: true,
          model_data: false,
          byok: false,
          vendor: 'xai',
          zdr: true,
        },
        { slug: 'or', kind: 'openrouter', api_key: 'or-1', discover_models: false },
      ]),
    );
    expect(c.providers.get('pplx')).toMatchObject({
      config: { baseUrl: 'http://127.0.0.1:9/pplx', apiKey: 'pplx-1' },
      discoverModels: true,
      modelData: false,
      byok: false,
      vendor: 'xai',
      zdr: true,
    });
    expect([...c.models.keys()].some((id) => id.startsWith('pplx/'))).toBe(false);
    expect(c.providers.get('or')).toMatchObject({
      config: { baseUrl: 'https://openrouter.ai/api/v1' },
      discoverModels: false,
    });
    expect(discoverable(c).map((p) => p.config.slug)).toEqual(['pplx']);
  });

  it('a hosted vendor without an operator key: BYOK off (like any keyless entry), no discovery', () => {
    const c = loadCatalog(config([{ slug: 'together', kind: 'together' }]));
    expect(c.providers.get('together')).toMatchObject({ byok: false, config: { apiKey: null } });
    // …and its model list is not asked for (the vendor would answer 401).
    expect(discoverable(c)).toEqual([]);
  });

  it('refuse an unknown kind at start, naming the field and the kinds there are', () => {
    const load = () => loadCatalog(config([{ slug: 'grok', kind: 'grok', api_key: 'x' }]));
    expect(load).toThrow(CatalogError);
    expect(load).toThrow(
      /^providers\[0\]\.kind: unknown kind "grok" \(provider grok\); expected one of .*groq.*lmstudio/,
    );
    // A kind that is not a preset still needs its base_url.
    expect(() => loadCatalog(config([{ slug: 'x', kind: 'openai-compatible' }]))).toThrow(/base_url/);
  });

  it('take the capabilities a vendor refuses off its endpoints (per model where the quirk is)', () => {
    const endpoint = (provider: string, upstream_model: string) => ({
      id: `t/${provider}-${upstream_model}`,
      endpoints: [{ provider, upstream_model, pricing: {} }],
    });
    const path = join(mkdtempSync(join(tmpdir(), 'presets-')), 'gatehouse.json');
    writeFileSync(
      path,
      JSON.stringify({
        providers: [
          { slug: 'pplx', kind: 'perplexity', api_key: 'k', model_data: false },
          { slug: 'ds', kind: 'deepseek', api_key: 'k', model_data: false },
        ],
        models: [
          endpoint('pplx', 'sonar'),
          endpoint('ds', 'deepseek-reasoner'),
          endpoint('ds', 'deepseek-chat'),
        ],
      }),
    );
    const c = loadCatalog({ GATEHOUSE_CONFIG: path, GATEHOUSE_DEV_PROVIDER: 'false' });
    const caps = (id: string) => c.models.get(id)?.endpoints[0]?.capabilities;
    expect(caps('t/pplx-sonar')).toEqual(['json', 'reasoning', 'images']);
    expect(caps('t/ds-deepseek-reasoner')).toEqual(['tools', 'json', 'reasoning', 'images']);
    expect(caps('t/ds-deepseek-chat')).toEqual(['tools', 'json', 'logprobs', 'reasoning', 'images']);
    // An id the catalog does not list, passed through to the vendor, too.
    expect(findModel(c, 'pplx/sonar-unlisted')?.endpoints[0]?.capabilities).toEqual([
      'json',
      'reasoning',
      'images',
    ]);
  });
});
