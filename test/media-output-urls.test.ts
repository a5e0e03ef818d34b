/**
 * Provider output URLs go through the media service's SSRF guard: a provider answering with a URL on
 * another origin that points at the operator's network (loopback here) gets a clear 502 and the
 * internal server is never contacted; GATEHOUSE_MEDIA_FETCH_PRIVATE=on lets it through.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMediaConfig } from '../src/media/config.js';
import { type MediaHandle, startMedia } from '../src/media/server.js';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

const listen = async (server: Server) => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
};

describe('media provider output URLs', () => {
  let internalHits = 0;
  let internalPort = 0;
  let outputUrl = '';
  const internal = createServer((_req, res) => {
    internalHits++;
    res.writeHead(200, { 'content-type': 'image/png' }).end(PNG);
  });
  /** An OpenAI-images provider whose answer points at `outputUrl`. */
  const provider = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ created: 1, data: [{ url: outputUrl }] }));
  });
  let dir: string;
  const handles: MediaHandle[] = [];

  const start = async (env: Record<string, string> = {}) => {
    const handle = await startMedia(
      loadMediaConfig({
        MEDIA_PORT: '0',
        MEDIA_HOST: '127.0.0.1',
        GATEHOUSE_MEDIA_STORE_DIR: join(dir, 'objects'),
        GATEHOUSE_MEDIA_CONFIG: join(dir, 'media.json'),
        ...env,
      }),
      { log: false },
    );
    handles.push(handle);
    return handle;
  };
  const generate = async (media: MediaHandle) => {
    const res = await fetch(`${media.url}/api/t2i/model-a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'a cat' }),
    });
    return { status: res.status, body: (await res.json()) as any };
  };

  beforeAll(async () => {
    internalPort = await listen(internal);
    const providerPort = await listen(provider);
    dir = await mkdtemp(join(tmpdir(), 'media-output-'));
    await writeFile(
      join(dir, 'media.json'),
      JSON.stringify({
        providers: [
          {
            slug: 'openai',
            kind: 'openai-images',
            base_url: `http://127.0.0.1:${providerPort}/v1`,
            api_key: 'sk-output-test-0000',
            max_attempts: 1,
          },
        ],
        routes: [{ kind: 't2i', name: 'model-a', provider: 'openai', provider_model: 'img-1', params: {} }],
      }),
    );
  });
  afterAll(async () => {
    for (const h of handles) await h.close();
    internal.close();
    provider.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('refuses an output URL on a loopback address of another origin, in any notation', async () => {
    const media = await start();
    for (const host of ['127.0.0.1', 'localhost', '[::ffff:127.0.0.1]', '[::7f00:1]']) {
      outputUrl = `http://${host}:${internalPort}/secret.png`;
      const r = await generate(media);
      expect(r.status, `${host}: ${JSON.stringify(r.body)}`).toBe(502);
      expect(r.body.error).toEqual({ code: 'invalid_provider_response' });
      expect(r.body.message).toMatch(/output URL on .*loopback, private or link-local address/);
      expect(r.body.message).not.toContain('sk-output-test');
    }
    expect(internalHits).toBe(0);
  });

  it('fetches it when the operator allows private addresses (GATEHOUSE_MEDIA_FETCH_PRIVATE=on)', async () => {
    const media = await start({ GATEHOUSE_MEDIA_FETCH_PRIVATE: 'on' });
    outputUrl = `http://127.0.0.1:${internalPort}/ok.png`;
    const r = await generate(media);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(internalHits).toBe(1);
  });
});
