import { describe, expect, it } from 'vitest';
import { isSecretName, SECRET_NAME_MAX, secretNameProblem } from './names.js';

describe('secret names', () => {
  it.each([
    'a',
    'x1',
    'openai_api_key',
    'a_b_c',
    'a1_2b_3',
    'token2',
    'a'.repeat(SECRET_NAME_MAX),
  ])('accepts %s', (name) => {
    expect(isSecretName(name)).toBe(true);
    expect(secretNameProblem(name)).toBeNull();
  });

  it.each([
    ['', 'is empty'],
    ['a'.repeat(SECRET_NAME_MAX + 1), 'longer than 255'],
    ['Api_key', 'uppercase'],
    ['API', 'uppercase'],
    ['api-key', 'other than a-z'],
    ['api.key', 'other than a-z'],
    ['api key', 'other than a-z'],
    ['clé', 'other than a-z'],
    ['1key', 'start with a letter'],
    ['_key', 'start with a letter'],
    ['api__key', 'consecutive underscores'],
    ['key_', 'ends with an underscore'],
    ['a_', 'ends with an underscore'],
  ])('refuses %j (%s)', (name, why) => {
    expect(isSecretName(name)).toBe(false);
    const problem = secretNameProblem(name);
    expect(problem).toContain(why);
    expect(problem).toContain('lowercase letters, digits and single underscores');
  });

  it('never quotes the refused name', () => {
    const name = 'Sk_Live_Looks_Like_A_Secret';
    expect(secretNameProblem(name)).not.toContain(name);
  });
});
