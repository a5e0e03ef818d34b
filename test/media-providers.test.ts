/**
 * The media provider adapters (src/media/providers/) driven through the real media HTTP service,
 * against mock providers on loopback speaking both wire formats: the OpenAI Images API
 * (`openai-images`) and the generic submit-and-poll task API (`task-api`). The mocks act on the
 * prompt (`ok`, `fail-once`, `down`, …).
 */

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMediaConfig } from '../src/media/config.js';
import { decodeBase64, sniffOutput } from '../src/media/providers/http.js';
import { openAiSize } from '../src/media/providers/openai-images.js';
import { type MediaHandle, startMedia } from '../src/media/server.js';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
/** A different image, so "the stored output is the mock's bytes" is not the input echoed. */
const OUT_PNG = Buffer.concat([PNG, Buffer.from('mock-output')]);
const MP4 = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom'), Buffer.alloc(200, 7)]);
const OPENAI_KEY = 'sk-test-SECRET-0123456789';
const SLOW_KEY = 'sk-slow-SECRET-abcdefghij';
const TASK_KEY = 'tk-test-SECRET-9876543210';

interface Received {
  method: string;
  url: string;
  at: number;
  headers: IncomingMessage['headers'];
  json?: any;
  form?: FormData;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

// ---------------------------------------------------------------------------------------------
// The OpenAI Images mock

const openaiSeen: Received[] = [];
const calls = new Map<string, number>();
let openai: Server;
let openaiUrl: string;
let fileAuth: string | undefined;

async function openaiHandler(req: IncomingMessage, res: ServerResponse) {
  const body = await readBody(req);
  if (req.method === 'GET' && req.url === '/files/out.png') {
    fileAuth = req.headers.authorization;
    return res.writeHead(200, { 'content-type': 'image/png' }).end(OUT_PNG);
  }
  if (req.method === 'GET' && req.url === '/files/huge.png') {
    res.writeHead(200, { 'content-type': 'image/png' });
    res.write(OUT_PNG);
    return res.end(Buffer.alloc(300 * 1024));
  }
  const seen: Received = {
    method: req.method ?? '',
    url: req.url ?? '',
    at: Date.now(),
    headers: req.headers,
  };
  let prompt = '';
  if (req.url === '/v1/images/generations') {
    seen.json = JSON.parse(body.toString('utf8'));
    prompt = seen.json.prompt;
  } else if (req.url === '/v1/images/edits') {
    seen.form = await new Request('http://mock/', {
      method: 'POST',
      headers: { 'content-type': String(req.headers['content-type']) },
      body,
    }).formData();
    prompt = String(seen.form.get('prompt'));
  } else return json(res, 404, { error: { message: 'no such path' } });
  openaiSeen.push(seen);
  const n = (calls.get(prompt) ?? 0) + 1;
  calls.set(prompt, n);
  const ok = () => json(res, 200, { created: 1, data: [{ b64_json: OUT_PNG.toString('base64') }] });
  switch (prompt) {
    case 'fail-once':
      return n === 1 ? json(res, 500, { error: { message: 'temporary glitch' } }) : ok();
    case 'ratelimit':
      return n === 1 ? json(res, 429, { error: { message: 'slow down' } }, { 'retry-after': '1' }) : ok();
    case 'down':
      return json(res, 503, { error: { message: `overloaded (your key ${OPENAI_KEY} is fine)` } });
    case 'bad-request':
      return json(res, 400, { error: { message: 'Your prompt was rejected by the safety system' } });
    case 'not-json':
      return res.writeHead(200, { 'content-type': 'text/html' }).end('<html>gateway</html>');
    case 'no-images':
      return json(res, 200, { created: 1, data: [] });
    case 'bad-base64':
      return json(res, 200, { data: [{ b64_json: '***not base64***' }] });
    case 'not-an-image':
      return json(res, 200, { data: [{ b64_json: Buffer.from('hello, plain text').toString('base64') }] });
    case 'url':
      return json(res, 200, { data: [{ url: `${openaiUrl}/files/out.png` }] });
    case 'huge-url':
      return json(res, 200, { data: [{ url: `${openaiUrl}/files/huge.png` }] });
    case 'slow':
      setTimeout(ok, 2000).unref();
      return;
    default:
      return ok();
  }
}

// ---------------------------------------------------------------------------------------------
// The task API mock

interface MockTask {
  id: string;
  prompt: string;
  model: string;
  input: any;
  polls: number;
  cancelled: boolean;
}
const tasks = new Map<string, MockTask>();
const taskSeen: Received[] = [];
let taskServer: Server;
let taskUrl: string;

function taskView(t: MockTask) {
  const base = { id: t.id };
  if (t.cancelled) return { ...base, status: 'canceled' };
  switch (t.prompt) {
    case 'fail':
      return t.polls >= 1
        ? { ...base, status: 'failed', error: { message: 'content policy violation' } }
        : { ...base, status: 'running' };
    case 'never':
      return { ...base, status: 'running' };
    case 'b64':
    case 'b64-edit':
      return { ...base, status: 'succeeded', outputs: [{ b64: OUT_PNG.toString('base64') }] };
    case 'not-a-video':
      return { ...base, status: 'succeeded', outputs: [{ url: `${taskUrl}/out/text.txt` }] };
    default:
      return t.polls >= 3
        ? {
            ...base,
            status: 'succeeded',
            outputs: [{ url: `${taskUrl}/out/video.mp4`, content_type: 'video/mp4' }],
          }
        : { ...base, status: t.polls === 0 ? 'queued' : 'running' };
  }
}

let flakyPollFailed = false;
let lostSubmitAnswered = false;
const tasksByKey = new Map<string, MockTask>();

async function taskHandler(req: IncomingMessage, res: ServerResponse) {
  const body = await readBody(req);
  const url = req.url ?? '';
  if (req.method === 'GET' && url === '/in.png')
    return res.writeHead(200, { 'content-type': 'image/png' }).end(PNG);
  if (req.method === 'GET' && url === '/out/video.mp4')
    return res.writeHead(200, { 'content-type': 'video/mp4' }).end(MP4);
  if (req.method === 'GET' && url === '/out/text.txt')
    return res.writeHead(200, { 'content-type': 'video/mp4' }).end('this is not a video at all');
  taskSeen.push({
    method: req.method ?? '',
    url,
    at: Date.now(),
    headers: req.headers,
    ...(body.length ? { json: JSON.parse(body.toString('utf8')) } : {}),
  });
  if (req.method === 'POST' && url === '/api/tasks') {
    const b = JSON.parse(body.toString('utf8'));
    // As real task APIs do: a repeated Idempotency-Key answers the task it made the first time.
    const key = req.headers['idempotency-key'];
    const earlier = typeof key === 'string' ? tasksByKey.get(key) : undefined;
    if (earlier) return json(res, 200, { id: earlier.id, status: 'queued' });
    const t: MockTask = {
      id: `task-${tasks.size + 1}`,
      prompt: b.input.prompt,
      model: b.model,
      input: b.input,
      polls: 0,
      cancelled: false,
    };
    tasks.set(t.id, t);
    if (typeof key === 'string') tasksByKey.set(key, t);
    // The task is made, but its answer is lost on the way back (a proxy's 502).
    if (t.prompt === 'lost-submit' && !lostSubmitAnswered) {
      lostSubmitAnswered = true;
      return json(res, 502, { error: { message: 'bad gateway' } });
    }
    return json(res, 201, { id: t.id, status: 'queued' });
  }
  let m = /^\/api\/tasks\/([^/]+)$/.exec(url);
  if (req.method === 'GET' && m) {
    const t = tasks.get(m[1] as string);
    if (!t) return json(res, 404, { error: { message: 'no such task' } });
    if (t.prompt === 'flaky-poll' && t.polls === 1 && !flakyPollFailed) {
      flakyPollFailed = true;
      return json(res, 502, { error: { message: 'bad gateway' } });
    }
    t.polls += 1;
    return json(res, 200, taskView(t));
  }
  m = /^\/api\/tasks\/([^/]+)\/cancel$/.exec(url);
  if (req.method === 'POST' && m) {
    const t = tasks.get(m[1] as string);
    if (t) t.cancelled = true;
    return json(res, 200, { id: m[1], status: 'canceled' });
  }
  return json(res, 404, { error: { message: 'no such path' } });
}

// ---------------------------------------------------------------------------------------------
// The media service, routes pointed at the mocks

const dirs: string[] = [];
const handles: MediaHandle[] = [];
let media: MediaHandle;
let mediaShort: MediaHandle;
let routesFile: string;

function routesDoc() {
  return {
    providers: [
      {
        slug: 'openai',
        kind: 'openai-images',
        base_url: `${openaiUrl}/v1`,
        api_key: OPENAI_KEY,
        max_output_bytes: 256 * 1024,
      },
      {
        slug: 'openai-slow',
        kind: 'openai-images',
        base_url: `${openaiUrl}/v1/`,
        api_key_env: 'TEST_SLOW_KEY',
        timeout_ms: 400,
        max_attempts: 2,
        headers: { 'X-Tenant': 'tenant-7' },
      },
      {
        slug: 'tasks',
        kind: 'task-api',
        base_url: `${taskUrl}/api`,
        api_key: TASK_KEY,
        poll_interval_ms: 40,
        max_output_bytes: 128 * 1024,
      },
    ],
    routes: [
      {
        kind: 't2i',
        name: 'model-a',
        provider: 'openai',
        provider_model: 'gpt-image-1',
        params: {
          output_format: { type: 'string', enum: ['png', 'jpeg', 'webp'], default: 'png' },
          aspect_ratio: { type: 'string', enum: ['1:1', '16:9', '9:16'] },
          quality: { type: 'string', enum: ['low', 'high'] },
        },
      },
      { kind: 't2i', name: 'slow', provider: 'openai-slow', provider_model: 'gpt-image-1', params: {} },
      {
        kind: 'i2i',
        name: 'model-b',
        provider: 'openai',
        provider_model: 'gpt-image-1',
        requires_image: true,
        params: {
          image_input: { type: 'image_urls', min_items: 1, max_items: 4 },
          image: { type: 'image' },
          mask: { type: 'image' },
          aspect_ratio: { type: 'string', enum: ['1:1', '3:2', '2:3'] },
        },
      },
      {
        kind: 'video',
        name: 'video-model',
        provider: 'tasks',
        provider_model: 'acme/video-1',
        params: {
          duration: { type: 'integer', enum: [3, 5], default: 3 },
          resolution: { type: 'string', enum: ['480p', '720p'], default: '480p' },
          image: { type: 'image' },
          camera_fixed: { type: 'boolean', default: false },
        },
      },
      { kind: 't2i', name: 'task-image', provider: 'tasks', provider_model: 'acme/image-1', params: {} },
      {
        kind: 'i2i',
        name: 'task-edit',
        provider: 'tasks',
        provider_model: 'acme/edit-1',
        requires_image: true,
        params: { image: { type: 'image' }, mask: { type: 'image' } },
      },
    ],
  };
}

async function start(env: Record<string, string> = {}) {
  const dir = await mkdtemp(join(tmpdir(), 'media-prov-'));
  dirs.push(dir);
  const config = loadMediaConfig({
    MEDIA_PORT: '0',
    MEDIA_HOST: '127.0.0.1',
    GATEHOUSE_MEDIA_STORE_DIR: join(dir, 'objects'),
    GATEHOUSE_MEDIA_CONFIG: routesFile,
    GATEHOUSE_MEDIA_FETCH_PRIVATE: 'on',
    GATEHOUSE_MEDIA_CONCURRENCY: '8',
    TEST_SLOW_KEY: SLOW_KEY,
    ...env,
  });
  const handle = await startMedia(config, { log: false });
  handles.push(handle);
  return handle;
}

beforeAll(async () => {
  openai = createServer((req, res) => {
    openaiHandler(req, res).catch((err) => res.writeHead(500).end(String(err)));
  });
  taskServer = createServer((req, res) => {
    taskHandler(req, res).catch((err) => res.writeHead(500).end(String(err)));
  });
  openaiUrl = await listen(openai);
  taskUrl = await listen(taskServer);
  const dir = await mkdtemp(join(tmpdir(), 'media-prov-routes-'));
  dirs.push(dir);
  routesFile = join(dir, 'media.json');
  await writeFile(routesFile, JSON.stringify(routesDoc()));
  media = await start();
  mediaShort = await start({ GATEHOUSE_MEDIA_TIMEOUT_MS: '700' });
});

afterAll(async () => {
  for (const h of handles) await h.close();
  openai.closeAllConnections();
  taskServer.closeAllConnections();
  await new Promise((r) => openai.close(r));
  await new Promise((r) => taskServer.close(r));
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function postJson(base: string, path: string, body: unknown) {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

async function stored(base: string, output: { key: string }) {
  const res = await fetch(`${base}/files/${output.key}`);
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    data: Buffer.from(await res.arrayBuffer()),
  };
}

const lastOpenai = () => openaiSeen[openaiSeen.length - 1] as Received;
const callsOf = (prompt: string) =>
  openaiSeen.filter((s) => (s.json?.prompt ?? s.form?.get('prompt')) === prompt);

// ---------------------------------------------------------------------------------------------

describe('openai-images', () => {
  it('t2i: POST /images/generations with the mapped params; the stored output is the provider image', async () => {
    const r = await postJson(media.url, '/api/t2i/model-a', {
      prompt: 'ok',
      aspect_ratio: '16:9',
      output_format: 'webp',
      quality: 'high',
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: true, data: { model: 'model-a' } });
    const seen = lastOpenai();
    expect(seen.url).toBe('/v1/images/generations');
    expect(seen.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    expect(seen.json).toEqual({
      model: 'gpt-image-1',
      prompt: 'ok',
      n: 1,
      size: '1536x1024',
      quality: 'high',
      output_format: 'webp',
      response_format: 'b64_json',
    });
    const out = r.body.data.outputs[0];
    expect(out.key).toMatch(/^t2i\/.*\.png$/);
    const file = await stored(media.url, out);
    expect(file.status).toBe(200);
    expect(file.type).toMatch(/^image\/png/);
    expect(file.data.equals(OUT_PNG)).toBe(true);
  });

  it('a {url} answer is fetched (with the key: same origin)', async () => {
    const r = await postJson(media.url, '/api/t2i/model-a', { prompt: 'url' });
    expect(r.status).toBe(200);
    expect((await stored(media.url, r.body.data.outputs[0])).data.equals(OUT_PNG)).toBe(true);
    expect(fileAuth).toBe(`Bearer ${OPENAI_KEY}`);
  });

  it('i2i: POST /images/edits multipart, the uploaded file as an image[] part', async () => {
    const form = new FormData();
    form.append('prompt', 'ok');
    form.append('aspect_ratio', '2:3');
    form.append('image', new Blob([PNG], { type: 'image/png' }), 'mine.png');
    const res = await fetch(`${media.url}/api/i2i/model-b`, { method: 'POST', body: form });
    const body = (await res.json()) as any;
    expect(res.status).toBe(200);
    const seen = lastOpenai();
    expect(seen.url).toBe('/v1/images/edits');
    expect(seen.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    expect(seen.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    const f = seen.form as FormData;
    expect(f.get('model')).toBe('gpt-image-1');
    expect(f.get('prompt')).toBe('ok');
    expect(f.get('size')).toBe('1024x1536');
    const parts = f.getAll('image[]') as File[];
    expect(parts).toHaveLength(1);
    expect(Buffer.from(await (parts[0] as File).arrayBuffer()).equals(PNG)).toBe(true);
    expect((parts[0] as File).type).toBe('image/png');
    expect((await stored(media.url, body.data.outputs[0])).data.equals(OUT_PNG)).toBe(true);
  });

  it('i2i with a mask: the mask goes as the mask part, apart from the image[] parts', async () => {
    const form = new FormData();
    form.append('prompt', 'ok');
    form.append('image', new Blob([PNG], { type: 'image/png' }), 'mine.png');
    form.append('mask', new Blob([OUT_PNG], { type: 'image/png' }), 'mask.png');
    const res = await fetch(`${media.url}/api/i2i/model-b`, { method: 'POST', body: form });
    expect(res.status).toBe(200);
    const f = lastOpenai().form as FormData;
    const images = f.getAll('image[]') as File[];
    expect(images).toHaveLength(1);
    expect(Buffer.from(await (images[0] as File).arrayBuffer()).equals(PNG)).toBe(true);
    const masks = f.getAll('mask') as File[];
    expect(masks).toHaveLength(1);
    expect(Buffer.from(await (masks[0] as File).arrayBuffer()).equals(OUT_PNG)).toBe(true);
    // A mask alone edits nothing: refused before any call.
    const before = openaiSeen.length;
    const alone = new FormData();
    alone.append('prompt', 'ok');
    alone.append('mask', new Blob([OUT_PNG], { type: 'image/png' }), 'mask.png');
    const refused = await fetch(`${media.url}/api/i2i/model-b`, { method: 'POST', body: alone });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as any).error).toMatchObject({ code: 'missing_parameter', field: 'mask' });
    expect(openaiSeen).toHaveLength(before);
  });

  it('i2i from image_input URLs: every image an image[] part, no size without an aspect ratio', async () => {
    const r = await postJson(media.url, '/api/i2i/model-b', {
      prompt: 'ok',
      image_input: [`${taskUrl}/in.png`, `${taskUrl}/in.png`],
    });
    expect(r.status).toBe(200);
    const f = lastOpenai().form as FormData;
    expect(f.getAll('image[]')).toHaveLength(2);
    expect(f.get('size')).toBeNull();
  });

  it('500 then success: retried', async () => {
    const r = await postJson(media.url, '/api/t2i/model-a', { prompt: 'fail-once' });
    expect(r.status).toBe(200);
    expect(callsOf('fail-once')).toHaveLength(2);
  });

  it('429 with Retry-After: 1 → the next attempt waits a second', async () => {
    const r = await postJson(media.url, '/api/t2i/model-a', { prompt: 'ratelimit' });
    expect(r.status).toBe(200);
    const [a, b] = callsOf('ratelimit');
    expect(b!.at - a!.at).toBeGreaterThanOrEqual(950);
  });

  it('persistent failure → 502 provider_error naming the provider and status, never the key', async () => {
    const r = await postJson(media.url, '/api/t2i/model-a', { prompt: 'down' });
    expect(r.status).toBe(502);
    expect(r.body.success).toBe(false);
    expect(r.body.error).toEqual({ code: 'provider_error' });
    expect(r.body.message).toContain('Provider "openai" answered HTTP 503');
    expect(r.body.message).toContain('after 3 attempts');
    expect(r.body.message).toContain('[redacted]');
    expect(JSON.stringify(r.body)).not.toContain(OPENAI_KEY);
    expect(callsOf('down')).toHaveLength(3);
  });

  it('a 400 from the provider is not retried', async () => {
    const r = await postJson(media.url, '/api/t2i/model-a', { prompt: 'bad-request' });
    expect(r.status).toBe(502);
    expect(r.body.message).toMatch(/HTTP 400 .*safety system/);
    expect(callsOf('bad-request')).toHaveLength(1);
  });

  it.each([
    ['not-json', /not JSON/],
    ['no-images', /without any image/],
    ['bad-base64', /not valid base64/],
    ['not-an-image', /not a PNG, JPEG, WebP or GIF/],
    ['huge-url', /larger than/],
  ])('malformed answer (%s) → 502 invalid_provider_response', async (prompt, message) => {
    const r = await postJson(media.url, '/api/t2i/model-a', { prompt });
    expect(r.status).toBe(502);
    expect(r.body.error).toEqual({ code: 'invalid_provider_response' });
    expect(r.body.message).toMatch(message);
    expect(r.body.message).toContain('"openai"');
  });

  it('slow: an attempt past timeout_ms → 504 generation_timeout, not retried; api_key_env and headers sent', async () => {
    const r = await postJson(media.url, '/api/t2i/slow', { prompt: 'slow' });
    expect(r.status).toBe(504);
    expect(r.body.error).toEqual({ code: 'generation_timeout' });
    expect(r.body.message).toContain('Provider "openai-slow" did not answer');
    const seen = callsOf('slow');
    expect(seen).toHaveLength(1);
    expect(seen[0]!.headers.authorization).toBe(`Bearer ${SLOW_KEY}`);
    expect(seen[0]!.headers['x-tenant']).toBe('tenant-7');
  });
});

describe('task-api', () => {
  it('video: submitted with the image as a data: URL, polled until done, the MP4 stored', async () => {
    const before = taskSeen.length;
    const r = await postJson(media.url, '/api/video/video-model', {
      prompt: 'ok',
      duration: 5,
      image: `${taskUrl}/in.png`,
    });
    expect(r.status).toBe(200);
    const seen = taskSeen.slice(before);
    const submit = seen[0] as Received;
    expect(submit.method).toBe('POST');
    expect(submit.url).toBe('/api/tasks');
    expect(submit.headers.authorization).toBe(`Bearer ${TASK_KEY}`);
    expect(submit.json).toEqual({
      model: 'acme/video-1',
      input: {
        prompt: 'ok',
        duration: 5,
        resolution: '480p',
        camera_fixed: false,
        image_urls: [`data:image/png;base64,${PNG.toString('base64')}`],
      },
    });
    const polls = seen.filter((s) => s.method === 'GET' && s.url.startsWith('/api/tasks/'));
    expect(polls).toHaveLength(3); // queued → running → running → succeeded on the third poll
    expect(polls.every((p) => p.headers.authorization === `Bearer ${TASK_KEY}`)).toBe(true);
    const out = r.body.data.outputs[0];
    expect(out.key).toMatch(/^video\/.*\.mp4$/);
    const file = await stored(media.url, out);
    expect(file.type).toMatch(/^video\/mp4/);
    expect(file.data.equals(MP4)).toBe(true);
  });

  it('i2i with a mask: the image in image_urls, the mask as mask_url', async () => {
    const before = taskSeen.length;
    const r = await postJson(media.url, '/api/i2i/task-edit', {
      prompt: 'b64-edit',
      image: `${taskUrl}/in.png`,
      mask: `data:image/png;base64,${OUT_PNG.toString('base64')}`,
    });
    expect(r.status).toBe(200);
    expect(taskSeen[before]?.json).toEqual({
      model: 'acme/edit-1',
      input: {
        prompt: 'b64-edit',
        image_urls: [`data:image/png;base64,${PNG.toString('base64')}`],
        mask_url: `data:image/png;base64,${OUT_PNG.toString('base64')}`,
      },
    });
  });

  it('a poll answering 502 is retried and polling goes on', async () => {
    const r = await postJson(media.url, '/api/video/video-model', { prompt: 'flaky-poll' });
    expect(r.status).toBe(200);
    expect(flakyPollFailed).toBe(true);
  });

  it('a submit whose answer was lost is retried with the same Idempotency-Key: one task upstream', async () => {
    const before = taskSeen.length;
    const r = await postJson(media.url, '/api/video/video-model', { prompt: 'lost-submit' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(lostSubmitAnswered).toBe(true);
    const submits = taskSeen.slice(before).filter((s) => s.method === 'POST' && s.url === '/api/tasks');
    expect(submits).toHaveLength(2);
    const keys = submits.map((s) => s.headers['idempotency-key']);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    expect([...tasks.values()].filter((t) => t.prompt === 'lost-submit')).toHaveLength(1);
    // Another generation gets its own key.
    const next = await postJson(media.url, '/api/t2i/task-image', { prompt: 'b64' });
    expect(next.status).toBe(200);
    const last = taskSeen.filter((s) => s.method === 'POST' && s.url === '/api/tasks').at(-1);
    expect(last?.headers['idempotency-key']).not.toBe(keys[0]);
  });

  it('b64 outputs (t2i through a task API)', async () => {
    const r = await postJson(media.url, '/api/t2i/task-image', { prompt: 'b64' });
    expect(r.status).toBe(200);
    expect((await stored(media.url, r.body.data.outputs[0])).data.equals(OUT_PNG)).toBe(true);
    expect([...tasks.values()].find((t) => t.prompt === 'b64')?.input).toEqual({ prompt: 'b64' });
  });

  it('a task that fails → 502 provider_error with its message', async () => {
    const r = await postJson(media.url, '/api/video/video-model', { prompt: 'fail' });
    expect(r.status).toBe(502);
    expect(r.body.error).toEqual({ code: 'provider_error' });
    expect(r.body.message).toMatch(/Provider "tasks" task task-\d+ failed: content policy violation/);
  });

  it('an output that is not a video → 502 invalid_provider_response', async () => {
    const r = await postJson(media.url, '/api/video/video-model', { prompt: 'not-a-video' });
    expect(r.status).toBe(502);
    expect(r.body.error).toEqual({ code: 'invalid_provider_response' });
  });

  it('slow: the service deadline → 504 generation_timeout and the task cancelled', async () => {
    const r = await postJson(mediaShort.url, '/api/video/video-model', { prompt: 'never' });
    expect(r.status).toBe(504);
    expect(r.body.error).toEqual({ code: 'generation_timeout' });
    const task = [...tasks.values()].find((t) => t.prompt === 'never') as MockTask;
    expect(task.polls).toBeGreaterThan(2);
    for (let i = 0; i < 50 && !task.cancelled; i++) await new Promise((res) => setTimeout(res, 20));
    expect(task.cancelled).toBe(true);
    const cancel = taskSeen.find((s) => s.url === `/api/tasks/${task.id}/cancel`);
    expect(cancel?.headers.authorization).toBe(`Bearer ${TASK_KEY}`);
  });
});

describe('cancellation', () => {
  it('the client going away cancels the task', async () => {
    // A raw request on its own connection, destroyed mid-generation.
    const target = new URL(media.url);
    const body = JSON.stringify({ prompt: 'never', duration: 5 });
    const req = httpRequest({
      host: target.hostname,
      port: target.port,
      path: '/api/video/video-model',
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.on('error', () => {});
    req.end(body);
    const submitted = () => [...tasks.values()].find((t) => t.prompt === 'never' && t.input.duration === 5);
    for (let i = 0; i < 100 && !(submitted()?.polls ?? 0); i++) await new Promise((r) => setTimeout(r, 20));
    req.destroy();
    const task = submitted() as MockTask;
    for (let i = 0; i < 100 && !task.cancelled; i++) await new Promise((r) => setTimeout(r, 20));
    expect(task.cancelled).toBe(true);
  });
});

describe('provider configuration', () => {
  it('an openai-images provider on a video route is a start-up error', async () => {
    const doc = routesDoc();
    doc.routes[3]!.provider = 'openai';
    const file = join(dirs[0] as string, 'video-openai.json');
    await writeFile(file, JSON.stringify(doc));
    expect(() => loadMediaConfig({ GATEHOUSE_MEDIA_CONFIG: file, TEST_SLOW_KEY: 'x' })).toThrow(
      /video\/video-model: provider "openai" \(openai-images\) makes no videos/,
    );
  });

  it('a route naming an unknown provider is a start-up error', async () => {
    const doc = routesDoc();
    doc.routes[0]!.provider = 'nope';
    const file = join(dirs[0] as string, 'bad.json');
    await writeFile(file, JSON.stringify(doc));
    expect(() => loadMediaConfig({ GATEHOUSE_MEDIA_CONFIG: file, TEST_SLOW_KEY: 'x' })).toThrow(
      /t2i\/model-a: unknown provider "nope"/,
    );
  });

  it('a missing api_key_env variable is a start-up error; keys are not serialised', () => {
    expect(() => loadMediaConfig({ GATEHOUSE_MEDIA_CONFIG: routesFile })).toThrow(/TEST_SLOW_KEY is not set/);
    const config = loadMediaConfig({ GATEHOUSE_MEDIA_CONFIG: routesFile, TEST_SLOW_KEY: SLOW_KEY });
    expect(config.providers.map((p) => p.slug)).toEqual(['openai', 'openai-slow', 'tasks']);
    expect(config.providers[0]?.apiKey).toBe(OPENAI_KEY);
    expect(config.providers[1]?.baseUrl).toBe(`${openaiUrl}/v1`);
    const text = JSON.stringify(config);
    expect(text).not.toContain(OPENAI_KEY);
    expect(text).not.toContain(SLOW_KEY);
  });

  it('size mapping, base64 and output sniffing', () => {
    expect(openAiSize({}, 't2i')).toBe('1024x1024');
    expect(openAiSize({}, 'i2i')).toBeUndefined();
    expect(openAiSize({ aspect_ratio: '16:9', size: '2K' }, 't2i')).toBe('1536x1024');
    expect(openAiSize({ aspect_ratio: '3:4' }, 't2i')).toBe('1024x1536');
    expect(openAiSize({ aspect_ratio: '1:1' }, 't2i')).toBe('1024x1024');
    expect(openAiSize({ size: '512x512' }, 't2i')).toBe('512x512');
    expect(decodeBase64(`data:image/png;base64,${PNG.toString('base64')}`)?.equals(PNG)).toBe(true);
    expect(decodeBase64('a!b')).toBeNull();
    expect(sniffOutput(MP4, 'video')).toEqual({ contentType: 'video/mp4', extension: 'mp4' });
    expect(sniffOutput(MP4, 't2i')).toBeNull();
    expect(sniffOutput(PNG, 'video')).toEqual({ contentType: 'image/png', extension: 'png' });
  });
});
