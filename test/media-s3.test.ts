/**
 * The S3-compatible object store against a real S3-protocol server (s3rver on a loopback port,
 * a temp directory): outputs land in the bucket with their content type and Cache-Control, and
 * come back as public URLs or as presigned GET URLs that fetch the image.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMediaConfig } from '../src/media/config.js';
import { type MediaHandle, startMedia } from '../src/media/server.js';
import { CACHE_CONTROL, S3Store } from '../src/media/storage/s3.js';
import type { GeneratedOutput, MediaGenerator } from '../src/media/types.js';

interface S3rverInstance {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}
type S3rverCtor = new (opts: Record<string, unknown>) => S3rverInstance;
const S3rver = createRequire(import.meta.url)('s3rver') as S3rverCtor;

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
let s3: S3rverInstance;
let endpoint: string;
const handles: MediaHandle[] = [];
const s3env = () => ({
  MEDIA_PORT: '0',
  MEDIA_HOST: '127.0.0.1',
  GATEHOUSE_MEDIA_STORE_DIR: join(dir, 'objects'),
  GATEHOUSE_MEDIA_STORE: 's3',
  GATEHOUSE_MEDIA_S3_ENDPOINT: endpoint,
  GATEHOUSE_MEDIA_S3_BUCKET: 'media',
  GATEHOUSE_MEDIA_S3_ACCESS_KEY_ID: 'S3RVER',
  GATEHOUSE_MEDIA_S3_SECRET_ACCESS_KEY: 'S3RVER',
});

const client = () =>
  new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });

/** An S3Store on the test bucket, used directly. */
const directStore = () =>
  new S3Store({
    endpoint,
    bucket: 'media',
    region: 'us-east-1',
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    publicUrl: null,
    urlTtlS: 60,
  });

async function start(env: Record<string, string>) {
  const handle = await startMedia(loadMediaConfig({ ...s3env(), ...env }), { log: false, generator: fixed });
  handles.push(handle);
  return handle;
}

async function generate(base: string) {
  const res = await fetch(`${base}/api/t2i/model-a`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'a red fox' }),
  });
  const body = (await res.json()) as any;
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body.data.outputs[0] as { url: string; key: string };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'media-s3-'));
  s3 = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory: join(dir, 's3'),
    configureBuckets: [{ name: 'media' }],
  });
  const addr = await s3.run();
  endpoint = `http://127.0.0.1:${addr.port}`;
});

afterAll(async () => {
  for (const h of handles) await h.close();
  await s3?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('media S3 store', () => {
  it('stores a generation in the bucket with its content type and caching header', async () => {
    const media = await start({ GATEHOUSE_MEDIA_S3_PUBLIC_URL: 'https://cdn.example.test/media/' });
    const out = await generate(media.url);
    expect(out.key).toMatch(/^t2i\/\d{4}\/\d{2}\/\d{2}\/[0-9a-f-]{36}\.png$/);
    const c = client();
    const obj = await c.send(new GetObjectCommand({ Bucket: 'media', Key: out.key }));
    expect(obj.ContentType).toBe('image/png');
    expect(obj.CacheControl).toBe(CACHE_CONTROL);
    expect(Buffer.from(await (obj.Body as any).transformToByteArray())).toEqual(PNG);
    c.destroy();
  });

  it('answers <public url>/<key> when a public base URL is configured', async () => {
    const media = await start({ GATEHOUSE_MEDIA_S3_PUBLIC_URL: 'https://cdn.example.test/media/' });
    const out = await generate(media.url);
    expect(out.url).toBe(`https://cdn.example.test/media/${out.key}`);
    // No /files route: the filesystem store is not in use.
    expect((await fetch(`${media.url}/files/${out.key}`)).status).toBe(404);
  });

  it('answers a presigned GET URL that fetches the image', async () => {
    const media = await start({ GATEHOUSE_MEDIA_S3_URL_TTL_S: '600' });
    const out = await generate(media.url);
    const url = new URL(out.url);
    expect(url.origin).toBe(endpoint);
    expect(url.pathname).toBe(`/media/${out.key}`);
    expect(url.searchParams.get('X-Amz-Expires')).toBe('600');
    expect(url.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
    const res = await fetch(out.url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await res.arrayBuffer())).toEqual(PNG);
    // (s3rver does not verify presigned signatures, so a tampered one is not tested here.)
  });

  it('surfaces a store failure (missing bucket) as a 500 without leaking credentials', async () => {
    const media = await start({ GATEHOUSE_MEDIA_S3_BUCKET: 'no-such-bucket' });
    const res = await fetch(`${media.url}/api/t2i/model-a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'x' }),
    });
    const text = await res.text();
    expect(res.status).toBe(500);
    expect(text).not.toContain('S3RVER');
  });

  it('S3Store refuses invalid keys', async () => {
    const store = directStore();
    await expect(store.put('../x.png', PNG, 'image/png')).rejects.toThrow(/Invalid object key/);
    store.destroy();
  });

  it('S3Store.open reads a stored object back (a video job’s content); a missing one is null', async () => {
    const store = directStore();
    const { key } = await store.put(
      'video/2026/11/29/00000000-0000-4000-8000-000000000000.webp',
      PNG,
      'image/webp',
    );
    const file = await store.open(key);
    expect(file).toMatchObject({ contentType: 'image/webp', size: PNG.length });
    const chunks: Buffer[] = [];
    for await (const chunk of file?.stream ?? []) chunks.push(Buffer.from(chunk));
    expect(Buffer.concat(chunks)).toEqual(PNG);
    expect(await store.open('video/2026/11/29/11111111-1111-4111-8111-111111111111.webp')).toBeNull();
    expect(await store.open('../x.png')).toBeNull();
    store.destroy();
  });
});

describe('media S3 configuration', () => {
  const base = { GATEHOUSE_MEDIA_STORE: 's3' };
  it('needs a bucket', () => {
    expect(() => loadMediaConfig(base)).toThrow(/GATEHOUSE_MEDIA_S3_BUCKET/);
  });
  it('defaults: region us-east-1, presigned URLs for an hour, the SDK credential chain', () => {
    const c = loadMediaConfig({ ...base, GATEHOUSE_MEDIA_S3_BUCKET: 'b' });
    expect(c.store).toBe('s3');
    expect(c.s3).toEqual({
      endpoint: null,
      bucket: 'b',
      region: 'us-east-1',
      credentials: null,
      publicUrl: null,
      urlTtlS: 3600,
    });
    expect(loadMediaConfig({}).store).toBe('filesystem');
  });
  it('refuses half credentials, a bad store, a bad endpoint and a TTL over 7 days', () => {
    const b = { ...base, GATEHOUSE_MEDIA_S3_BUCKET: 'b' };
    expect(() => loadMediaConfig({ ...b, GATEHOUSE_MEDIA_S3_ACCESS_KEY_ID: 'k' })).toThrow(/both/);
    expect(() => loadMediaConfig({ GATEHOUSE_MEDIA_STORE: 'ftp' })).toThrow(/filesystem or s3/);
    expect(() => loadMediaConfig({ ...b, GATEHOUSE_MEDIA_S3_ENDPOINT: 'minio:9000' })).toThrow(/http/);
    expect(() => loadMediaConfig({ ...b, GATEHOUSE_MEDIA_S3_URL_TTL_S: '700000' })).toThrow(/604800/);
  });
});
