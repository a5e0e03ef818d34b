/**
 * The image APIs clients speak, through the gateway: OpenRouter's (`@openrouter/sdk`'s `images.*`,
 * the AI SDK's `openrouter.imageModel(id)`) and OpenAI's (the `openai` client's `images.generate`,
 * the AI SDK's `openai.image(id)`), with the gateway's base URL, reach the media service (forwarded
 * there), which generates with its routes — text-to-image, or image-to-image from
 * `input_references` (base64 data: URLs included) — admits and bills the key as its own routes do,
 * and answers in each API's shapes (JSON, SSE, catalog, errors), validated by the clients.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OpenRouter } from '@openrouter/sdk';
import { createOpenAI } from 'ai-sdk-openai-v4';
import { APICallError, generateImage } from 'ai-v7';
import OpenAI, { toFile } from 'openai-v7';
import { createOpenRouter } from 'openrouter-ai-sdk-provider-v3';
import sharp from 'sharp';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadMediaConfig } from '../src/media/config.js';
import { LocalGenerator } from '../src/media/generators/local.js';
import { type MediaHandle, startMedia } from '../src/media/server.js';
import type { GenerateRequest, MediaGenerator } from '../src/media/types.js';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { client } from './support/http.js';

const PRICE_B = 0.04;
const json = async (res: Response): Promise<any> => res.json();

describe('image APIs through the gateway', () => {
  let dir: string;
  let gw: TestGateway;
  let media: MediaHandle;
  let sdk: OpenRouter;
  /** What the generator was asked for (the built-in generator does the work). */
  const asked: { kind: string; route: string; params: GenerateRequest['params']; images: string[] }[] = [];
  /** The parameter each input of each call came from. */
  const askedFrom: string[][] = [];
  const local = new LocalGenerator();
  const recording: MediaGenerator = {
    generate(req, signal) {
      asked.push({
        kind: req.kind,
        route: req.route,
        params: req.params,
        images: req.images.map((i) => `${i.contentType}:${i.bytes}`),
      });
      askedFrom.push(req.images.map((i) => i.param));
      return local.generate(req, signal);
    },
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'media-openrouter-'));
    gw = await startTestGateway('sqlite', { env: { GATEHOUSE_RATE_LIMIT_REQUESTS: '1000' } });
    const config = loadMediaConfig({
      MEDIA_PORT: '0',
      MEDIA_HOST: '127.0.0.1',
      GATEHOUSE_MEDIA_STORE_DIR: join(dir, 'objects'),
    });
    const routes = config.routes.map((r) =>
      r.kind === 't2i' && r.name === 'model-b' ? { ...r, priceUsd: PRICE_B } : r,
    );
    media = await startMedia(
      { ...config, routes },
      {
        log: false,
        generators: { local: recording },
        keys: gw.services.keys,
        billing: gw.services.mediaBilling,
      },
    );
    gw.services.mediaLink.url = media.url;
    sdk = new OpenRouter({
      serverURL: `${gw.url}/api/v1`,
      apiKey: gw.apiKey,
      retryConfig: { strategy: 'none' },
    });
  });
  afterAll(async () => {
    await media?.close();
    await gw?.stop();
    await rm(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    asked.length = 0;
  });

  const post = (body: unknown, key: string | null = gw.apiKey) =>
    fetch(`${gw.url}/api/v1/images`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
      body: JSON.stringify(body),
    });
  const png = async (width: number, height: number) =>
    sharp({ create: { width, height, channels: 3, background: '#36c' } })
      .png()
      .toBuffer();

  it('images.generate: n images in the asked format, decoded from base64, validated by the SDK', async () => {
    const res = await sdk.images.generate({
      imageGenerationRequest: {
        model: 'media/model-a',
        prompt: 'a red lighthouse at dusk',
        outputFormat: 'webp',
        n: 2,
      },
    });
    if (!('data' in res)) throw new Error('expected a JSON answer');
    expect(res.data).toHaveLength(2);
    for (const image of res.data) {
      expect(image.mediaType).toBe('image/webp');
      const meta = await sharp(Buffer.from(image.b64Json, 'base64')).metadata();
      expect(meta.format).toBe('webp');
    }
    expect(res.usage).toMatchObject({ promptTokens: 0, completionTokens: 0, cost: 0 });
    // Two generations of the text-to-image route, each asked for WebP.
    expect(asked).toEqual([
      { kind: 't2i', route: 'model-a', params: { output_format: 'webp' }, images: [] },
      { kind: 't2i', route: 'model-a', params: { output_format: 'webp' }, images: [] },
    ]);
  });

  it('images.generate with stream: one image_generation.completed event per image, then the end', async () => {
    const res = await sdk.images.generate({
      imageGenerationRequest: { model: 'media/model-a', prompt: 'a green field', stream: true },
    });
    if ('data' in res) throw new Error('expected a stream');
    const events = [];
    for await (const event of res) events.push(event);
    expect(events.map((e) => e.type)).toEqual(['image_generation.completed']);
    const done = events[0] as { b64Json: string; mediaType?: string };
    expect(done.mediaType).toBe('image/png');
    expect((await sharp(Buffer.from(done.b64Json, 'base64')).metadata()).format).toBe('png');
  });

  it('the catalog: images.listModels and listModelEndpoints describe the routes, prices included', async () => {
    const list = await sdk.images.listModels();
    const ids = list.data.map((m) => m.id);
    expect(ids).toEqual(['media/model-a', 'media/model-b']);
    const b = list.data.find((m) => m.id === 'media/model-b');
    expect(b?.architecture.inputModalities).toEqual(['text', 'image']);
    expect(b?.supportedParameters.aspect_ratio).toMatchObject({ type: 'enum' });
    expect(b?.supportedParameters.n).toEqual({ type: 'range', min: 1, max: 10 });

    const endpoints = await sdk.images.listModelEndpoints({ author: 'media', slug: 'model-b' });
    expect(endpoints.id).toBe('media/model-b');
    expect(endpoints.endpoints).toHaveLength(1);
    expect(endpoints.endpoints[0]?.providerSlug).toBe('gatehouse');
    expect(endpoints.endpoints[0]?.pricing).toEqual([
      { billable: 'output_image', unit: 'image', costUsd: PRICE_B, variant: 'text-to-image' },
      { billable: 'output_image', unit: 'image', costUsd: 0, variant: 'image-to-image' },
    ]);
    const missing = await sdk.images.listModelEndpoints({ author: 'media', slug: 'nope' }).then(
      () => ({ statusCode: 200 }),
      (e: { statusCode: number }) => e,
    );
    expect(missing.statusCode).toBe(404);
  });

  it('the AI SDK image model: WxH becomes the route’s size tier and nearest aspect ratio; the price is charged', async () => {
    const before = (await client(gw.url, gw.apiKey)('GET', '/key')).body.data.usage;
    const { image } = await generateImage({
      model: createOpenRouter({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey }).imageModel('media/model-b'),
      prompt: 'a wide harbour',
      size: '1536x1024',
      maxRetries: 0,
    });
    const meta = await sharp(Buffer.from(image.uint8Array)).metadata();
    expect(meta.width).toBe(2048);
    expect(Math.abs((meta.width ?? 0) / (meta.height ?? 1) - 1.5)).toBeLessThan(0.01);
    expect(asked).toEqual([
      { kind: 't2i', route: 'model-b', params: { size: '2K', aspect_ratio: '3:2' }, images: [] },
    ]);
    const after = (await client(gw.url, gw.apiKey)('GET', '/key')).body.data.usage;
    expect(after - before).toBeCloseTo(PRICE_B, 8);
  });

  it('input images as base64 data: URLs go to the image-to-image route (the AI SDK’s files, input_references)', async () => {
    const input = await png(64, 48);
    const { image } = await generateImage({
      model: createOpenRouter({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey }).imageModel('media/model-a'),
      prompt: { text: 'the same, at night', images: [input] },
      maxRetries: 0,
    });
    expect((await sharp(Buffer.from(image.uint8Array)).metadata()).format).toBe('png');
    expect(asked).toEqual([
      {
        kind: 'i2i',
        route: 'model-a',
        params: { image_input: [expect.stringMatching(/^data:image\/png;base64,/)] },
        images: [`image/png:${input.length}`],
      },
    ]);

    // The media service's own routes take data: URLs as well.
    const native = await fetch(`${media.url}/api/i2i/model-b`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.apiKey}` },
      body: JSON.stringify({ prompt: 'x', image: `data:image/png;base64,${input.toString('base64')}` }),
    });
    expect(native.status).toBe(200);
    expect(asked[1]?.images).toEqual([`image/png:${input.length}`]);
  });

  it('fields the route has no equivalent for are dropped and listed; gateway fields are not', async () => {
    const res = await post({
      model: 'media/model-a',
      prompt: 'a boat',
      seed: 7,
      quality: 'high',
      background: 'transparent',
      user: 'u-1',
      provider: { sort: 'price' },
      aspect_ratio: 'auto',
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gatehouse-dropped-fields')).toBe('seed,quality,background');
    const body = await json(res);
    expect(body.data).toHaveLength(1);
    // A key no header can carry is counted, not named.
    const odd = await post({ model: 'media/model-a', prompt: 'a boat', 'bad\u0000name\n': 1, style: 'x' });
    expect(odd.status).toBe(200);
    expect(odd.headers.get('x-gatehouse-dropped-fields')).toBe('style,(1 more)');
  });

  it('refusals are OpenRouter errors: no key, unknown model, bad values, a guardrail, a bad image', async () => {
    const noKey = await post({ model: 'media/model-a', prompt: 'x' }, null);
    expect(noKey.status).toBe(401);
    expect(await json(noKey)).toEqual({ error: { code: 401, message: expect.any(String) } });

    const unknown = await sdk.images
      .generate({ imageGenerationRequest: { model: 'media/nope', prompt: 'x' } })
      .then(
        () => ({ statusCode: 200, message: '' }),
        (e: { statusCode: number; message: string }) => e,
      );
    expect(unknown.statusCode).toBe(404);
    expect(unknown.message).toContain('media/nope');

    const cases: [unknown, string, string][] = [
      [{ model: 'media/model-a', prompt: 'x', n: 11 }, 'invalid_value', 'n'],
      [{ model: 'media/model-a', prompt: '' }, 'missing_parameter', 'prompt'],
      [{ model: 'media/model-a', prompt: 'x', output_format: 'gif' }, 'invalid_value', 'output_format'],
      [{ model: 'media/model-b', prompt: 'x', aspect_ratio: '7:5' }, 'invalid_value', 'aspect_ratio'],
      [{ prompt: 'x' }, 'missing_parameter', 'model'],
      [
        { model: 'media/model-a', prompt: 'x', input_references: [{ type: 'text' }] },
        'invalid_value',
        'input_references',
      ],
      [
        {
          model: 'media/model-a',
          prompt: 'x',
          input_references: [
            {
              type: 'image_url',
              image_url: { url: `data:image/png;base64,${Buffer.from('not an image').toString('base64')}` },
            },
          ],
        },
        'invalid_image',
        'image_input',
      ],
    ];
    for (const [body, code, field] of cases) {
      const res = await post(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect((await json(res)).error.metadata, JSON.stringify(body)).toEqual({ error_code: code, field });
    }
    const notJson = await fetch(`${gw.url}/api/v1/images`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.apiKey}` },
      body: '[1,2',
    });
    expect(notJson.status).toBe(400);
    expect((await json(notJson)).error.code).toBe(400);

    // A key whose guardrail allows only model-b: model-a is refused before anything is generated.
    const mgmt = client(gw.url, gw.managementKey);
    const key = (await mgmt('POST', '/keys', { name: 'images-b-only' })).body;
    const g = await mgmt('POST', '/guardrails', { name: 'b only', allowed_models: ['media/t2i/model-b'] });
    await mgmt('POST', `/guardrails/${g.body.data.id}/assignments/keys`, { key_hashes: [key.data.hash] });
    asked.length = 0;
    const refused = await post({ model: 'media/model-a', prompt: 'x' }, key.key);
    expect(refused.status).toBe(403);
    expect((await json(refused)).error.metadata.field).toBe('model');
    expect(asked).toEqual([]);
    const allowed = await post({ model: 'media/model-b', prompt: 'x' }, key.key);
    expect(allowed.status).toBe(200);

    // A management key is refused at the gateway; a key sent as x-api-key works as the bearer does.
    const mgmtKey = await post({ model: 'media/model-a', prompt: 'x' }, gw.managementKey);
    expect(mgmtKey.status).toBe(403);
    expect((await json(mgmtKey)).error.code).toBe(403);
    const viaHeader = await fetch(`${gw.url}/api/v1/images`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': gw.apiKey },
      body: JSON.stringify({ model: 'media/model-a', prompt: 'x' }),
    });
    expect(viaHeader.status).toBe(200);
  });

  it('openai images.generate: WxH and response_format b64_json or url; the URL serves the stored image', async () => {
    const openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
    const b64 = await openai.images.generate({
      model: 'media/model-b',
      prompt: 'a tall tower',
      size: '1024x1536',
    });
    const meta = await sharp(Buffer.from(b64.data?.[0]?.b64_json ?? '', 'base64')).metadata();
    expect(meta.height).toBe(2048); // the long side, 1536 px, is the 2K tier
    expect(Math.abs((meta.width ?? 0) / (meta.height ?? 1) - 2 / 3)).toBeLessThan(0.01);
    expect(b64.output_format).toBe('png');
    expect(asked[0]).toEqual({
      kind: 't2i',
      route: 'model-b',
      params: { size: '2K', aspect_ratio: '2:3' },
      images: [],
    });

    const linked = await openai.images
      .generate({
        model: 'media/model-a',
        prompt: 'a tower',
        response_format: 'url',
        size: 'auto',
        quality: 'high',
      })
      .withResponse();
    expect(linked.response.headers.get('x-gatehouse-dropped-fields')).toBe('quality');
    const url = linked.data.data?.[0]?.url ?? '';
    expect(url).toMatch(/\/files\/t2i\/.+\.png$/);
    const file = await fetch(url.replace(/^http:\/\/localhost:\d+/, media.url));
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('image/png');
  });

  it('openai images.generate with stream, and the AI SDK’s openai.image(id)', async () => {
    const openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
    const stream = await openai.images.generate({ model: 'media/model-a', prompt: 'dusk', stream: true });
    const events = [];
    for await (const event of stream) events.push(event);
    expect(events.map((e) => e.type)).toEqual(['image_generation.completed']);
    const done = events[0] as { b64_json: string; output_format: string };
    expect(done.output_format).toBe('png');
    expect((await sharp(Buffer.from(done.b64_json, 'base64')).metadata()).format).toBe('png');

    const { images } = await generateImage({
      model: createOpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey }).image('media/model-a'),
      prompt: 'two boats',
      n: 2,
      maxRetries: 0,
    });
    expect(images).toHaveLength(2);
    expect(asked.slice(1).map((a) => a.route)).toEqual(['model-a', 'model-a']);
  });

  it('openai images.edit: uploaded images (one or several) go to the image-to-image route; a mask where the route takes none is refused', async () => {
    const openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
    const [a, b] = [await png(40, 30), await png(30, 40)];
    const edited = await openai.images.edit({
      model: 'media/model-a',
      prompt: 'the same, at night',
      image: [
        await toFile(a, 'a.png', { type: 'image/png' }),
        await toFile(b, 'b.png', { type: 'image/png' }),
      ],
      n: 2,
    });
    expect(edited.data).toHaveLength(2);
    expect((await sharp(Buffer.from(edited.data?.[0]?.b64_json ?? '', 'base64')).metadata()).format).toBe(
      'png',
    );
    expect(asked.map((x) => [x.kind, x.route, x.images])).toEqual([
      ['i2i', 'model-a', [`image/png:${a.length}`, `image/png:${b.length}`]],
      ['i2i', 'model-a', [`image/png:${a.length}`, `image/png:${b.length}`]],
    ]);

    // The AI SDK's openai.image(id) sends input images as an edit's form.
    const { image } = await generateImage({
      model: createOpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey }).image('media/model-b'),
      prompt: { text: 'warmer', images: [a] },
      maxRetries: 0,
    });
    expect((await sharp(Buffer.from(image.uint8Array)).metadata()).format).toBe('png');
    expect(asked[2]).toMatchObject({ kind: 'i2i', route: 'model-b', images: [`image/png:${a.length}`] });

    // A JSON edit names its images by URL.
    const viaJson = await fetch(`${gw.url}/api/v1/images/edits`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.apiKey}` },
      body: JSON.stringify({
        model: 'media/model-a',
        prompt: 'x',
        images: [{ image_url: `data:image/png;base64,${b.toString('base64')}` }],
      }),
    });
    expect(viaJson.status).toBe(200);
    expect(asked[3]?.images).toEqual([`image/png:${b.length}`]);

    // Thunks, not promises: a call started before the loop awaits it would reject unhandled.
    const refusals: [() => Promise<unknown>, string, string][] = [
      [
        async () =>
          openai.images.edit({
            model: 'media/model-a',
            prompt: 'x',
            image: await toFile(a, 'a.png', { type: 'image/png' }),
            mask: await toFile(a, 'm.png', { type: 'image/png' }),
          }),
        'invalid_value',
        'mask',
      ],
      [
        async () =>
          openai.images.edit({
            model: 'media/model-a',
            prompt: 'x',
            image: await toFile(Buffer.from('not an image'), 'a.png', { type: 'image/png' }),
          }),
        'invalid_image',
        'image',
      ],
    ];
    for (const [call, code, field] of refusals) {
      const err = (await call().then(
        () => null,
        (e: unknown) => e,
      )) as InstanceType<typeof OpenAI.APIError>;
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect((err.error as { metadata?: unknown }).metadata).toEqual({ error_code: code, field });
    }
    const noImage = await fetch(`${gw.url}/api/v1/images/edits`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.apiKey}` },
      body: JSON.stringify({ model: 'media/model-a', prompt: 'x' }),
    });
    expect(noImage.status).toBe(400);
    expect((await json(noImage)).error.metadata).toEqual({ error_code: 'missing_parameter', field: 'image' });
  });

  it('openai images.edit with a mask (inpainting): only the transparent area is edited', async () => {
    const openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
    const red = await sharp({ create: { width: 256, height: 128, channels: 3, background: '#d02020' } })
      .png()
      .toBuffer();
    // Opaque on the left (kept), transparent on the right (edited).
    const alpha = Buffer.alloc(256 * 128);
    for (let y = 0; y < 128; y++) alpha.fill(255, y * 256, y * 256 + 128);
    const mask = await sharp({ create: { width: 256, height: 128, channels: 3, background: '#000' } })
      .joinChannel(alpha, { raw: { width: 256, height: 128, channels: 1 } })
      .png()
      .toBuffer();
    const edited = await openai.images.edit({
      model: 'media/model-b',
      prompt: 'a bright sun',
      image: await toFile(red, 'in.png', { type: 'image/png' }),
      mask: await toFile(mask, 'mask.png', { type: 'image/png' }),
    });
    expect(asked.at(-1)).toMatchObject({ kind: 'i2i', route: 'model-b' });
    expect(askedFrom.at(-1)).toEqual(['image_input', 'mask']);
    const out = Buffer.from(edited.data?.[0]?.b64_json ?? '', 'base64');
    const { data, info } = await sharp(out).raw().toBuffer({ resolveWithObject: true });
    const at = (x: number, y: number) => [
      ...data.subarray((y * info.width + x) * info.channels, (y * info.width + x) * info.channels + 3),
    ];
    // The kept side is the input, pixel for pixel; the edited side is drawn over.
    for (const y of [10, info.height / 2, info.height - 10])
      for (const x of [5, info.width / 4, info.width / 2 - 30]) expect(at(x, y)).toEqual([0xd0, 0x20, 0x20]);
    const right = [0, 0.5, 0.9].map((f) =>
      at(Math.round(info.width * 0.55 + f * info.width * 0.4), info.height / 2),
    );
    expect(right.some((px) => px.join() !== [0xd0, 0x20, 0x20].join())).toBe(true);

    // A JSON edit names its mask by URL, as OpenAI's JSON edits do.
    const viaJson = await fetch(`${gw.url}/api/v1/images/edits`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.apiKey}` },
      body: JSON.stringify({
        model: 'media/model-b',
        prompt: 'x',
        images: [{ image_url: `data:image/png;base64,${red.toString('base64')}` }],
        mask: { image_url: `data:image/png;base64,${mask.toString('base64')}` },
      }),
    });
    expect(viaJson.status).toBe(200);
    expect(askedFrom.at(-1)).toEqual(['image_input', 'mask']);
  });

  it('without a media service to reach, 404 naming the setting; with one down, 502 — both as OpenRouter errors', async () => {
    const linked = gw.services.mediaLink.url;
    try {
      gw.services.mediaLink.url = null;
      const off = await post({ model: 'media/model-a', prompt: 'x' });
      expect(off.status).toBe(404);
      expect((await json(off)).error.message).toContain('GATEHOUSE_MEDIA_URL');
      gw.services.mediaLink.url = 'http://127.0.0.1:1';
      const down = await post({ model: 'media/model-a', prompt: 'x' });
      expect(down.status).toBe(502);
      expect((await json(down)).error.code).toBe(502);
      const image = await generateImage({
        model: createOpenRouter({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey }).imageModel(
          'media/model-a',
        ),
        prompt: 'x',
        maxRetries: 0,
      }).catch((e: unknown) => e);
      expect(APICallError.isInstance(image)).toBe(true);
      expect((image as APICallError).statusCode).toBe(502);
    } finally {
      gw.services.mediaLink.url = linked;
    }
  });
});
