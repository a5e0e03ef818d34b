import { describe, expect, it } from 'vitest';
import { ApiError } from '../lib/errors.js';
import { normalizeHost, normalizeHosts } from './hosts.js';

const ok = (entry: string) => {
  const r = normalizeHost(entry);
  if ('problem' in r) throw new Error(`${entry}: ${r.problem}`);
  return r.host;
};
const problem = (entry: string) => {
  const r = normalizeHost(entry);
  return 'problem' in r ? r.problem : null;
};

describe('normalizeHost', () => {
  it.each([
    ['api.example.com', 'api.example.com'],
    ['API.Example.COM', 'api.example.com'],
    ['api.example.com.', 'api.example.com'],
    ['localhost', 'localhost'],
    ['LOCALHOST.', 'localhost'],
    ['intranet', 'intranet'],
    ['a-b--c.example', 'a-b--c.example'],
    ['xn--bcher-kva.example', 'xn--bcher-kva.example'],
    ['123.example.com', '123.example.com'],
    ['10.0.0.1', '10.0.0.1'],
    ['255.255.255.255', '255.255.255.255'],
    ['0.0.0.0', '0.0.0.0'],
    ['127.0.0.1.', '127.0.0.1'],
    [`${'a'.repeat(63)}.example`, `${'a'.repeat(63)}.example`],
  ])('accepts %s as %s', (entry, host) => {
    expect(ok(entry)).toBe(host);
  });

  it.each([
    ['', 'is empty'],
    [' ', 'whitespace'],
    [' api.example.com', 'whitespace'],
    ['api.example.com ', 'whitespace'],
    ['api .example.com', 'whitespace'],
    ['api.example.com\t', 'whitespace'],
    ['https://api.example.com', 'scheme'],
    ['ftp://api.example.com/x', 'scheme'],
    ['api.example.com:443', 'port'],
    ['localhost:8080', 'port'],
    ['api.example.com/v1', 'path'],
    ['//api.example.com', 'path'],
    ['api.example.com?x=1', 'query'],
    ['api.example.com#frag', 'fragment'],
    ['*.example.com', 'wildcard'],
    ['*', 'wildcard'],
    ['api.*.com', 'wildcard'],
    ['user@api.example.com', 'user information'],
    ['[::1]', 'IPv6'],
    ['::1', 'IPv6'],
    ['2001:db8::1', 'IPv6'],
    ['.', 'not a hostname'],
    ['api.example.com..', 'empty label'],
    ['.api.example.com', 'empty label'],
    ['api..example.com', 'empty label'],
    ['-api.example.com', 'hyphen'],
    ['api-.example.com', 'hyphen'],
    ['api_key.example.com', 'other than a-z'],
    ['bücher.example', 'xn--'],
    [`${'a'.repeat(64)}.example`, 'longer than 63'],
    [`${'a.'.repeat(127)}ab`, 'longer than 253'],
    ['256.1.1.1', 'IPv4'],
    ['1.2.3', 'IPv4'],
    ['1.2.3.4.5', 'IPv4'],
    ['01.2.3.4', 'IPv4'],
    ['0x7f.0.0.1', 'IPv4'],
    ['example.123', 'IPv4'],
  ])('refuses %j (%s)', (entry, why) => {
    expect(problem(entry)).toContain(why);
  });
});

describe('normalizeHosts', () => {
  it('lowercases, drops one trailing dot and collapses duplicates, keeping first-seen order', () => {
    expect(
      normalizeHosts(['B.example', 'a.example', 'b.example.', 'A.EXAMPLE', '10.0.0.1', '10.0.0.1.']),
    ).toEqual(['b.example', 'a.example', '10.0.0.1']);
  });

  it('refuses an empty list and more than 100 entries', () => {
    expect(() => normalizeHosts([])).toThrow(/at least one/);
    const many = Array.from({ length: 101 }, (_, i) => `h${i}.example`);
    expect(() => normalizeHosts(many)).toThrow(/at most 100/);
    expect(normalizeHosts(many.slice(0, 100))).toHaveLength(100);
  });

  it('answers 400 naming the offending entry by index and value', () => {
    let caught: unknown;
    try {
      normalizeHosts(['ok.example', 'https://bad.example']);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ApiError);
    expect((caught as ApiError).status).toBe(400);
    expect((caught as ApiError).message).toBe(
      'hosts[1] "https://bad.example" has a scheme; give the bare hostname (e.g. api.example.com)',
    );
  });

  it('shortens a long offending entry in the message', () => {
    const long = `${'x'.repeat(300)} `;
    expect(() => normalizeHosts([long])).toThrow(/^hosts\[0\] "x{77}\.\.\." contains whitespace$/);
  });
});
