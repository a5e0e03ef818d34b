/**
 * The media service's authentication modes (keys against a real gateway's database, a static
 * token, none) and its concurrency limit with a queue (429 queue_full with Retry-After, a queued
 * client that goes away leaving the queue).
 */

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMediaConfig } from '../src/media/config.js';
import { openKeyAuthenticator } from '../src/media/key-authenticator.js';
import { type MediaAppOptions, type MediaHandle, startMedia } from '../src/media/server.js';
import type { GeneratedOutput, GenerateRequest, MediaGenerator } from '../src/media/types.js';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const fixed: MediaGenerator = {
  async generate(): Promise<GeneratedOutput[]> {
    return [{ data: PNG, contentType: 'image/png', extension: 'png' }];
  },
};

let dir: string;
const handles: MediaHandle[] = [];

async function start(env: Record<string, string>, opts: Omit<MediaAppOptions, 'config'> = {}) {
  const config = loadMediaConfig({
    MEDIA_PORT: '0',
    MEDIA_HOST: '127.0.0.1',
    GATEHOUSE_MEDIA_STORE_DIR: join(dir, 'objects'),
    ...env,
  });
  const handle = await startMedia(config, { log: false, generator: fixed, ...opts });
  handles.push(handle);
  return handle;
}

async function post(base: string, auth?: string, signal?: AbortSignal) {
  const res = await fetch(`${base}/api/t2i/model-a`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
    body: JSON.stringify({ prompt: 'a lighthouse' }),
    ...(signal ? { signal } : {}),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'media-auth-'));
});
afterAll(async () => {
  for (const h of handles) await h.close();
  await rm(dir, { recursive: true, force: true });
});

