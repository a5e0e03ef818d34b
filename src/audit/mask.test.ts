import { describe, expect, it } from 'vitest';
import { maskSecrets, REDACTED } from './mask.js';

describe('maskSecrets', () => {
  it('redacts every field named like a key, secret, token or password, at any depth', () => {
    const masked = maskSecrets({
      data: { name: 'k', hash: 'abc', workspace_id: 'w' },
      key: 'sk-gh-v1-secret',
      byok: [{ provider: 'openai', api_key: 'sk-provider', clientSecret: 'cs' }],
      nested: { deeper: { admin_token: 't', password: 'p', Private_Key: { pem: 'x' } } },
      value: 'vault-value',
      credentials: { anything: 1 },
    });
    expect(masked).toEqual({
      data: { name: 'k', hash: 'abc', workspace_id: 'w' },
      key: REDACTED,
      byok: [{ provider: 'openai', api_key: REDACTED, clientSecret: REDACTED }],
      nested: { deeper: { admin_token: REDACTED, password: REDACTED, Private_Key: REDACTED } },
      value: REDACTED,
      credentials: REDACTED,
    });
    expect(JSON.stringify(masked)).not.toMatch(/sk-|vault-value|"t"|"p"|pem/);
  });

  it('redacts every value of a headers object, whatever the header is called', () => {
    const masked = maskSecrets({
      config: {
        url: 'https://hooks.example.com',
        headers: { Authorization: 'Bearer hook-credential', 'X-Api': 'x1' },
      },
    });
    expect(masked).toEqual({
      config: { url: 'https://hooks.example.com', headers: { Authorization: REDACTED, 'X-Api': REDACTED } },
    });
  });

  it('keeps identifiers, flags and nulls that only look like secrets', () => {
    const v = {
      key_hashes: ['h1'],
      key_hash: 'h2',
      key_id: 'i',
      is_management_key: true,
      key_label: 'sk-…abcd',
      token_limit: null,
      key_name: 'ci',
      max_tokens: 100,
      allowed_api_key_hashes: ['h3'],
      has_secret: false,
    };
    expect(maskSecrets(v)).toEqual(v);
  });

  it('leaves scalars and arrays of scalars alone and does not change its input', () => {
    const input = { key: 'x', list: [1, 'a', null] };
    expect(maskSecrets('sk-plain')).toBe('sk-plain');
    expect(maskSecrets([{ token: 'x' }])).toEqual([{ token: REDACTED }]);
    expect(maskSecrets(input)).toEqual({ key: REDACTED, list: [1, 'a', null] });
    expect(input.key).toBe('x');
  });
});
