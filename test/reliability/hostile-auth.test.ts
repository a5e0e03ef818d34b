/**
 * Hostile authentication: floods of bogus bearer tokens (long and distinct) must not grow what the
 * services keep in memory, and credential headers past 1 KB are refused before any lookup — on the
 * gateway and on the media service (which authenticates with the gateway's keys). Guessing the
 * operator token is throttled per client address.
 */

import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMediaConfig } from '../../src/media/config.js';
import { type MediaHandle, startMedia } from '../../src/media/server.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../support/gateway.js';

const bogus = (bytes: number) => `sk-gh-v1-${randomBytes(Math.ceil(bytes / 2)).toString('hex')}`;

describe('hostile authentication', () => {
  let gw: TestGateway;
  let media: MediaHandle;

  beforeAll(async () => {
    gw = await startTestGateway('sqlite', { env: { GATEHOUSE_WORKER: 'off' } });
    media = await startMedia(
      loadMediaConfig({
        MEDIA_PORT: '0',
        MEDIA_HOST: '127.0.0.1',
        GATEHOUSE_DATA_DIR: gw.services.config.dataDir,
      }),
      {
        log: false,
        keys: gw.services.keys,
      },
    );
  });

  afterAll(async () => {
    await media?.close();
    await gw?.stop();
  });

  it('refuses credential headers over 1 KB with a 401 before looking them up (gateway and media)', async () => {
    const before = gw.services.keys.cachedHashes().length;
    for (const [name, value] of [
      ['authorization', `Bearer ${bogus(15_000)}`],
      ['x-api-key', bogus(2_000)],
    ] as const) {
      const res = await fetch(`${gw.url}/api/v1/key`, { headers: { [name]: value } });
      expect(res.status, name).toBe(401);
      expect(((await res.json()) as any).error).toMatchObject({ code: 401, message: expect.any(String) });
    }
    const m = await fetch(`${media.url}/api/t2i/model-a`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bogus(15_000)}`, 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'x' }),
    });
    expect(m.status).toBe(401);
    expect(await m.json()).toMatchObject({ success: false, error: { code: 'unauthorized' } });
    // Nothing was hashed into the key cache for them.
    expect(gw.services.keys.cachedHashes().length).toBe(before);
  });

  it('keeps only hashes, never tokens, after many distinct bogus tokens', async () => {
    const tokens = Array.from({ length: 300 }, () => bogus(900));
    for (let i = 0; i < tokens.length; i += 30)
      await Promise.all(
        tokens.slice(i, i + 30).map(async (t) => {
          const res = await fetch(`${gw.url}/api/v1/key`, { headers: { authorization: `Bearer ${t}` } });
          await res.arrayBuffer();
          expect(res.status).toBe(401);
        }),
      );
    const cached = gw.services.keys.cachedHashes();
    for (const k of cached) expect(k).toMatch(/^[0-9a-f]{64}$/);
    const held = cached.join('\n');
    expect(tokens.filter((t) => held.includes(t.slice(9, 41)))).toEqual([]);
  });
});

/** GET an operator route from a given local address (127.0.0.x all reach a loopback listener). */
function adminGet(base: string, token: string, from = '127.0.0.1') {
  return new Promise<{ status: number; retryAfter?: string; body: any }>((resolve, reject) => {
    const req = request(
      `${base}/api/v1/admin/organizations`,
      { localAddress: from, headers: { authorization: `Bearer ${token}` } },
      (res) => {
        let text = '';
        res.on('data', (c) => {
          text += c;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            retryAfter: res.headers['retry-after'] as string | undefined,
            body: JSON.parse(text),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('operator token guessing', () => {
  let gw: TestGateway;
  const lines: string[] = [];

  beforeAll(async () => {
    const logStream = new Writable({
      write(chunk, _enc, done) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    gw = await startTestGateway('sqlite', {
      env: { GATEHOUSE_WORKER: 'off', GATEHOUSE_ADMIN_AUTH_FAILURES: '10' },
      logStream,
    });
  });
  afterAll(() => gw?.stop());

  it('throttles an address after 10 wrong tokens with 429 + Retry-After, logging each failure without the token', async () => {
    const guesses = Array.from({ length: 1000 }, () => `guess-${randomBytes(16).toString('hex')}`);
    const statuses: number[] = [];
    let retryAfter: string | undefined;
    for (const g of guesses) {
      const res = await adminGet(gw.url, g);
      statuses.push(res.status);
      if (res.status === 429) {
        retryAfter = res.retryAfter;
        expect(res.body.error).toMatchObject({
          code: 429,
          message: expect.stringMatching(/failed operator/),
        });
      }
    }
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(401));
    expect(new Set(statuses.slice(10))).toEqual(new Set([429]));
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(retryAfter)).toBeLessThanOrEqual(60);

    // The right token does not get through from that address either while it is throttled…
    expect((await adminGet(gw.url, ADMIN_TOKEN)).status).toBe(429);
    // …but another address is not affected.
    expect((await adminGet(gw.url, ADMIN_TOKEN, '127.0.0.2')).status).toBe(200);

    const failures = lines
      .filter((l) => l.includes('operator authentication failed'))
      .map((l) => JSON.parse(l));
    expect(failures).toHaveLength(10);
    expect(failures[0]).toMatchObject({ level: 40, ip: '127.0.0.1', route: '/api/v1/admin/organizations' });
    const logged = lines.join('\n');
    expect(guesses.filter((g) => logged.includes(g))).toEqual([]);
    expect(logged).not.toContain(ADMIN_TOKEN);
  });
});
