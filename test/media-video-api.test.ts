/**
 * OpenRouter's video API through the gateway: `@openrouter/sdk`'s `videoGeneration.*` and the AI
 * SDK's `openrouter.videoModel(id)`, with the gateway's base URL, submit a job (202), poll it and
 * read its video. The media service admits and bills the key as its own routes do, runs the job in
 * the background and keeps it in the gateway's database: another media process polls the same job,
 * a job whose process stopped ends failed, and a job is its workspace's alone.
 */

import { createHmac } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OpenRouter } from '@openrouter/sdk';
import { experimental_generateVideo as generateVideo } from 'ai-v7';
import { createOpenRouter } from 'openrouter-ai-sdk-provider-v3';
import sharp from 'sharp';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadMediaConfig } from '../src/media/config.js';
import { LocalGenerator } from '../src/media/generators/local.js';
import { ABANDONED } from '../src/media/jobs/store.js';
import { type MediaHandle, startMedia } from '../src/media/server.js';
import {
  type GenerateRequest,
  MediaError,
  type MediaGenerator,
  type MediaRoute,
} from '../src/media/types.js';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { client, otherTenants } from './support/http.js';
import { type HttpsReceiver, startHttpsReceiver } from './support/https-receiver.js';
import { waitFor } from './support/processes.js';

const PRICE = 0.25;
/** An MP4's first box: what a provider's video starts with. */
const MP4 = Buffer.concat([
  Buffer.from([0, 0, 0, 0x18]),
  Buffer.from('ftypisom'),
  Buffer.from([0, 0, 2, 0]),
  Buffer.from('isomiso2'),
  Buffer.alloc(64, 7),
]);
const json = async (res: Response): Promise<any> => res.json();

