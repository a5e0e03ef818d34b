/**
 * Priced media generations reserve their price against the key's limit while they run: ten at
 * once against a limit worth two and a half stop at two, not ten.
 */

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMediaConfig } from '../src/media/config.js';
import { type MediaHandle, startMedia } from '../src/media/server.js';
import type { GeneratedOutput, GenerateRequest, MediaGenerator } from '../src/media/types.js';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

/** A generator that answers after a pause, so that the generations overlap. */
const slow: MediaGenerator = {
  async generate(_req: GenerateRequest): Promise<GeneratedOutput[]> {
    await new Promise((r) => setTimeout(r, 300));
    return [{ data: PNG, contentType: 'image/png', extension: 'png' }];
  },
};

describe('media generations reserve their price', () => {
  let dir: string;
  let gw: TestGateway;
  let media: MediaHandle;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'media-spend-'));
    gw = await startTestGateway('sqlite', {
      env: { GATEHOUSE_CREDITS: 'enforce', GATEHOUSE_RATE_LIMIT_REQUESTS: '1000' },
    });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
    const routes = join(dir, 'routes.json');
    await writeFile(
      routes,
      JSON.stringify({
        routes: [
          {
            kind: 't2i',
            name: 'model-a',
            price_usd: 0.4,
            params: { output_format: { type: 'string', enum: ['png'] } },
          },
        ],
      }),
    );
    const config = loadMediaConfig({
      MEDIA_PORT: '0',
      MEDIA_HOST: '127.0.0.1',
      GATEHOUSE_MEDIA_STORE_DIR: join(dir, 'objects'),
      GATEHOUSE_MEDIA_CONFIG: routes,
      GATEHOUSE_MEDIA_CONCURRENCY: '10',
      GATEHOUSE_MEDIA_QUEUE: '10',
    });
    media = await startMedia(config, {
      log: false,
      generator: slow,
      keys: gw.services.keys,
      billing: gw.services.mediaBilling,
    });
  });
  afterAll(async () => {
    await media?.close();
    await gw?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('ten generations at once against a $1 key limit: spend ≤ limit + one price, the rest 403', async () => {
    const key = await client(gw.url, gw.managementKey)('POST', '/keys', { name: 'media limited', limit: 1 });
    const results = await Promise.all(
      Array.from({ length: 10 }, async () => {
        const res = await fetch(`${media.url}/api/t2i/model-a`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key.body.key}` },
          body: JSON.stringify({ prompt: 'a lighthouse' }),
        });
        return { status: res.status, body: (await res.json()) as any };
      }),
    );
    await gw.services.accountant.flush();
    const row = await gw.services.db
      .selectFrom('usage_events')
      .select(sql<number>`coalesce(sum(cost_usd), 0)`.as('spent'))
      .where('key_hash', '=', key.body.data.hash)
      .executeTakeFirstOrThrow();
    const spent = Number(row.spent);
    expect(spent, `media spend against a $1 limit: $${spent}`).toBeLessThanOrEqual(1.4 + 1e-9);
    expect(results.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(2);
    for (const r of results.filter((x) => x.status !== 200)) {
      expect(r.status).toBe(403);
      expect(r.body.error.code).toBe('forbidden');
      expect(r.body.message).toMatch(/API key limit reached/);
    }
  });
});
