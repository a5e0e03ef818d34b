import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../../../test/support/mock-upstream.js';
import { UpstreamError } from '../types.js';
import { AzureProvider } from './adapter.js';
import { ENTRA_SCOPE, EntraTokenSource } from './entra.js';

const SECRET = 'entra-client-secret-0123456789';

/** A token endpoint recording each form it receives; answers `next` (a fresh token by default). */
describe('Azure with Microsoft Entra ID', () => {
  let tokens: Server;
  let tokenUrl: string;
  let forms: URLSearchParams[];
  let next: { status: number; body: unknown } | null;
  let mock: MockUpstream;
  const signal = new AbortController().signal;

  beforeAll(async () => {
    tokens = createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => {
        raw += c;
      });
      req.on('end', () => {
        forms.push(new URLSearchParams(raw));
        const answer = next ?? {
          status: 200,
          body: { access_token: `tok-${forms.length}`, expires_in: 3600 },
        };
        res.writeHead(answer.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(answer.body));
      });
    });
    await new Promise<void>((r) => tokens.listen(0, '127.0.0.1', r));
    tokenUrl = `http://127.0.0.1:${(tokens.address() as AddressInfo).port}/tenant-1/oauth2/v2.0/token`;
    mock = await startMockUpstream();
  });
  beforeEach(() => {
    forms = [];
    next = null;
    mock.reset();
  });
  afterAll(async () => {
    await new Promise<void>((r) => tokens.close(() => r()));
    await mock.close();
  });

  const auth = () => ({ tenantId: 'tenant-1', clientId: 'app-1', clientSecret: SECRET, tokenUrl });

  it('sends a client-credentials token as Bearer (no api-key), fetched once for many calls', async () => {
    const provider = new AzureProvider({
      slug: 'my-azure',
      kind: 'azure',
      baseUrl: mock.url,
      apiKey: null,
      azure: { apiVersion: '2024-10-21', deployments: {}, entra: auth() },
    });
    expect(provider.traits.keyOptional).toBe(true);
    const req = { model: 'gpt-4o', messages: [{ role: 'user' as const, content: 'Hi' }] };
    await Promise.all([
      provider.chat(req, { apiKey: null, signal }),
      provider.chat(req, { apiKey: null, signal }),
    ]);
    await provider.embeddings({ model: 'emb', input: 'x' }, { apiKey: null, signal });
    expect(forms).toHaveLength(1);
    expect(Object.fromEntries(forms[0]!)).toEqual({
      grant_type: 'client_credentials',
      client_id: 'app-1',
      client_secret: SECRET,
      scope: ENTRA_SCOPE,
    });
    expect(mock.requests).toHaveLength(3);
    for (const r of mock.requests) {
      expect(r.headers.authorization).toBe('Bearer tok-1');
      expect(r.headers['api-key']).toBeUndefined();
      expect(JSON.stringify(r.headers)).not.toContain(SECRET);
    }
  });

  it('renews the token before it expires', async () => {
    let now = 1_000_000;
    const source = new EntraTokenSource(auth(), () => now);
    expect(await source.get(signal)).toBe('tok-1');
    now += 50 * 60_000; // 50 minutes into a 60-minute token: still served from the cache
    expect(await source.get(signal)).toBe('tok-1');
    now += 6 * 60_000; // within 5 minutes of expiry: renewed
    expect(await source.get(signal)).toBe('tok-2');
    expect(forms).toHaveLength(2);
  });

  it('a caller who leaves stops waiting for the token; the others get it', async () => {
    const source = new EntraTokenSource(auth());
    const leaving = new AbortController();
    const first = source.get(leaving.signal);
    const second = source.get(signal);
    leaving.abort();
    await expect(first).rejects.toMatchObject({ name: 'AbortError' });
    expect(await second).toBe('tok-1');
    expect(forms).toHaveLength(1);
  });

  it('a refused token request is a 401 naming Entra ID, never the secret', async () => {
    next = {
      status: 401,
      body: { error: 'invalid_client', error_description: `AADSTS7000215: Invalid client secret ${SECRET}.` },
    };
    const err = await new EntraTokenSource(auth()).get(signal).catch((e) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err).toMatchObject({ status: 401, retryable: false });
    expect(err.message).toContain('Microsoft Entra ID refused the token request: AADSTS7000215');
    expect(err.message).not.toContain(SECRET);
  });

  it('a failing token service is retryable', async () => {
    next = { status: 503, body: { error: 'temporarily_unavailable' } };
    const err = await new EntraTokenSource(auth()).get(signal).catch((e) => e);
    expect(err).toMatchObject({ status: 502, retryable: true });
  });
});
