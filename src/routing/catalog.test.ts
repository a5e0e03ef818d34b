import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CatalogError, findModel, loadCatalog } from './catalog.js';

const file = (name: string, text: string) => {
  const path = join(mkdtempSync(join(tmpdir(), 'catalog-')), name);
  writeFileSync(path, text);
  return path;
};

describe('loadCatalog', () => {
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

  it('refuses a model naming an unknown provider', () => {
    const path = file(
      'bad.json',
      JSON.stringify({ models: [{ id: 'a/b', endpoints: [{ provider: 'nowhere' }] }] }),
    );
    expect(() => loadCatalog({ GATEHOUSE_CONFIG: path })).toThrow(CatalogError);
  });
});
