import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMediaConfig } from '../src/media/config.js';
import { type MediaHandle, startMedia } from '../src/media/server.js';
import {
  type GeneratedOutput,
  type GenerateRequest,
  MediaError,
  type MediaGenerator,
} from '../src/media/types.js';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(64, 1)]);

interface Seen {
  req: GenerateRequest;
  images: { param: string; contentType: string; bytes: number; existed: boolean; path: string }[];
}

/** Records what it was asked and answers a tiny real PNG (or a stand-in MP4 for video). */
class FakeGenerator implements MediaGenerator {
  seen: Seen[] = [];
  async generate(req: GenerateRequest): Promise<GeneratedOutput[]> {
    this.seen.push({
      req,
      images: req.images.map((i) => ({
        param: i.param,
        contentType: i.contentType,
        bytes: i.bytes,
        existed: existsSync(i.path),
        path: i.path,
      })),
    });
    if (req.kind === 'video')
      return [{ data: Buffer.from('not really an mp4'), contentType: 'video/mp4', extension: 'mp4' }];
    return [{ data: PNG, contentType: 'image/png', extension: 'png' }];
  }
  get last(): Seen {
    return this.seen[this.seen.length - 1] as Seen;
  }
}

const dirs: string[] = [];
const handles: MediaHandle[] = [];

async function start(env: Record<string, string> = {}, generator?: MediaGenerator) {
  const dir = await mkdtemp(join(tmpdir(), 'media-test-'));
  dirs.push(dir);
  const config = loadMediaConfig({
    MEDIA_PORT: '0',
    MEDIA_HOST: '127.0.0.1',
    GATEHOUSE_MEDIA_STORE_DIR: join(dir, 'objects'),
    ...env,
  });
  const handle = await startMedia(config, { log: false, ...(generator ? { generator } : {}) });
  handles.push(handle);
  return { ...handle, dir };
}

/** A local HTTP server handing out images (and a few things that are not). */
let images: Server;
let imagesUrl: string;
let media: Awaited<ReturnType<typeof start>>;
const fake = new FakeGenerator();

