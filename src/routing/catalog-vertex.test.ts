import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CatalogError, loadCatalog } from './catalog.js';

const dir = mkdtempSync(join(tmpdir(), 'vertex-'));
const config = (providers: object[], models: object[] = [], env: Record<string, string> = {}) => {
  const path = join(dir, `gatehouse-${Math.random()}.json`);
  writeFileSync(path, JSON.stringify({ providers, models }));
  return { GATEHOUSE_CONFIG: path, GATEHOUSE_DEV_PROVIDER: 'false', ...env };
};

const pem = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
  type: 'pkcs8',
  format: 'pem',
}) as string;
const key = {
  type: 'service_account',
  project_id: 'acme-ml',
  private_key_id: 'k1',
  private_key: pem,
  client_email: 'gw@acme-ml.iam.gserviceaccount.com',
  token_uri: 'https://oauth2.googleapis.com/token',
};
const keyFile = join(dir, 'sa.json');
writeFileSync(keyFile, JSON.stringify(key));

const entry = { slug: 'my-vertex', kind: 'vertex', project: 'acme-ml', region: 'europe-west4' };

describe('Vertex AI entries', () => {
  it('take the regional origin as the base URL and, without credentials, application default credentials', () => {
    const c = loadCatalog(config([entry]));
    const vertex = c.providers.get('my-vertex')!;
    expect(vertex.config).toMatchObject({
      kind: 'vertex',
      baseUrl: 'https://europe-west4-aiplatform.googleapis.com',
      apiKey: null,
      vertex: { project: 'acme-ml', region: 'europe-west4', publishers: {} },
    });
    expect(vertex.config.vertex!.serviceAccount).toBeUndefined();
    expect(vertex.byok).toBe(false);
    expect(vertex.region).toBe('europe-west4');
    // Gemini models of the model data are listed under the entry's slug.
    expect(c.models.get('my-vertex/gemini-2.5-pro')?.endpoints[0]).toMatchObject({
      provider: 'my-vertex',
      upstreamModel: 'gemini-2.5-pro',
    });
  });

  it('global: the global endpoint; an endpoint override wins', () => {
    const c = loadCatalog(
      config([
        { ...entry, region: 'global' },
        { ...entry, slug: 'psc', endpoint: 'https://vertex.internal.example/' },
      ]),
    );
    expect(c.providers.get('my-vertex')!.config.baseUrl).toBe('https://aiplatform.googleapis.com');
    expect(c.providers.get('psc')!.config.baseUrl).toBe('https://vertex.internal.example');
  });

  it('read a service account key inline, as JSON text, or from a file named by a variable', () => {
    const c = loadCatalog(
      config(
        [
          { ...entry, credentials: key, token_url: 'http://127.0.0.1:9/token' },
          { ...entry, slug: 'text', credentials: JSON.stringify(key) },
          { ...entry, slug: 'env', credentials_env: 'SA_PATH', publishers: { 'my-claude': 'anthropic' } },
        ],
        [],
        { SA_PATH: keyFile },
      ),
    );
    const sa = {
      client_email: key.client_email,
      private_key: pem,
      private_key_id: 'k1',
      token_uri: key.token_uri,
    };
    expect(c.providers.get('my-vertex')!.config.vertex).toMatchObject({
      serviceAccount: sa,
      tokenUrl: 'http://127.0.0.1:9/token',
    });
    expect(c.providers.get('text')!.config.vertex!.serviceAccount).toEqual(sa);
    expect(c.providers.get('env')!.config.vertex).toMatchObject({
      serviceAccount: sa,
      publishers: { 'my-claude': 'anthropic' },
    });
  });

  it.each([
    [{ project: undefined }, /providers\[0\]\.project \(provider my-vertex\): required/],
    [{ project: 'a/b' }, /providers\[0\]\.project .*not a project id/],
    [{ region: undefined }, /providers\[0\]\.region \(provider my-vertex\): required/],
    [{ region: 'us central' }, /providers\[0\]\.region .*not a Vertex AI region/],
    [{ endpoint: 'vertex.example' }, /providers\[0\]\.endpoint .*not an http\(s\) URL/],
    [{ token_url: 'ftp://x' }, /providers\[0\]\.token_url .*not an http\(s\) URL/],
    [{ api_key_env: 'K' }, /providers\[0\]\.api_key_env .*Google credentials/],
    [{ byok: true }, /providers\[0\]\.byok/],
    [{ credentials_env: 'UNSET_SA' }, /providers\[0\]\.credentials_env .*UNSET_SA is not set/],
    [{ credentials: key, credentials_env: 'X' }, /providers\[0\]\.credentials .*not both/],
    [{ credentials: join(dir, 'missing.json') }, /providers\[0\]\.credentials .*cannot read.*ENOENT/],
    [{ credentials: { ...key, client_email: 'nobody' } }, /providers\[0\]\.credentials\.client_email/],
    [{ credentials: { ...key, token_uri: 'nowhere' } }, /providers\[0\]\.credentials\.token_uri/],
    [{ publishers: ['anthropic'] }, /providers\[0\]\.publishers/],
  ])('refuse to start on a bad entry (%o), naming the field', (change, message) => {
    const load = () => loadCatalog(config([{ ...entry, ...change }]));
    expect(load).toThrow(CatalogError);
    expect(load).toThrow(message);
  });

  it('a key that is not a PEM private key is refused without being quoted', () => {
    const secret = `-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWJ1dC1icm9rZW4=\n-----END PRIVATE KEY-----\n`;
    const load = () => loadCatalog(config([{ ...entry, credentials: { ...key, private_key: secret } }]));
    expect(load).toThrow(/providers\[0\]\.credentials\.private_key .*not a PEM private key/);
    expect(load).not.toThrow(/c2VjcmV0/);
  });
});