describe('media auth: keys (the gateway database)', () => {
  let gw: TestGateway;
  let closeKeys: (() => Promise<void>) | undefined;
  const dbUrl = () => `sqlite:${join(dir, 'gateway', 'gatehouse.db')}`;

  beforeAll(async () => {
    gw = await startTestGateway('sqlite', { env: { DATABASE_URL: dbUrl(), GATEHOUSE_CREDITS: 'enforce' } });
  });
  afterAll(async () => {
    await closeKeys?.();
    await gw?.stop();
  });

  async function checkKeys(media: MediaHandle) {
    const ok = await post(media.url, `Bearer ${gw.apiKey}`);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    // Outputs stay public.
    expect((await fetch(ok.body.data.outputs[0].url)).status).toBe(200);

    const unknown = await post(media.url, `Bearer sk-gh-v1-${'0'.repeat(64)}`);
    expect(unknown.status).toBe(401);
    expect(unknown.body).toEqual({
      success: false,
      message: expect.any(String),
      error: { code: 'unauthorized' },
    });
    const management = await post(media.url, `Bearer ${gw.managementKey}`);
    expect(management.status).toBe(403);
    expect(management.body.error).toEqual({ code: 'forbidden' });
    expect((await post(media.url)).status).toBe(401);
    expect((await post(media.url, `Basic ${gw.apiKey}`)).status).toBe(401);
    // Unknown models are behind authentication too (no probing without a key).
    const res = await fetch(`${media.url}/api/t2i/nope`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(401);
    // A percent-encoded path reaches the same route, and the same check.
    const encoded = await fetch(`${media.url}/%61pi/t2i/model-a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'x' }),
    });
    expect(encoded.status).toBe(401);
    for (const path of ['/health', '/api/status', '/openapi.json'])
      expect((await fetch(`${media.url}${path}`)).status, path).toBe(200);
  }

  it('inside serve: the gateway KeysService, keys by default', async () => {
    const media = await start({}, { keys: gw.services.keys });
    await checkKeys(media);
  });

  it('charges a priced route to the key: generation rows, key usage and credits; 402 once the balance cannot pay', async () => {
    const routesFile = join(dir, 'priced-routes.json');
    await writeFile(
      routesFile,
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
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 1,
    });
    const media = await start(
      { GATEHOUSE_MEDIA_CONFIG: routesFile },
      { keys: gw.services.keys, billing: gw.services.mediaBilling },
    );
    expect((await post(media.url, `Bearer ${gw.apiKey}`)).status).toBe(200);
    expect((await post(media.url, `Bearer ${gw.apiKey}`)).status).toBe(200);
    await gw.services.accountant.flush();
    const refused = await post(media.url, `Bearer ${gw.apiKey}`);
    expect(refused.status).toBe(402);
    expect(refused.body.error).toEqual({ code: 'insufficient_credits' });
    const rows = await gw.services.db
      .selectFrom('generations')
      .select(['endpoint', 'model', 'cost_usd', 'key_hash'])
      .where('endpoint', '=', 'media')
      .execute();
    expect(rows).toHaveLength(2);
    expect(rows.every((r) => r.model === 'media/t2i/model-a' && r.cost_usd === 0.4)).toBe(true);
    const key = await client(gw.url, gw.apiKey)('GET', '/key');
    expect(key.body.data.usage).toBeCloseTo(0.8, 6);
    const credits = await client(gw.url, gw.managementKey)('GET', '/credits');
    expect(credits.body.data.total_usage).toBeCloseTo(0.8, 6);
  });

  it("refuses a priced generation past the key's own spending limit (403), as inference does", async () => {
    const routesFile = join(dir, 'priced-routes-2.json');
    await writeFile(
      routesFile,
      JSON.stringify({ routes: [{ kind: 't2i', name: 'model-a', price_usd: 0.4 }] }),
    );
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 10,
    });
    const mgmt = client(gw.url, gw.managementKey);
    const created = await mgmt('POST', '/keys', { name: 'media-limited', limit: 0.5 });
    expect(created.status).toBe(201);
    const key = created.body.key as string;
    const media = await start(
      { GATEHOUSE_MEDIA_CONFIG: routesFile },
      { keys: gw.services.keys, billing: gw.services.mediaBilling },
    );
    expect((await post(media.url, `Bearer ${key}`)).status).toBe(200);
    expect((await post(media.url, `Bearer ${key}`)).status).toBe(200);
    await gw.services.accountant.flush();
    const refused = await post(media.url, `Bearer ${key}`);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toEqual({ code: 'forbidden' });
    expect(refused.body.message).toMatch(/limit/i);
  });

  it('alone: opens the same database (GATEHOUSE_MEDIA_AUTH=keys)', async () => {
    const config = loadMediaConfig({ GATEHOUSE_MEDIA_AUTH: 'keys', DATABASE_URL: dbUrl() });
    expect(config.auth).toBe('keys');
    expect(config.databaseUrl).toBe(dbUrl());
    const opened = await openKeyAuthenticator(config.databaseUrl, config.masterKey);
    closeKeys = opened.close;
    const media = await start({ GATEHOUSE_MEDIA_AUTH: 'keys' }, { keys: opened.keys });
    await checkKeys(media);
  });

  it('alone: a database without the gateway tables is a start-up error', async () => {
    await expect(openKeyAuthenticator(`sqlite:${join(dir, 'empty', 'x.db')}`, null)).rejects.toThrow(
      /no keys/,
    );
  });

  it('GATEHOUSE_MEDIA_AUTH=keys without the gateway keys is a start-up error', async () => {
    await expect(start({ GATEHOUSE_MEDIA_AUTH: 'keys' })).rejects.toThrow(/database/);
  });
});

describe('media auth: token and none', () => {
  const TOKEN = 'media-static-token-0123456789';

  it('token: the right token passes, a wrong or missing one is 401', async () => {
    const media = await start(
      { GATEHOUSE_MEDIA_AUTH: 'token', GATEHOUSE_MEDIA_TOKEN: TOKEN },
      // An explicit mode wins over the keys default.
      { keys: { authenticate: async () => null } },
    );
    expect((await post(media.url, `Bearer ${TOKEN}`)).status).toBe(200);
    expect((await post(media.url, `bearer ${TOKEN}`)).status).toBe(200);
    const wrong = await post(media.url, `Bearer ${TOKEN}x`);
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toEqual({ code: 'unauthorized' });
    expect((await post(media.url)).status).toBe(401);
    expect((await fetch(`${media.url}/health`)).status).toBe(200);
  });

  it('keys: the shared database away while a key is checked is a 503 to retry, not a 500', async () => {
    const away = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const media = await start(
      { GATEHOUSE_MEDIA_AUTH: 'keys' },
      {
        keys: {
          authenticate: async () => {
            throw away;
          },
        },
      },
    );
    const res = await post(media.url, 'Bearer sk-gh-v1-whatever');
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ success: false, error: { code: 'database_unavailable' } });
    expect(JSON.stringify(res.body)).not.toContain('5432');
  });

  it('token mode needs a token of 16+ characters; unknown modes are refused', () => {
    expect(() => loadMediaConfig({ GATEHOUSE_MEDIA_AUTH: 'token' })).toThrow(/GATEHOUSE_MEDIA_TOKEN/);
    expect(() => loadMediaConfig({ GATEHOUSE_MEDIA_AUTH: 'token', GATEHOUSE_MEDIA_TOKEN: 'short' })).toThrow(
      /16/,
    );
    expect(() => loadMediaConfig({ GATEHOUSE_MEDIA_AUTH: 'basic' })).toThrow(/keys, token, none/);
    expect(loadMediaConfig({}).auth).toBeNull();
  });

  it('none: open (explicitly, or by default without the gateway keys)', async () => {
    const open = await start({ GATEHOUSE_MEDIA_AUTH: 'none' }, { keys: { authenticate: async () => null } });
    expect((await post(open.url)).status).toBe(200);
    const byDefault = await start({});
    expect((await post(byDefault.url, 'Bearer anything')).status).toBe(200);
  });
});

/** A generator that blocks until released. */
class Gate implements MediaGenerator {
  started: GenerateRequest[] = [];
  private waiting: (() => void)[] = [];
  generate(req: GenerateRequest, signal: AbortSignal): Promise<GeneratedOutput[]> {
    this.started.push(req);
    return new Promise((resolve, reject) => {
      this.waiting.push(() => resolve([{ data: PNG, contentType: 'image/png', extension: 'png' }]));
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
  }
  releaseOne() {
    this.waiting.shift()?.();
  }
}

async function until(fn: () => Promise<boolean>, ms = 5000) {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}

const status = async (base: string) => (await (await fetch(`${base}/api/status`)).json()) as any;

describe('media queue', () => {
  it('concurrency 1, queue 1: the third request is a 429 queue_full with Retry-After', async () => {
    const gate = new Gate();
    const media = await start(
      { GATEHOUSE_MEDIA_CONCURRENCY: '1', GATEHOUSE_MEDIA_QUEUE: '1' },
      { generator: gate },
    );
    expect(await status(media.url)).toMatchObject({ running: 0, queued: 0 });
    const first = post(media.url);
    await until(async () => gate.started.length === 1);
    const second = post(media.url);
    await until(async () => (await status(media.url)).queued === 1);
    expect(await status(media.url)).toMatchObject({ running: 1, queued: 1 });

    const third = await post(media.url);
    expect(third.status).toBe(429);
    expect(third.body).toEqual({
      success: false,
      message: expect.any(String),
      error: { code: 'queue_full' },
    });
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

    gate.releaseOne();
    expect((await first).status).toBe(200);
    await until(async () => gate.started.length === 2);
    expect(await status(media.url)).toMatchObject({ running: 1, queued: 0 });
    gate.releaseOne();
    expect((await second).status).toBe(200);
    expect(await status(media.url)).toMatchObject({ running: 0, queued: 0, generations: 2 });
  });

  it('a queued client that disconnects leaves the queue and never runs', async () => {
    const gate = new Gate();
    const media = await start(
      { GATEHOUSE_MEDIA_CONCURRENCY: '1', GATEHOUSE_MEDIA_QUEUE: '1' },
      { generator: gate },
    );
    const first = post(media.url);
    await until(async () => gate.started.length === 1);
    const abort = new AbortController();
    const gone = post(media.url, undefined, abort.signal).catch((err: Error) => err);
    await until(async () => (await status(media.url)).queued === 1);
    abort.abort();
    expect(await gone).toBeInstanceOf(Error);
    await until(async () => (await status(media.url)).queued === 0);

    // Its place is free: the next request queues instead of a 429.
    const next = post(media.url);
    await until(async () => (await status(media.url)).queued === 1);
    gate.releaseOne();
    expect((await first).status).toBe(200);
    await until(async () => gate.started.length === 2);
    gate.releaseOne();
    expect((await next).status).toBe(200);
    // The disconnected request never reached the generator.
    expect(gate.started).toHaveLength(2);
  });

  it('defaults: 2 at once, 16 waiting', () => {
    const c = loadMediaConfig({});
    expect([c.concurrency, c.queue]).toEqual([2, 16]);
    expect(() => loadMediaConfig({ GATEHOUSE_MEDIA_CONCURRENCY: '0' })).toThrow(/≥ 1/);
  });
});
