/**
 * The credential router's memory of conversations: a route is remembered (and the conversation's
 * opening hashed) only for calls that had more than one route — candidate selection asks for the
 * sticky route only then, and only calls that asked are remembered.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { InferenceCall } from '../call.js';
import type { Catalog, ModelEntry, ProviderEntry } from '../catalog.js';
import type { Candidate, Credential } from '../select.js';
import { CredentialRouter } from './service.js';
import { credentialSettings } from './settings.js';

const cred = (name: string): Credential => ({ apiKey: `key-${name}`, isByok: false, name, weight: 1 });
const provider = (credentials: Credential[], byok = false) =>
  ({ credentials, byok }) as unknown as ProviderEntry;
const model = (id: string, ...providers: string[]) =>
  ({ id, endpoints: providers.map((p) => ({ provider: p, upstreamModel: id })) }) as unknown as ModelEntry;

const catalog = {
  providers: new Map([
    ['single', provider([cred('s1')])],
    ['keys', provider([cred('k1'), cred('k2')])],
    ['byok', provider([cred('b1')], true)],
    ['other', provider([cred('o1')])],
  ]),
} as unknown as Catalog;

const call = {
  caller: { keyHash: 'h' },
  wire: { native: 'openai-chat' },
  body: { messages: [{ role: 'user', content: 'Hello there' }] },
} as unknown as InferenceCall;

describe('sticky routes of the credential router', () => {
  const served = (router: CredentialRouter, m: ModelEntry, p: string) =>
    router.served(call, {
      model: m,
      endpoint: m.endpoints.find((e) => e.provider === p),
      credential: (catalog.providers.get(p)?.credentials as Credential[])[0],
    } as unknown as Candidate);

  it('remembers the route of a call that looked its conversation up', () => {
    const router = new CredentialRouter(catalog, credentialSettings({}), new Registry());
    for (const [m, p] of [
      [model('t/two', 'single', 'other'), 'other'],
      [model('t/keys', 'keys'), 'keys'],
      [model('t/byok', 'byok'), 'byok'],
    ] as const) {
      expect(router.preferred(call, m)).toBeUndefined();
      served(router, m, p);
      expect(router.preferred(call, m)?.provider).toBe(p);
    }
  });

  it('remembers nothing for a call that never asked (it had one route)', () => {
    const router = new CredentialRouter(catalog, credentialSettings({}), new Registry());
    const m = model('t/one', 'single');
    served(router, m, 'single');
    const next = { ...call } as InferenceCall;
    expect(router.preferred(next, m)).toBeUndefined();
  });
});
