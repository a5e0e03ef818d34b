import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CatalogError, loadCatalog } from '../catalog.js';
import { parseOperatorKeys } from './operator-keys.js';

const env = { KEY_B: 'sk-from-env-b' };
const parse = (p: object) => parseOperatorKeys({ slug: 'openai', ...p }, 'providers[0]', env);

describe('operator keys (GATEHOUSE_CONFIG providers[].keys)', () => {
  it('reads names, secrets (inline or from the environment) and weights; defaults name and weight', () => {
    expect(parse({ keys: [{ name: 'a', key: ' sk-a ', weight: 3 }, { key_env: 'KEY_B' }] })).toEqual([
      { name: 'a', apiKey: 'sk-a', weight: 3 },
      { name: 'key-2', apiKey: 'sk-from-env-b', weight: 1 },
    ]);
    expect(parse({ api_key: 'sk-one' })).toBeNull();
  });

  it.each([
    [{ keys: [] }, /providers\[0\]\.keys \(provider openai\): must be a non-empty list/],
    [{ keys: 'sk-x' }, /providers\[0\]\.keys .*non-empty list/],
    [{ keys: [{ key: 'a' }], api_key: 'b' }, /keys .*takes the place of api_key/],
    [{ keys: [{ key: 'a' }], auth: {} }, /keys .*cannot be combined with auth/],
    [{ keys: ['sk-x'] }, /keys\[0\] .*must be an object/],
    [{ keys: [{ name: 'a' }] }, /keys\[0\] .*exactly one of key or key_env/],
    [{ keys: [{ key: 'a', key_env: 'KEY_B' }] }, /keys\[0\] .*exactly one of key or key_env/],
    [{ keys: [{ key_env: 'UNSET_VAR' }] }, /keys\[0\]\.key_env .*UNSET_VAR is not set/],
    [{ keys: [{ key: '  ' }] }, /keys\[0\]\.key .*non-empty string/],
    [{ keys: [{ key: 'a', weight: 0 }] }, /keys\[0\]\.weight .*above 0/],
    [{ keys: [{ key: 'a', weight: '2' }] }, /keys\[0\]\.weight/],
    [{ keys: [{ key: 'a', name: 'has space' }] }, /keys\[0\]\.name/],
    [
      {
        keys: [
          { key: 'a', name: 'x' },
          { key: 'b', name: 'x' },
        ],
      },
      /keys\[1\]\.name .*duplicate name x/,
    ],
  ])('refuses %j naming the field', (entry, message) => {
    expect(() => parse(entry)).toThrow(message);
  });

  it('never quotes a secret in a refusal', () => {
    try {
      parse({ keys: [{ key: 'sk-secret-value', name: 'bad name' }] });
    } catch (err) {
      expect((err as Error).message).not.toContain('sk-secret-value');
    }
  });
});

describe('operator keys in the catalog', () => {
  const load = (providers: object[], env: Record<string, string> = {}) => {
    const path = join(mkdtempSync(join(tmpdir(), 'keys-')), 'gatehouse.json');
    writeFileSync(path, JSON.stringify({ providers }));
    return loadCatalog({ GATEHOUSE_CONFIG: path, GATEHOUSE_DEV_PROVIDER: 'false', ...env });
  };

  it('gives each entry its named, weighted credentials (the first key is the provider key)', () => {
    const c = load(
      [
        {
          slug: 'openai',
          kind: 'openai',
          base_url: 'https://api.openai.com/v1',
          keys: [
            { name: 'a', key: 'sk-a', weight: 2 },
            { name: 'b', key_env: 'KEY_B' },
          ],
        },
        // A preset with keys does not read its vendor's variable (GROQ_API_KEY) too.
        { slug: 'groq', kind: 'groq', keys: [{ name: 'g1', key: 'gsk-1' }] },
        { slug: 'together', kind: 'together', api_key: 'tg-1' },
      ],
      { KEY_B: 'sk-b', GROQ_API_KEY: 'gsk-env' },
    );
    const openai = c.providers.get('openai');
    expect(openai?.config.apiKey).toBe('sk-a');
    expect(openai?.byok).toBe(true); // kind openai with an operator key: as with api_key
    expect(openai?.credentials?.map((k) => [k.name, k.apiKey, k.weight])).toEqual([
      ['a', 'sk-a', 2],
      ['b', 'sk-b', 1],
    ]);
    const fingerprints = openai?.credentials?.map((k) => k.health?.version);
    expect(fingerprints?.[0]).toMatch(/^sha256:[0-9a-f]{12}$/);
    expect(fingerprints?.[0]).not.toBe(fingerprints?.[1]);
    expect(c.providers.get('groq')?.credentials?.map((k) => [k.name, k.apiKey])).toEqual([['g1', 'gsk-1']]);
    expect(c.providers.get('together')?.credentials?.map((k) => [k.name, k.apiKey, k.weight])).toEqual([
      ['default', 'tg-1', 1],
    ]);
  });

  it('refuses a malformed entry at start, naming it', () => {
    expect(() =>
      load([
        { slug: 'openai', kind: 'openai', base_url: 'https://x', keys: [{ name: 'a', key_env: 'NOPE' }] },
      ]),
    ).toThrow(CatalogError);
    expect(() =>
      load([
        { slug: 'openai', kind: 'openai', base_url: 'https://x', keys: [{ name: 'a', key_env: 'NOPE' }] },
      ]),
    ).toThrow(/providers\[0\]\.keys\[0\]\.key_env \(provider openai\): the variable NOPE is not set/);
  });
});