beforeAll(async () => {
  images = createServer((req, res) => {
    if (req.url === '/a.png') return res.writeHead(200, { 'content-type': 'image/png' }).end(PNG);
    if (req.url === '/b.jpg') return res.writeHead(200, { 'content-type': 'image/jpeg' }).end(JPEG);
    if (req.url === '/text')
      return res.writeHead(200, { 'content-type': 'image/png' }).end('hello, not an image');
    if (req.url === '/big') {
      // No content-length: the limit must hold while streaming.
      res.writeHead(200, { 'content-type': 'image/png' });
      res.write(PNG);
      res.end(Buffer.alloc(64 * 1024));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => images.listen(0, '127.0.0.1', r));
  imagesUrl = `http://127.0.0.1:${(images.address() as AddressInfo).port}`;
  media = await start(
    { GATEHOUSE_MEDIA_FETCH_PRIVATE: 'on', GATEHOUSE_MEDIA_MAX_UPLOAD_BYTES: '32768' },
    fake,
  );
});

afterAll(async () => {
  for (const h of handles) await h.close();
  await new Promise((r) => images.close(r));
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function postJson(base: string, path: string, body: unknown) {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any, headers: res.headers };
}

async function postForm(base: string, path: string, fields: [string, string | Blob][]) {
  const form = new FormData();
  for (const [k, v] of fields) {
    if (typeof v === 'string') form.append(k, v);
    else form.append(k, v, 'upload.bin');
  }
  const res = await fetch(`${base}${path}`, { method: 'POST', body: form });
  return { status: res.status, body: (await res.json()) as any };
}

function rawGet(base: string, path: string): Promise<number> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, path, method: 'GET' }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

const KEY = (kind: string, ext: string) =>
  new RegExp(`^${kind}/\\d{4}/\\d{2}/\\d{2}/[0-9a-f-]{36}\\.${ext}$`);

describe('generation routes', () => {
  it('t2i/model-a (JSON): defaults applied, output stored and served back with caching headers', async () => {
    const r = await postJson(media.url, '/api/t2i/model-a', { prompt: 'a red fox' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: true, message: 'Generated 1 image', data: { model: 'model-a' } });
    expect(fake.last.req).toMatchObject({
      kind: 't2i',
      route: 'model-a',
      providerModel: 'model-a',
      prompt: 'a red fox',
      params: { output_format: 'png' },
      images: [],
    });
    const [out] = r.body.data.outputs;
    expect(out.key).toMatch(KEY('t2i', 'png'));
    const port = new URL(media.url).port;
    expect(out.url).toBe(`http://localhost:${port}/files/${out.key}`);

    const file = await fetch(`${media.url}/files/${out.key}`);
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('image/png');
    expect(file.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(file.headers.get('content-length')).toBe(String(PNG.length));
    const etag = file.headers.get('etag');
    expect(etag).toBeTruthy();
    expect(Buffer.from(await file.arrayBuffer()).equals(PNG)).toBe(true);
    expect((await readFile(join(media.dir, 'objects', out.key))).equals(PNG)).toBe(true);

    const again = await fetch(`${media.url}/files/${out.key}`, {
      headers: { 'if-none-match': etag as string },
    });
    expect(again.status).toBe(304);
  });

  it('t2i/model-a (multipart)', async () => {
    const r = await postForm(media.url, '/api/t2i/model-a', [
      ['prompt', 'a blue fox'],
      ['output_format', 'webp'],
    ]);
    expect(r.status).toBe(200);
    expect(fake.last.req.params).toEqual({ output_format: 'webp' });
    expect(fake.last.req.prompt).toBe('a blue fox');
  });

  it('t2i/model-b (JSON and multipart)', async () => {
    const j = await postJson(media.url, '/api/t2i/model-b', {
      prompt: 'p',
      size: '2K',
      aspect_ratio: '16:9',
    });
    expect(j.status).toBe(200);
    expect(fake.last.req.params).toEqual({ size: '2K', aspect_ratio: '16:9' });
    const f = await postForm(media.url, '/api/t2i/model-b', [
      ['prompt', 'p'],
      ['aspect_ratio', '9:16'],
    ]);
    expect(f.status).toBe(200);
    expect(fake.last.req.params).toEqual({ size: '1K', aspect_ratio: '9:16' });
  });

  it('i2i/model-b (JSON): image_input URLs are fetched to temp files, removed afterwards', async () => {
    const r = await postJson(media.url, '/api/i2i/model-b', {
      prompt: 'make it blue',
      image_input: [`${imagesUrl}/a.png`, `${imagesUrl}/b.jpg`],
      size: '2K',
    });
    expect(r.status).toBe(200);
    expect(r.body.data.model).toBe('model-b');
    expect(r.body.data.outputs[0].key).toMatch(KEY('i2i', 'png'));
    const seen = fake.last;
    expect(seen.images.map((i) => [i.param, i.contentType, i.bytes, i.existed])).toEqual([
      ['image_input', 'image/png', PNG.length, true],
      ['image_input', 'image/jpeg', JPEG.length, true],
    ]);
    expect(seen.req.params).toMatchObject({ size: '2K' });
    for (const i of seen.images) expect(existsSync(i.path)).toBe(false);
  });

  it('i2i/model-b (multipart): the image file part is streamed to a temp file, removed afterwards', async () => {
    const r = await postForm(media.url, '/api/i2i/model-b', [
      ['prompt', 'make it blue'],
      ['image', new Blob([PNG], { type: 'image/png' })],
    ]);
    expect(r.status).toBe(200);
    const seen = fake.last;
    expect(seen.images).toHaveLength(1);
    expect(seen.images[0]).toMatchObject({
      param: 'image',
      contentType: 'image/png',
      bytes: PNG.length,
      existed: true,
    });
    expect(existsSync(seen.images[0]!.path)).toBe(false);
    expect(seen.req.params).toEqual({ size: '1K' });
  });

  it('i2i/model-a (JSON, and multipart with repeated fields or a JSON array)', async () => {
    const urls = [`${imagesUrl}/a.png`, `${imagesUrl}/b.jpg`, `${imagesUrl}/a.png`];
    const j = await postJson(media.url, '/api/i2i/model-a', { prompt: 'merge', image_input: urls });
    expect(j.status).toBe(200);
    expect(fake.last.images.map((i) => i.contentType)).toEqual(['image/png', 'image/jpeg', 'image/png']);

    const rep = await postForm(media.url, '/api/i2i/model-a', [
      ['prompt', 'merge'],
      ['image_input', urls[0]!],
      ['image_input', urls[1]!],
    ]);
    expect(rep.status).toBe(200);
    expect(fake.last.req.params.image_input).toEqual(urls.slice(0, 2));

    const arr = await postForm(media.url, '/api/i2i/model-a', [
      ['prompt', 'merge'],
      ['image_input', JSON.stringify(urls)],
    ]);
    expect(arr.status).toBe(200);
    expect(fake.last.images).toHaveLength(3);
  });

  it('video/video-model (JSON)', async () => {
    const r = await postJson(media.url, '/api/video/video-model', {
      prompt: 'waves',
      duration: 5,
      resolution: '720p',
      camera_fixed: true,
      image: `${imagesUrl}/a.png`,
      reference_images: [`${imagesUrl}/b.jpg`],
    });
    expect(r.status).toBe(200);
    expect(r.body.message).toBe('Generated 1 video');
    expect(r.body.data.outputs[0].key).toMatch(KEY('video', 'mp4'));
    expect(fake.last.req.params).toMatchObject({ duration: 5, resolution: '720p', camera_fixed: true });
    expect(fake.last.images.map((i) => i.param)).toEqual(['image', 'reference_images']);
    const file = await fetch(r.body.data.outputs[0].url.replace(/^http:\/\/localhost/, 'http://127.0.0.1'));
    expect(file.headers.get('content-type')).toBe('video/mp4');
  });

  it('video/video-model (multipart: strings parsed, image file)', async () => {
    const r = await postForm(media.url, '/api/video/video-model', [
      ['prompt', 'waves'],
      ['duration', '4'],
      ['camera_fixed', 'true'],
      ['image', new Blob([JPEG], { type: 'image/jpeg' })],
    ]);
    expect(r.status).toBe(200);
    expect(fake.last.req.params).toEqual({
      duration: 4,
      resolution: '480p',
      camera_fixed: true,
      output_format: 'webp',
    });
    expect(fake.last.images).toMatchObject([{ param: 'image', contentType: 'image/jpeg' }]);
  });
});

describe('validation errors name the field', () => {
  const long = 'x'.repeat(4001);
  const url = 'http://example.com/a.png';
  const rows: [string, unknown, string, string][] = [
    ['/api/t2i/model-a', { prompt: 'x', foo: 1 }, 'unknown_parameter', 'foo'],
    ['/api/t2i/model-a', { prompt: 'x', size: '1K' }, 'unknown_parameter', 'size'],
    ['/api/t2i/model-a', {}, 'missing_parameter', 'prompt'],
    ['/api/t2i/model-a', { prompt: '   ' }, 'missing_parameter', 'prompt'],
    ['/api/t2i/model-a', { prompt: 5 }, 'invalid_type', 'prompt'],
    ['/api/t2i/model-a', { prompt: long }, 'invalid_value', 'prompt'],
    ['/api/t2i/model-a', { prompt: 'x', output_format: 'gif' }, 'invalid_value', 'output_format'],
    ['/api/t2i/model-b', { prompt: 'x', size: '3K' }, 'invalid_value', 'size'],
    ['/api/t2i/model-b', { prompt: 'x', aspect_ratio: '5:4' }, 'invalid_value', 'aspect_ratio'],
    ['/api/t2i/model-b', { prompt: 'x', size: 1 }, 'invalid_type', 'size'],
    ['/api/i2i/model-b', { prompt: 'x' }, 'missing_parameter', 'image_input'],
    [
      '/api/i2i/model-b',
      { prompt: 'x', image_input: [url, url, url, url, url] },
      'invalid_value',
      'image_input',
    ],
    ['/api/i2i/model-a', { prompt: 'x' }, 'missing_parameter', 'image_input'],
    ['/api/i2i/model-a', { prompt: 'x', image_input: url }, 'invalid_type', 'image_input'],
    ['/api/i2i/model-a', { prompt: 'x', image_input: [] }, 'invalid_value', 'image_input'],
    ['/api/i2i/model-a', { prompt: 'x', image_input: Array(9).fill(url) }, 'invalid_value', 'image_input'],
    ['/api/i2i/model-a', { prompt: 'x', image_input: ['ftp://h/a.png'] }, 'invalid_value', 'image_input'],
    ['/api/i2i/model-a', { prompt: 'x', image_input: [url], image: url }, 'unknown_parameter', 'image'],
    ['/api/video/video-model', { prompt: 'x', duration: 7 }, 'invalid_value', 'duration'],
    ['/api/video/video-model', { prompt: 'x', duration: '3' }, 'invalid_type', 'duration'],
    ['/api/video/video-model', { prompt: 'x', resolution: '1080p' }, 'invalid_value', 'resolution'],
    ['/api/video/video-model', { prompt: 'x', camera_fixed: 'yes' }, 'invalid_type', 'camera_fixed'],
    ['/api/video/video-model', { prompt: 'x', image: 'file:///etc/passwd' }, 'invalid_value', 'image'],
    [
      '/api/video/video-model',
      { prompt: 'x', reference_images: Array(5).fill(url) },
      'invalid_value',
      'reference_images',
    ],
  ];
  it.each(rows)('%s %j → %s (%s)', async (path, body, code, field) => {
    const before = fake.seen.length;
    const r = await postJson(media.url, path, body);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, error: { code, field } });
    expect(typeof r.body.message).toBe('string');
    expect(fake.seen.length).toBe(before);
  });

  it('a body that is not a JSON object', async () => {
    const r = await postJson(media.url, '/api/t2i/model-a', ['prompt']);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, error: { code: 'invalid_body' } });
  });

  const formRows: [string, [string, string | Blob][], string, string][] = [
    [
      '/api/t2i/model-a',
      [
        ['prompt', 'x'],
        ['image', new Blob([PNG])],
      ],
      'unknown_parameter',
      'image',
    ],
    [
      '/api/i2i/model-a',
      [
        ['prompt', 'x'],
        ['image_input', new Blob([PNG])],
      ],
      'invalid_type',
      'image_input',
    ],
    [
      '/api/video/video-model',
      [
        ['prompt', 'x'],
        ['duration', 'three'],
      ],
      'invalid_type',
      'duration',
    ],
    [
      '/api/video/video-model',
      [
        ['prompt', 'x'],
        ['camera_fixed', 'maybe'],
      ],
      'invalid_type',
      'camera_fixed',
    ],
    ['/api/i2i/model-b', [['prompt', 'x']], 'missing_parameter', 'image_input'],
    ['/api/t2i/model-a', [['output_format', 'png']], 'missing_parameter', 'prompt'],
    [
      '/api/i2i/model-a',
      [
        ['prompt', 'x'],
        ['image_input', '[not json'],
      ],
      'invalid_type',
      'image_input',
    ],
  ];
  it.each(formRows)('multipart %s → %s (%s)', async (path, fields, code, field) => {
    const r = await postForm(media.url, path, fields);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, error: { code, field } });
  });
});

