import { describe, expect, it } from 'vitest';
import { namedHosts } from './request-hosts.js';

describe('namedHosts', () => {
  it('names the Host header and every X-Forwarded-Host entry, lowercased, without port or final dot', () => {
    expect(namedHosts({ host: 'EU.Gatehouse.test.:8080' })).toEqual(['eu.gatehouse.test']);
    expect(namedHosts({ host: '[::1]:8080' })).toEqual(['[::1]']);
    expect(
      namedHosts({ host: 'gatehouse.test', 'x-forwarded-host': 'eu.gatehouse.test, proxy.internal:443' }),
    ).toEqual(['gatehouse.test', 'eu.gatehouse.test', 'proxy.internal']);
    expect(namedHosts({})).toEqual([]);
  });
});
