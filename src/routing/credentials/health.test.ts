import { describe, expect, it } from 'vitest';
import { UpstreamError } from '../../providers/types.js';
import type { Credential } from '../select.js';
import { CredentialHealth } from './health.js';

const settings = { breaker: true, failures: 3, cooldownMs: 1_000, maxCooldownMs: 8_000 };
const operator = (version = 'sha256:aaa'): Credential => ({
  apiKey: 'sk-op',
  isByok: false,
  name: 'default',
  health: { key: 'openai/default', version },
});
const byok = (id: string, version = '2026-01-01T00:00:00.000Z'): Credential => ({
  apiKey: `sk-${id}`,
  isByok: true,
  byokId: id,
  name: id,
  health: { key: id, version },
});
const refused = new UpstreamError(401, 'invalid key');

describe('credential health', () => {
  it('keeps no state for a credential that never failed, and counts a refused request (400) as working', () => {
    const h = new CredentialHealth(settings);
    expect(h.admit('openai', operator())).toBe(true);
    h.settle('openai', operator(), null);
    h.settle('openai', operator(), new UpstreamError(400, 'bad field'));
    expect(h.of(operator())).toBeUndefined();
  });

  it("keeps a BYOK credential's failure to itself: not the operator's key, not another tenant's", () => {
    const h = new CredentialHealth(settings);
    h.settle('openai', byok('tenant-1'), refused);
    expect(h.admit('openai', byok('tenant-1'))).toBe(false);
    expect(h.admit('openai', byok('tenant-2'))).toBe(true);
    expect(h.admit('openai', operator())).toBe(true);
    expect(h.byokEntries().map((e) => [e.provider, e.name, e.kind, e.breaker.state])).toEqual([
      ['openai', 'tenant-1', 'byok', 'disabled'],
    ]);
  });

  it('starts a changed credential afresh (a new secret, a BYOK update)', () => {
    const h = new CredentialHealth(settings);
    h.settle('openai', operator('sha256:old'), refused);
    expect(h.admit('openai', operator('sha256:old'))).toBe(false);
    expect(h.admit('openai', operator('sha256:new'))).toBe(true);
    h.settle('openai', byok('t', 'v1'), refused);
    expect(h.admit('openai', byok('t', 'v2'))).toBe(true);
    expect(h.of(byok('t', 'v1'))).toBeUndefined();
  });

  it('with breakers off, admits everything and keeps nothing', () => {
    const h = new CredentialHealth({ ...settings, breaker: false });
    h.settle('openai', operator(), refused);
    expect(h.admit('openai', operator())).toBe(true);
    expect(h.of(operator())).toBeUndefined();
  });

  it('has no breaker for a credential without a health key', () => {
    const h = new CredentialHealth(settings);
    const bare: Credential = { apiKey: 'k', isByok: false };
    h.settle('openai', bare, refused);
    expect(h.admit('openai', bare)).toBe(true);
  });
});