describe('input images', () => {
  it('an upload that is not an image → invalid_image', async () => {
    const r = await postForm(media.url, '/api/i2i/model-b', [
      ['prompt', 'x'],
      ['image', new Blob(['just some text, not a picture'])],
    ]);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, error: { code: 'invalid_image', field: 'image' } });
  });

  it('an upload over the limit → file_too_large', async () => {
    const big = Buffer.concat([PNG, Buffer.alloc(40 * 1024)]);
    const r = await postForm(media.url, '/api/video/video-model', [
      ['image', new Blob([big])],
      ['prompt', 'x'],
    ]);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ success: false, error: { code: 'file_too_large', field: 'image' } });
    // The service is still fine afterwards.
    expect((await postJson(media.url, '/api/t2i/model-a', { prompt: 'x' })).status).toBe(200);
  });

  it('fetched images: over the limit, not an image, not found, unresolvable', async () => {
    const cases: [string, string][] = [
      [`${imagesUrl}/big`, 'file_too_large'],
      [`${imagesUrl}/text`, 'invalid_image'],
      [`${imagesUrl}/missing.png`, 'image_fetch_failed'],
      ['http://no-such-host.invalid/a.png', 'image_fetch_failed'],
    ];
    for (const [url, code] of cases) {
      const r = await postJson(media.url, '/api/i2i/model-a', { prompt: 'x', image_input: [url] });
      expect(r.status, url).toBe(400);
      expect(r.body, url).toMatchObject({ success: false, error: { code, field: 'image_input' } });
    }
  });

  it('private addresses are refused unless GATEHOUSE_MEDIA_FETCH_PRIVATE is on', async () => {
    const closed = await start({}, new FakeGenerator());
    for (const url of [
      `${imagesUrl}/a.png`,
      'http://localhost:1/a.png',
      'http://[::1]/a.png',
      'http://169.254.169.254/x',
    ]) {
      const r = await postJson(closed.url, '/api/video/video-model', {
        prompt: 'x',
        reference_images: [url],
      });
      expect(r.status, url).toBe(400);
      expect(r.body, url).toMatchObject({ error: { code: 'url_not_allowed', field: 'reference_images' } });
    }
  });
});

