import { describe, expect, it } from 'vitest';
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