describe('the video API through the gateway', () => {
  let dir: string;
  let gw: TestGateway;
  let media: MediaHandle;
  let sdk: OpenRouter;
  let others: { name: string; key: string }[];
  /** Where the jobs' callbacks go (HTTPS on loopback: the media processes allow internal addresses). */
  let hooks: HttpsReceiver;
  const asked: { route: string; params: GenerateRequest['params']; images: string[] }[] = [];
  /** Set by a test: the next generation waits for it, or fails with it. */
  let gate: Promise<void> | null = null;
  let failWith: Error | null = null;
  const local = new LocalGenerator();
  const recording: MediaGenerator = {
    async generate(req, signal) {
      asked.push({ route: req.route, params: req.params, images: req.images.map((i) => i.contentType) });
      if (gate) await gate;
      if (failWith) throw failWith;
      return req.route === 'mp4-model'
        ? [{ data: MP4, contentType: 'video/mp4', extension: 'mp4' }]
        : local.generate(req, signal);
    },
  };
  const mp4Route: MediaRoute = {
    kind: 'video',
    name: 'mp4-model',
    provider: 'local',
    providerModel: 'mp4',
    params: { duration: { type: 'integer', enum: [4, 8], default: 4 } },
  };

  const startMediaProcess = async () => {
    const config = loadMediaConfig({
      MEDIA_PORT: '0',
      MEDIA_HOST: '127.0.0.1',
      GATEHOUSE_MEDIA_STORE_DIR: join(dir, 'objects'),
      GATEHOUSE_MEDIA_FETCH_PRIVATE: 'on',
    });
    const routes = [
      ...config.routes.map((r) => (r.kind === 'video' ? { ...r, priceUsd: PRICE } : r)),
      mp4Route,
    ];
    return startMedia(
      { ...config, routes },
      {
        log: false,
        generators: { local: recording },
        keys: gw.services.keys,
        billing: gw.services.mediaBilling,
        videoJobs: gw.services.mediaVideoJobs,
        videoWebhooks: gw.services.workspaceWebhooks,
        // Beats (and sweeps for abandoned jobs) often, so that a test sees a sweep.
        videoHeartbeatMs: 200,
        videoCallbacks: { ca: hooks.ca, retryDelaysMs: [50] },
      },
    );
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'media-video-'));
    hooks = await startHttpsReceiver();
    gw = await startTestGateway('sqlite', { env: { GATEHOUSE_RATE_LIMIT_REQUESTS: '1000' } });
    media = await startMediaProcess();
    gw.services.mediaLink.url = media.url;
    sdk = new OpenRouter({
      serverURL: `${gw.url}/api/v1`,
      apiKey: gw.apiKey,
      retryConfig: { strategy: 'none' },
    });
    others = await otherTenants(gw, 'Video neighbours', 10);
  });
  afterAll(async () => {
    await media?.close();
    await gw?.stop();
    await hooks?.close();
    await rm(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    asked.length = 0;
    gate = null;
    failWith = null;
  });

  const submit = (body: unknown, key: string | null = gw.apiKey) =>
    fetch(`${gw.url}/api/v1/videos`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
      body: JSON.stringify(body),
    });
  const poll = (id: string, key = gw.apiKey, base = `${gw.url}/api/v1`) =>
    fetch(`${base}/videos/${id}`, { headers: { authorization: `Bearer ${key}` } });
  /** Polls until the job is no longer pending or running. */
  const settled = async (id: string) => {
    for (let i = 0; i < 400; i++) {
      const job = await json(await poll(id));
      if (job.status !== 'pending' && job.status !== 'in_progress') return job;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`job ${id} did not settle`);
  };
  /** The event the callback receiver got at `path`, parsed. */
  const hookFor = async (path: string) => {
    const got = await waitFor(`a callback at ${path}`, () => hooks.received.find((r) => r.path === path));
    return { headers: got.headers, body: JSON.parse(got.body) };
  };
  const usage = async () => (await client(gw.url, gw.apiKey)('GET', '/key')).body.data.usage as number;

  it('videoGeneration.generate → getGeneration → getVideoContent with the SDK; the price is charged once', async () => {
    const before = await usage();
    const job = await sdk.videoGeneration.generate({
      videoGenerationRequest: { model: 'media/mp4-model', prompt: 'a lighthouse in a storm', duration: 8 },
    });
    expect(job.id).toMatch(/^gen-vid-\d{10}-[A-Za-z0-9]{20}$/);
    expect(job.pollingUrl).toBe(`${gw.url}/api/v1/videos/${job.id}`);
    expect(['pending', 'in_progress', 'completed']).toContain(job.status);

    let polled = await sdk.videoGeneration.getGeneration({ jobId: job.id });
    for (let i = 0; i < 400 && polled.status !== 'completed'; i++) {
      await new Promise((r) => setTimeout(r, 25));
      polled = await sdk.videoGeneration.getGeneration({ jobId: job.id });
    }
    expect(polled.status).toBe('completed');
    expect(polled.unsignedUrls).toHaveLength(1);
    expect(polled.usage).toEqual({ cost: 0, isByok: false });
    expect(asked).toEqual([{ route: 'mp4-model', params: { duration: 8 }, images: [] }]);

    const content = await sdk.videoGeneration.getVideoContent({ jobId: job.id });
    const bytes = Buffer.from(await new Response(content).arrayBuffer());
    expect(bytes.equals(MP4)).toBe(true);
    // The stored file is at its URL too.
    const stored = await fetch(polled.unsignedUrls?.[0] as string);
    expect(stored.headers.get('content-type')).toBe('video/mp4');
    expect(await usage()).toBeCloseTo(before, 8); // mp4-model is free

    // The priced route charges its price once the video is made.
    const priced = await json(await submit({ model: 'media/video-model', prompt: 'x', duration: 2 }));
    const done = await settled(priced.id);
    expect(done.usage).toEqual({ cost: PRICE, is_byok: false });
    expect((await usage()) - before).toBeCloseTo(PRICE, 8);
    // The built-in route makes an MP4 for this API, which the SDK's content call takes as it is.
    const made = await sdk.videoGeneration.getVideoContent({ jobId: priced.id });
    const clip = Buffer.from(await new Response(made).arrayBuffer());
    expect(clip.toString('latin1', 4, 8)).toBe('ftyp');
    expect(clip.includes(Buffer.from('avc1'))).toBe(true);
  });

  it('the AI SDK video model: size becomes the route’s resolution, the first frame its image; the video is downloaded', async () => {
    const frame = await sharp({ create: { width: 64, height: 36, channels: 3, background: '#c63' } })
      .png()
      .toBuffer();
    const { video } = await generateVideo({
      model: createOpenRouter({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey }).videoModel(
        'media/video-model',
        {
          pollIntervalMs: 50,
        },
      ),
      prompt: { text: 'waves on a beach', image: frame },
      resolution: '1280x720',
      duration: 2,
      maxRetries: 0,
      // The SDK's own download refuses loopback hosts (SSRF protection); this media service is local.
      download: async ({ url }) => {
        const res = await fetch(url);
        return {
          data: new Uint8Array(await res.arrayBuffer()),
          mediaType: res.headers.get('content-type') ?? undefined,
        };
      },
    });
    // The built-in generator makes an H.264 MP4 for this API, at the asked resolution.
    expect(video.mediaType).toBe('video/mp4');
    const clip = Buffer.from(video.uint8Array);
    expect(clip.toString('latin1', 4, 8)).toBe('ftyp');
    const tkhd = clip.indexOf('tkhd', 0, 'latin1') + 4; // the track header's payload
    expect([clip.readUInt32BE(tkhd + 76) >> 16, clip.readUInt32BE(tkhd + 80) >> 16]).toEqual([1280, 720]);
    expect(asked).toEqual([
      {
        route: 'video-model',
        params: expect.objectContaining({ duration: 2, resolution: '720p', output_format: 'mp4' }),
        images: ['image/png'],
      },
    ]);
  });

  it('fields the route lacks are dropped and listed; GET /videos/models lists the video routes', async () => {
    const res = await submit({
      model: 'media/video-model',
      prompt: 'x',
      duration: 2,
      aspect_ratio: '16:9',
      generate_audio: true,
      callback_url: 'https://example.com/hook',
      user: 'u-1',
    });
    expect(res.status).toBe(202);
    expect(res.headers.get('x-gatehouse-dropped-fields')).toBe('generate_audio,aspect_ratio');
    await settled((await json(res)).id);

    const models = await sdk.videoGeneration.listVideosModels();
    expect(models.data.map((m) => m.id)).toEqual(['media/video-model', 'media/mp4-model']);
    const builtIn = models.data[0];
    expect(builtIn?.supportedDurations).toEqual([2, 3, 4, 5]);
    expect(builtIn?.supportedResolutions).toEqual(['480p', '720p']);
    expect(builtIn?.supportedFrameImages).toEqual(['first_frame']);
    expect(builtIn?.pricingSkus).toEqual({ video: String(PRICE) });
  });

  it('refusals come at once, in OpenRouter’s envelope: unknown model, bad values, a last frame, no key, a management key', async () => {
    const cases: [unknown, number, string, string | undefined][] = [
      [{ model: 'media/nope', prompt: 'x' }, 404, 'not_found', 'model'],
      [{ model: 'media/video-model', prompt: 'x', duration: 9 }, 400, 'invalid_value', 'duration'],
      [{ model: 'media/video-model', prompt: 'x', size: '640x640' }, 400, 'invalid_value', 'size'],
      [{ model: 'media/video-model' }, 400, 'missing_parameter', 'prompt'],
      [
        { model: 'media/video-model', prompt: 'x', previous_job_id: 'gen-vid-1' },
        400,
        'invalid_value',
        'previous_job_id',
      ],
      [
        {
          model: 'media/video-model',
          prompt: 'x',
          frame_images: [
            { type: 'image_url', image_url: { url: 'https://example.com/a.png' }, frame_type: 'last_frame' },
          ],
        },
        400,
        'invalid_value',
        'frame_images',
      ],
    ];
    for (const [body, status, code, field] of cases) {
      const res = await submit(body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      const { error } = await json(res);
      expect(error.code).toBe(status);
      expect(error.metadata).toEqual({ error_code: code, ...(field ? { field } : {}) });
    }
    expect(asked).toEqual([]);
    expect((await submit({ model: 'media/video-model', prompt: 'x' }, null)).status).toBe(401);
    const mgmt = await submit({ model: 'media/video-model', prompt: 'x' }, gw.managementKey);
    expect(mgmt.status).toBe(403);
    expect((await poll('gen-vid-1-x', gw.managementKey)).status).toBe(403);
    // The SDK reads a refusal as its error class.
    const err = await sdk.videoGeneration
      .generate({ videoGenerationRequest: { model: 'media/nope', prompt: 'x' } })
      .then(
        () => null,
        (e: { statusCode: number }) => e,
      );
    expect(err?.statusCode).toBe(404);
  });

  it('a job is its workspace’s alone: another workspace or organization polls a 404', async () => {
    const { id } = await json(await submit({ model: 'media/video-model', prompt: 'mine', duration: 2 }));
    await settled(id);
    for (const other of others) {
      const res = await poll(id, other.key);
      expect(res.status, other.name).toBe(404);
      expect((await json(res)).error.metadata).toEqual({ error_code: 'not_found', field: 'id' });
      const content = await fetch(`${gw.url}/api/v1/videos/${id}/content`, {
        headers: { authorization: `Bearer ${other.key}` },
      });
      expect(content.status, other.name).toBe(404);
    }
  });

  it('a running job is polled from another media process; content is 409 until it is done', async () => {
    let open: () => void = () => {};
    gate = new Promise((resolve) => {
      open = resolve;
    });
    const { id } = await json(await submit({ model: 'media/mp4-model', prompt: 'slow' }));
    await expect.poll(async () => (await json(await poll(id))).status).toBe('in_progress');
    const early = await fetch(`${gw.url}/api/v1/videos/${id}/content`, {
      headers: { authorization: `Bearer ${gw.apiKey}` },
    });
    expect(early.status).toBe(409);
    expect((await json(early)).error.metadata.error_code).toBe('not_ready');

    const second = await startMediaProcess();
    try {
      const there = await json(await poll(id, gw.apiKey, `${second.url}/api/v1`));
      expect(there).toMatchObject({ id, status: 'in_progress' });
      open();
      await settled(id);
      const done = await json(await poll(id, gw.apiKey, `${second.url}/api/v1`));
      expect(done.status).toBe('completed');
      const content = await fetch(`${second.url}/api/v1/videos/${id}/content`, {
        headers: { authorization: `Bearer ${gw.apiKey}` },
      });
      expect(Buffer.from(await content.arrayBuffer()).equals(MP4)).toBe(true);
    } finally {
      open();
      await second.close();
    }
  });

  it('a failed generation ends the job failed with its message, uncharged; an abandoned job ends failed', async () => {
    const before = await usage();
    failWith = new MediaError(502, 'provider_error', 'The provider failed (status 500)');
    const { id } = await json(await submit({ model: 'media/video-model', prompt: 'doomed', duration: 2 }));
    const failed = await settled(id);
    expect(failed).toMatchObject({ id, status: 'failed', error: 'The provider failed (status 500)' });
    expect(failed.unsigned_urls).toBeUndefined();
    expect(await usage()).toBeCloseTo(before, 8);

    // A job whose process stopped beating (it died) is failed by the next poll.
    const org = gw.organizationId;
    const ws = (await client(gw.url, gw.apiKey)('GET', '/key')).body.data.workspace_id as string;
    const long = Date.now() - 10 * 60_000;
    await gw.services.db
      .insertInto('media_video_jobs')
      .values({
        id: 'gen-vid-1-abandonedabandonedaband',
        organization_id: org,
        workspace_id: ws,
        model: 'media/video-model',
        status: 'in_progress',
        owner: 'media-gone',
        heartbeat_at: long,
        outputs_json: null,
        cost_usd: null,
        error: null,
        created_at: long,
        completed_at: null,
        expires_at: Date.now() + 86_400_000,
        callback_url: `${hooks.url}/dead`,
        polling_url: `${gw.url}/api/v1/videos/gen-vid-1-abandonedabandonedaband`,
      })
      .execute();
    const abandoned = await json(await poll('gen-vid-1-abandonedabandonedaband'));
    expect(abandoned).toMatchObject({ status: 'failed', error: ABANDONED });
    // Its callback hears of it once, whichever process failed it (a poll, or a sweep before it).
    const event = await hookFor('/dead');
    expect(event.body).toMatchObject({
      type: 'video.generation.failed',
      data: { id: 'gen-vid-1-abandonedabandonedaband', status: 'failed', error: ABANDONED },
    });
    await new Promise((r) => setTimeout(r, 500));
    expect(hooks.received.filter((r) => r.path === '/dead')).toHaveLength(1);
  });

  it('callback_url: the job’s end is POSTed there, as OpenRouter’s webhook event — completed or failed', async () => {
    const job = await sdk.videoGeneration.generate({
      videoGenerationRequest: {
        model: 'media/mp4-model',
        prompt: 'a lighthouse',
        callbackUrl: `${hooks.url}/done?team=7`,
      },
    });
    const done = await hookFor('/done?team=7');
    expect(done.headers['x-openrouter-idempotency-key']).toBe(`${job.id}-completed`);
    expect(done.body).toEqual({
      type: 'video.generation.completed',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      data: {
        id: job.id,
        polling_url: `${gw.url}/api/v1/videos/${job.id}`,
        status: 'completed',
        unsigned_urls: [expect.stringMatching(/\.mp4$/)],
        usage: { cost: 0, is_byok: false },
        model: 'media/mp4-model',
      },
    });
    // What the event says is what a poll reads.
    const polled = await json(await poll(job.id));
    expect(polled.unsigned_urls).toEqual(done.body.data.unsigned_urls);

    failWith = new MediaError(502, 'provider_error', 'The provider failed (status 500)');
    const { id } = await json(
      await submit({
        model: 'media/video-model',
        prompt: 'doomed',
        duration: 2,
        callback_url: `${hooks.url}/failed`,
      }),
    );
    const failed = await hookFor('/failed');
    expect(failed.headers['x-openrouter-idempotency-key']).toBe(`${id}-failed`);
    expect(failed.body).toMatchObject({
      type: 'video.generation.failed',
      data: { id, status: 'failed', error: 'The provider failed (status 500)', model: 'media/video-model' },
    });

    // Only https callbacks are taken, refused before anything runs.
    const plain = await submit({
      model: 'media/video-model',
      prompt: 'x',
      callback_url: 'http://hooks.example/x',
    });
    expect(plain.status).toBe(400);
    expect((await json(plain)).error.metadata).toMatchObject({
      error_code: 'invalid_value',
      field: 'callback_url',
    });
  });

  it('a workspace’s default callback URL and signing secret: events signed as OpenRouter signs them, the secret shown once', async () => {
    const mgmt = client(gw.url, gw.managementKey);
    const ws = (await client(gw.url, gw.apiKey)('GET', '/key')).body.data.workspace_id as string;
    /** Whether `header` is OpenRouter's signature of `body` under `secret`, made just now. */
    const signedBy = (header: unknown, body: string, secret: string) => {
      const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(header));
      if (!m || Math.abs(Date.now() / 1000 - Number(m[1])) > 300) return false;
      return createHmac('sha256', secret).update(`${m[1]},${body}`).digest('hex') === m[2];
    };
    const rawHook = (path: string) =>
      waitFor(`a callback at ${path}`, () => hooks.received.find((r) => r.path === path));

    // The workspace's settings: an https default callback (http refused), no secret yet.
    const http = await mgmt('PATCH', `/workspaces/${ws}`, { video_callback_url: 'http://hooks.example/x' });
    expect(http.status).toBe(400);
    expect(http.body.error.message).toMatch(/video_callback_url/);
    const set = await mgmt('PATCH', `/workspaces/${ws}`, { video_callback_url: `${hooks.url}/default` });
    expect(set.status).toBe(200);
    expect(set.body.data).toMatchObject({
      video_callback_url: `${hooks.url}/default`,
      has_webhook_secret: false,
    });

    const made = await mgmt('POST', `/workspaces/${ws}/webhook-secret`);
    expect(made.status).toBe(201);
    const secret = made.body.data.signing_secret as string;
    expect(secret).toMatch(/^whsec_[\w-]{32}$/);
    const read = await mgmt('GET', `/workspaces/${ws}`);
    expect(read.body.data.has_webhook_secret).toBe(true);
    expect(JSON.stringify(read.body)).not.toContain(secret);

    // A job without callback_url reports to the workspace's, signed; one with its own goes there.
    const { id } = await json(await submit({ model: 'media/mp4-model', prompt: 'by default' }));
    const byDefault = await rawHook('/default');
    expect(JSON.parse(byDefault.body).data.id).toBe(id);
    expect(signedBy(byDefault.headers['x-openrouter-signature'], byDefault.body, secret)).toBe(true);
    await submit({ model: 'media/mp4-model', prompt: 'mine', callback_url: `${hooks.url}/own` });
    const own = await rawHook('/own');
    expect(signedBy(own.headers['x-openrouter-signature'], own.body, secret)).toBe(true);

    // A new secret replaces the old one at once.
    const rotated = (await mgmt('POST', `/workspaces/${ws}/webhook-secret`)).body.data
      .signing_secret as string;
    expect(rotated).not.toBe(secret);
    await submit({ model: 'media/mp4-model', prompt: 'rotated', callback_url: `${hooks.url}/rotated` });
    const after = await rawHook('/rotated');
    expect(signedBy(after.headers['x-openrouter-signature'], after.body, rotated)).toBe(true);
    expect(signedBy(after.headers['x-openrouter-signature'], after.body, secret)).toBe(false);

    // Removed: events go unsigned; removing it again is a 404.
    expect((await mgmt('DELETE', `/workspaces/${ws}/webhook-secret`)).status).toBe(200);
    expect((await mgmt('DELETE', `/workspaces/${ws}/webhook-secret`)).status).toBe(404);
    await submit({ model: 'media/mp4-model', prompt: 'plain', callback_url: `${hooks.url}/plain` });
    expect((await rawHook('/plain')).headers['x-openrouter-signature']).toBeUndefined();

    // The audit log has each change, the secret masked.
    const log = await mgmt('GET', '/audit-log?action=workspace.rotate_webhook_secret');
    expect(log.body.data).toHaveLength(2);
    expect(log.body.data[0].after).toEqual({ workspace_id: ws, signing_secret: '[redacted]' });
    expect(JSON.stringify(log.body)).not.toContain('whsec_');
    const removed = await mgmt('GET', '/audit-log?action=workspace.delete_webhook_secret');
    expect(removed.body.data.map((e: { status: number }) => e.status)).toEqual([404, 200]);

    // Cleared, a job without callback_url reports to nobody.
    expect(
      (await mgmt('PATCH', `/workspaces/${ws}`, { video_callback_url: null })).body.data.video_callback_url,
    ).toBe(null);
    const before = hooks.received.length;
    await settled((await json(await submit({ model: 'media/mp4-model', prompt: 'quiet' }))).id);
    await new Promise((r) => setTimeout(r, 200));
    expect(hooks.received).toHaveLength(before);
  });
});