describe('service routes and errors', () => {
  it('unknown kind or model → 404 naming model', async () => {
    for (const path of ['/api/t2i/nope', '/api/audio/model-a', '/api/video/model-a']) {
      const r = await postJson(media.url, path, { prompt: 'x' });
      expect(r.status, path).toBe(404);
      expect(r.body).toMatchObject({ success: false, error: { code: 'not_found', field: 'model' } });
    }
  });

  it('wrong content type → 415; body over the limit → 413', async () => {
    const res = await fetch(`${media.url}/api/t2i/model-a`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'prompt=x',
    });
    expect(res.status).toBe(415);
    expect(await res.json()).toMatchObject({ success: false, error: { code: 'unsupported_media_type' } });
    const big = await postJson(media.url, '/api/t2i/model-a', { prompt: 'x'.repeat(1_100_000) });
    expect(big.status).toBe(413);
    expect(big.body).toMatchObject({ success: false, error: { code: 'payload_too_large' } });
  });

  it('path traversal under /files → 404', async () => {
    for (const path of [
      '/files/../../etc/passwd',
      '/files/..%2F..%2Fetc%2Fpasswd',
      '/files/t2i/%2e%2e/%2e%2e/%2e%2e/etc/passwd',
      '/files//etc/passwd',
      '/files/t2i/missing.png',
    ])
      expect(await rawGet(media.url, path), path).toBe(404);
  });

  it('serves under /files only outputs it wrote, never other files in its directory', async () => {
    const root = join(media.dir, 'objects');
    const planted: [string, string][] = [
      ['master.key', 'a'.repeat(64)],
      ['gatehouse.db', 'SQLite format 3'],
      ['t2i/2025/01/02/planted.png', 'not an output'],
      ['notes/2025/01/02/readme.txt', 'not an output'],
    ];
    for (const [key, body] of planted) {
      await mkdir(dirname(join(root, key)), { recursive: true });
      await writeFile(join(root, key), body);
    }
    // A link named like an output, pointing at a planted file, is not followed either.
    await mkdir(join(root, 't2i/2025/01/03'), { recursive: true });
    const linked = 't2i/2025/01/03/00000000-0000-4000-8000-000000000000.png';
    await symlink(join(root, 'master.key'), join(root, linked));
    // Nor a real file reached through a linked directory leading out of the store.
    const outside = join(media.dir, 'outside', '2025', '01', '04');
    await mkdir(outside, { recursive: true });
    const escaped = '10000000-0000-4000-8000-000000000000.png';
    await writeFile(join(outside, escaped), 'a'.repeat(64));
    await symlink(join(media.dir, 'outside'), join(root, 'linked'));
    for (const key of [...planted.map(([k]) => k), linked, `linked/2025/01/04/${escaped}`]) {
      const res = await fetch(`${media.url}/files/${key}`);
      expect(res.status, key).toBe(404);
      expect(await res.text()).not.toContain('a'.repeat(64));
    }
    const made = await postJson(media.url, '/api/t2i/model-a', { prompt: 'an output' });
    expect((await fetch(`${media.url}/files/${made.body.data.outputs[0].key}`)).status).toBe(200);
  });

  it('/health and /api/status', async () => {
    const h = await fetch(`${media.url}/health`);
    expect(await h.json()).toEqual({ status: 'ok' });
    const s = (await (await fetch(`${media.url}/api/status`)).json()) as any;
    expect(s.status).toBe('online');
    expect(s.generations).toBeGreaterThan(0);
    expect(typeof s.median_generation_ms).toBe('number');

    const fresh = await start({}, new FakeGenerator());
    expect(await (await fetch(`${fresh.url}/api/status`)).json()).toEqual({
      status: 'online',
      median_generation_ms: null,
      generations: 0,
      running: 0,
      queued: 0,
    });
  });

  it('/openapi.json documents every route with its parameters, enums and defaults; /docs renders', async () => {
    const doc = (await (await fetch(`${media.url}/openapi.json`)).json()) as any;
    expect(doc.openapi).toBe('3.1.0');
    for (const p of [
      '/api/t2i/model-a',
      '/api/t2i/model-b',
      '/api/i2i/model-b',
      '/api/i2i/model-a',
      '/api/video/video-model',
      '/health',
      '/api/status',
    ])
      expect(doc.paths[p], p).toBeDefined();
    expect(Object.keys(doc.paths).some((p) => p.includes('{kind}') || p.includes('openapi'))).toBe(false);
    const body = (p: string) => doc.paths[p].post.requestBody.content['application/json'].schema;
    expect(body('/api/t2i/model-a').properties.output_format).toMatchObject({
      enum: ['png', 'jpeg', 'webp'],
      default: 'png',
    });
    expect(body('/api/t2i/model-b').properties.aspect_ratio.enum).toContain('16:9');
    expect(body('/api/video/video-model').properties.duration).toMatchObject({
      type: 'integer',
      enum: [2, 3, 4, 5],
      default: 3,
    });
    expect(body('/api/i2i/model-a').required).toEqual(['prompt', 'image_input']);
    expect(doc.paths['/api/i2i/model-b'].post.requestBody.content['multipart/form-data']).toBeDefined();
    // Each route says which provider and provider model serve it.
    expect(doc.paths['/api/t2i/model-a'].post['x-gatehouse-provider']).toEqual({
      slug: 'local',
      model: expect.any(String),
    });
    expect(doc.paths['/api/t2i/model-a'].post.description).toContain('Served by provider `local`');
    const docs = await fetch(`${media.url}/docs`);
    expect(docs.status).toBe(200);
    expect(docs.headers.get('content-type')).toMatch(/text\/html/);
  });

  it('/openapi.json names its server URL and the bearer credential the generation routes need', async () => {
    // Open service, no public URL: a relative server, no credential asked for.
    const open = (await (await fetch(`${media.url}/openapi.json`)).json()) as any;
    expect(open.servers).toEqual([{ url: '/', description: 'This media service' }]);
    expect(open.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(open.paths['/api/t2i/model-a'].post.security).toBeUndefined();

    const guarded = await start({
      GATEHOUSE_MEDIA_AUTH: 'token',
      GATEHOUSE_MEDIA_TOKEN: 'openapi-token-0123456789',
      GATEHOUSE_MEDIA_PUBLIC_URL: 'https://media.example.test/',
    });
    const doc = (await (await fetch(`${guarded.url}/openapi.json`)).json()) as any;
    expect(doc.servers).toEqual([{ url: 'https://media.example.test', description: 'This media service' }]);
    expect(doc.components.securitySchemes.bearer).toEqual({
      type: 'http',
      scheme: 'bearer',
      description: expect.stringContaining('GATEHOUSE_MEDIA_TOKEN'),
    });
    for (const [path, ops] of Object.entries<any>(doc.paths))
      for (const [method, op] of Object.entries<any>(ops))
        expect(op.security, `${method} ${path}`).toEqual(
          (method === 'post' && path.startsWith('/api/')) || path.startsWith('/api/v1/videos/{id}')
            ? [{ bearer: [] }]
            : undefined,
        );
    // The token itself is never in the document.
    expect(JSON.stringify(doc)).not.toContain('openapi-token-0123456789');
  });

  it("a generator's MediaError is surfaced with its status; an unexpected error is a 500 without details", async () => {
    const failing = await start(
      {},
      {
        async generate(req) {
          if (req.kind === 't2i') throw new MediaError(502, 'provider_failed', 'The provider answered 500');
          throw new Error('secret internals');
        },
      },
    );
    const r = await postJson(failing.url, '/api/t2i/model-a', { prompt: 'x' });
    expect(r.status).toBe(502);
    expect(r.body).toEqual({
      success: false,
      message: 'The provider answered 500',
      error: { code: 'provider_failed' },
    });
    const e = await postJson(failing.url, '/api/video/video-model', { prompt: 'x' });
    expect(e.status).toBe(500);
    expect(e.body).toEqual({
      success: false,
      message: 'Internal server error',
      error: { code: 'internal_error' },
    });
  });

  it('a generation past the deadline → 504 generation_timeout, and the generator is told to stop', async () => {
    let signal: AbortSignal | undefined;
    const hanging = await start(
      { GATEHOUSE_MEDIA_TIMEOUT_MS: '200' },
      {
        generate(_req, s) {
          signal = s;
          return new Promise(() => {});
        },
      },
    );
    const started = Date.now();
    const r = await postJson(hanging.url, '/api/t2i/model-b', { prompt: 'x' });
    expect(r.status).toBe(504);
    expect(r.body).toMatchObject({ success: false, error: { code: 'generation_timeout' } });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(signal?.aborted).toBe(true);
  });
});

