/**
 * Hostile authentication: floods of bogus bearer tokens (long and distinct) must not grow what the
 * services keep in memory, and credential headers past 1 KB are refused before any lookup — on the
 * gateway and on the media service (which authenticates with the gateway's keys).
 */

import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMediaConfig } from '../../src/media/config.js';
import { type MediaHandle, startMedia } from '../../src/media/server.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';

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
