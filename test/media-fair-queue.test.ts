/**
 * Fair sharing of the media queue between organizations: one organization filling every slot
 * does not lock the others out (each may hold its share), and freed slots alternate between them.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMediaConfig } from '../src/media/config.js';
import { type MediaHandle, startMedia } from '../src/media/server.js';
import type { GeneratedOutput, GenerateRequest, MediaGenerator } from '../src/media/types.js';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient } from './support/http.js';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

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

async function until(fn: () => Promise<boolean> | boolean, ms = 5000) {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('media queue: fair sharing between organizations', () => {
  let dir: string;
  let gw: TestGateway;
  let media: MediaHandle;
  const gate = new Gate();
  let keyB: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'media-fair-'));
    gw = await startTestGateway('sqlite');
    const admin = adminClient(gw.url);
    const org = await admin('POST', '/admin/organizations', { name: 'tenant B' });
    keyB = (await admin('POST', '/admin/keys', { organization_id: org.body.data.id, name: 'b' })).body.key;
    const config = loadMediaConfig({
      MEDIA_PORT: '0',
      MEDIA_HOST: '127.0.0.1',
      GATEHOUSE_MEDIA_STORE_DIR: join(dir, 'objects'),
      GATEHOUSE_MEDIA_CONCURRENCY: '1',
      GATEHOUSE_MEDIA_QUEUE: '3',
    });
    media = await startMedia(config, { log: false, generator: gate, keys: gw.services.keys });
  });
  afterAll(async () => {
    await media?.close();
    await gw?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const post = async (key: string, prompt: string) => {
    const res = await fetch(`${media.url}/api/t2i/model-a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ prompt }),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const status = async () => (await (await fetch(`${media.url}/api/status`)).json()) as any;

  it('tenant A fills the queue; A is refused 429 queue_full, tenant B is accepted and served next', async () => {
    const a = [post(gw.apiKey, 'a1')];
    await until(() => gate.started.length === 1);
    a.push(post(gw.apiKey, 'a2'), post(gw.apiKey, 'a3'), post(gw.apiKey, 'a4'));
    await until(async () => (await status()).queued === 3);

    const refused = await post(gw.apiKey, 'a5');
    expect(refused.status).toBe(429);
    expect(refused.body.error).toEqual({ code: 'queue_full' });

    const b = post(keyB, 'b1');
    await until(async () => (await status()).queued === 4);
    gate.releaseOne();
    await until(() => gate.started.length === 2);
    expect(gate.started[1]?.prompt).toBe('b1');

    for (let i = 0; i < 4; i++) {
      gate.releaseOne();
      if (i < 3) await until(() => gate.started.length === 3 + i);
    }
    expect((await b).status).toBe(200);
    for (const r of await Promise.all(a)) expect(r.status).toBe(200);
    expect(gate.started.map((r) => r.prompt)).toEqual(['a1', 'b1', 'a2', 'a3', 'a4']);
  });
});