describe('with the built-in local generator', () => {
  it('t2i/model-a makes a real JPEG, served back with its content type', async () => {
    const local = await start();
    const r = await postJson(local.url, '/api/t2i/model-a', {
      prompt: 'a lighthouse at dusk',
      output_format: 'jpeg',
    });
    expect(r.status).toBe(200);
    const out = r.body.data.outputs[0];
    expect(out.key).toMatch(KEY('t2i', 'jpg'));
    const file = await fetch(`${local.url}/files/${out.key}`);
    expect(file.headers.get('content-type')).toBe('image/jpeg');
    const meta = await sharp(Buffer.from(await file.arrayBuffer())).metadata();
    expect(meta.format).toBe('jpeg');
    expect(meta.width).toBeGreaterThan(0);

    const input = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#3060c0' } })
      .png()
      .toBuffer();
    const edit = await postForm(local.url, '/api/i2i/model-b', [
      ['prompt', 'make it sunny'],
      ['image', new Blob([input], { type: 'image/png' })],
    ]);
    expect(edit.status).toBe(200);
    const edited = await fetch(`${local.url}/files/${edit.body.data.outputs[0].key}`);
    const em = await sharp(Buffer.from(await edited.arrayBuffer())).metadata();
    expect(em.format).toBe('png');
    // No aspect_ratio on this route: the output keeps the input's 4:3.
    expect(Math.round(((em.width as number) / (em.height as number)) * 3)).toBe(4);
  });
});

