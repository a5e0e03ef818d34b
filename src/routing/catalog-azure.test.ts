import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CatalogError, loadCatalog } from './catalog.js';

const config = (providers: object[], models: object[] = [], env: Record<string, string> = {}) => {
  const path = join(mkdtempSync(join(tmpdir(), 'azure-')), 'gatehouse.json');
  writeFileSync(path, JSON.stringify({ providers, models }));
  return { GATEHOUSE_CONFIG: path, GATEHOUSE_DEV_PROVIDER: 'false', ...env };
};

const entry = { slug: 'my-azure', kind: 'azure', endpoint: 'https://res.openai.azure.com/', api_key: 'k-1' };

describe('Azure OpenAI entries', () => {
  it('take the endpoint as the base URL, a default api-version and the deployments map', () => {
    const c = loadCatalog(
      config(
        [{ ...entry, deployments: { 'acme/gpt': 'prod-gpt', 'text-embedding-3-small': 'emb' } }],
        [{ id: 'acme/gpt', endpoints: [{ provider: 'my-azure', upstream_model: 'gpt-4o' }] }],
      ),
    );
    const azure = c.providers.get('my-azure')!;
    expect(azure.config).toMatchObject({
      kind: 'azure',
      baseUrl: 'https://res.openai.azure.com',
      apiKey: 'k-1',
      azure: { apiVersion: '2024-10-21' },
    });
    // A catalog model id's deployment applies to its upstream id (what the adapter sees).
    expect(azure.config.azure!.deployments).toMatchObject({
      'gpt-4o': 'prod-gpt',
      'text-embedding-3-small': 'emb',
    });
    // BYOK only when the operator turns it on.
    expect(azure.byok).toBe(false);
  });

  it('read the key from api_key_env and keep an explicit api_version', () => {
    const c = loadCatalog(
      config(
        [{ ...entry, api_key: undefined, api_key_env: 'AZ_KEY', api_version: '2025-04-01-preview' }],
        [],
        {
          AZ_KEY: 'from-env',
        },
      ),
    );
    expect(c.providers.get('my-azure')!.config).toMatchObject({
      apiKey: 'from-env',
      azure: { apiVersion: '2025-04-01-preview' },
    });
  });

  it('take Entra ID client credentials instead of a key (secret from the environment)', () => {
    const c = loadCatalog(
      config(
        [
          {
            ...entry,
            api_key: undefined,
            auth: { tenant_id: 't-1', client_id: 'app-1', client_secret_env: 'AZ_SECRET' },
          },
        ],
        [],
        { AZ_SECRET: 's3cret' },
      ),
    );
    const azure = c.providers.get('my-azure')!;
    expect(azure.config.apiKey).toBeNull();
    expect(azure.config.azure!.entra).toEqual({ tenantId: 't-1', clientId: 'app-1', clientSecret: 's3cret' });
    expect(azure.byok).toBe(false);
  });

  it.each([
    [{ api_key: undefined, auth: { client_id: 'a', client_secret: 's' } }, /providers\[0\]\.auth\.tenant_id/],
    [{ api_key: undefined, auth: { tenant_id: 't', client_id: 'a' } }, /providers\[0\]\.auth\.client_secret/],
    [{ auth: { tenant_id: 't', client_id: 'a', client_secret: 's' } }, /providers\[0\]\.auth .*one of them/],
    [
      { api_key: undefined, byok: true, auth: { tenant_id: 't', client_id: 'a', client_secret: 's' } },
      /providers\[0\]\.byok/,
    ],
    [
      { api_key: undefined, auth: { tenant_id: 't', client_id: 'a', client_secret: 's', token_url: 'nope' } },
      /providers\[0\]\.auth\.token_url/,
    ],
  ])('refuse a bad Entra ID entry (%o), naming the field', (change, message) => {
    expect(() => loadCatalog(config([{ ...entry, ...change }]))).toThrow(message);
  });

  it.each([
    [{ endpoint: undefined }, /providers\[0\]\.endpoint \(provider my-azure\): required/],
    [{ endpoint: 'res.openai.azure.com' }, /providers\[0\]\.endpoint .*not an http\(s\) URL/],
    [{ endpoint: 'https://res.openai.azure.com/?x=1' }, /providers\[0\]\.endpoint/],
    [{ api_key: undefined }, /providers\[0\]\.api_key \(provider my-azure\): required/],
    [{ api_key: undefined, api_key_env: 'UNSET_AZ_KEY' }, /api_key_env .*UNSET_AZ_KEY is not set/],
    [{ api_version: 20241021 }, /providers\[0\]\.api_version/],
    [{ deployments: ['a'] }, /providers\[0\]\.deployments/],
    [{ deployments: { 'gpt-4o': '' } }, /providers\[0\]\.deployments\.gpt-4o/],
  ])('refuse to start on a bad entry (%o), naming the field', (change, message) => {
    const load = () => loadCatalog(config([{ ...entry, ...change }]));
    expect(load).toThrow(CatalogError);
    expect(load).toThrow(message);
  });
});