describe('routes from configuration', () => {
  it('GATEHOUSE_MEDIA_CONFIG replaces the default routes (served, validated and documented)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'media-routes-'));
    dirs.push(dir);
    const file = join(dir, 'media.json');
    await writeFile(
      file,
      JSON.stringify({
        routes: [
          {
            kind: 't2i',
            name: 'sketch',
            provider_model: 'sketch-v2',
            params: { steps: { type: 'integer', min: 1, max: 8, default: 4 } },
          },
        ],
      }),
    );
    const gen = new FakeGenerator();
    const custom = await start({ GATEHOUSE_MEDIA_CONFIG: file }, gen);
    const ok = await postJson(custom.url, '/api/t2i/sketch', { prompt: 'x', steps: 8 });
    expect(ok.status).toBe(200);
    expect(gen.last.req).toMatchObject({ route: 'sketch', providerModel: 'sketch-v2', params: { steps: 8 } });
    const bad = await postJson(custom.url, '/api/t2i/sketch', { prompt: 'x', steps: 9 });
    expect(bad.body).toMatchObject({ error: { code: 'invalid_value', field: 'steps' } });
    expect((await postJson(custom.url, '/api/t2i/model-a', { prompt: 'x' })).status).toBe(404);
    const doc = (await (await fetch(`${custom.url}/openapi.json`)).json()) as any;
    expect(
      doc.paths['/api/t2i/sketch'].post.requestBody.content['application/json'].schema.properties.steps,
    ).toEqual({
      type: 'integer',
      default: 4,
      minimum: 1,
      maximum: 8,
    });
    expect(doc.paths['/api/t2i/model-a']).toBeUndefined();
    expect(doc.paths['/api/t2i/sketch'].post['x-gatehouse-provider'].model).toBe('sketch-v2');
  });
});
