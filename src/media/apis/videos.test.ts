import { describe, expect, it } from 'vitest';
import { mediaFailure as failure } from '../../../test/support/media-errors.js';
import { DEFAULT_ROUTES } from '../config.js';
import type { MediaRoute } from '../types.js';
import { jobAnswer, videoCall, videoJobId, videoModels } from './videos.js';

const routes = DEFAULT_ROUTES;
const call = (extra: object, list: MediaRoute[] = routes) =>
  videoCall({ model: 'media/video-model', prompt: 'x', ...extra }, list);
const ref = (url: string) => ({ type: 'image_url', image_url: { url } });
/** What the API asks of the built-in route, which makes MP4 on request. */
const MP4 = { output_format: 'mp4' };

describe('videoCall (OpenRouter video API)', () => {
  it('names the video route by media/<name> or <name>; the route’s own fields pass, others are dropped', () => {
    const c = call({ duration: 4, resolution: '720p', camera_fixed: true, seed: 7, user: 'u', provider: {} });
    expect(c.route).toMatchObject({ kind: 'video', name: 'video-model' });
    expect(c.input).toEqual({ prompt: 'x', ...MP4, duration: 4, resolution: '720p', camera_fixed: true });
    expect(c.dropped).toEqual(['seed']);
    // The API's content is MP4: asked of a route that offers it, unless the caller chose a format.
    expect(call({ output_format: 'webp' }).input).toEqual({ prompt: 'x', output_format: 'webp' });
    expect(videoCall({ model: 'video-model', prompt: 'x' }, routes).route.name).toBe('video-model');
    expect(failure(() => videoCall({ model: 'media/model-a', prompt: 'x' }, routes))).toEqual({
      status: 404,
      code: 'not_found',
      field: 'model',
    });
    expect(failure(() => videoCall({ prompt: 'x' }, routes))).toMatchObject({ code: 'missing_parameter' });
    expect(failure(() => videoCall([1], routes))).toMatchObject({ code: 'invalid_body' });
  });

  it('callback_url is kept (an https URL, as OpenRouter requires); anything else is a 400 naming it', () => {
    const c = call({ callback_url: 'https://hooks.example.com/video?team=7' });
    expect(c.callbackUrl).toBe('https://hooks.example.com/video?team=7');
    expect(c.dropped).toEqual([]);
    expect(c.input).not.toHaveProperty('callback_url');
    expect(call({}).callbackUrl).toBeNull();
    for (const bad of [
      'http://hooks.example.com/x',
      'not a url',
      'https://user:pw@hooks.example.com/',
      7,
      `https://x.example/${'a'.repeat(2048)}`,
    ])
      expect(failure(() => call({ callback_url: bad }))).toEqual({
        status: 400,
        code: 'invalid_value',
        field: 'callback_url',
      });
  });

  it('size WxH becomes the resolution of its short side; one the route does not make is a 400 naming size', () => {
    expect(call({ size: '1280x720' }).input).toEqual({ prompt: 'x', ...MP4, resolution: '720p' });
    expect(call({ size: '480x854' }).input).toEqual({ prompt: 'x', ...MP4, resolution: '480p' });
    expect(failure(() => call({ size: '1080x1920' }))).toEqual({
      status: 400,
      code: 'invalid_value',
      field: 'size',
    });
    expect(failure(() => call({ size: 'big' }))).toMatchObject({ code: 'invalid_value', field: 'size' });
    // A given resolution wins over size's; aspect_ratio the route lacks is dropped.
    const both = call({ size: '854x480', resolution: '720p', aspect_ratio: '16:9' });
    expect(both.input).toEqual({ prompt: 'x', ...MP4, resolution: '720p' });
    expect(both.dropped).toEqual(['aspect_ratio']);
    // A route with an aspect ratio gets the nearest one.
    const wide: MediaRoute = {
      kind: 'video',
      name: 'wide',
      provider: 'local',
      providerModel: 'w',
      params: {
        resolution: { type: 'string', enum: ['720p', '1080p'] },
        aspect_ratio: { type: 'string', enum: ['16:9', '9:16', '1:1'] },
      },
    };
    expect(call({ model: 'media/wide', size: '1080x1920' }, [wide]).input).toEqual({
      prompt: 'x',
      resolution: '1080p',
      aspect_ratio: '9:16',
    });
    expect(failure(() => call({ model: 'media/wide', size: '640x480' }, [wide]))).toEqual({
      status: 400,
      code: 'invalid_value',
      field: 'size',
    });
  });

  it('a first frame fills the route’s image, image references its list; a last frame and continuations are refused', () => {
    const c = call({
      frame_images: [{ ...ref('https://a.example/f.png'), frame_type: 'first_frame' }],
      input_references: [ref('https://a.example/r1.png'), { type: 'input_audio', input_audio: {} }],
    });
    expect(c.input).toEqual({
      prompt: 'x',
      ...MP4,
      image: 'https://a.example/f.png',
      reference_images: ['https://a.example/r1.png'],
    });
    expect(c.dropped).toEqual(['input_references']);
    const last = { frame_images: [{ ...ref('https://a.example/l.png'), frame_type: 'last_frame' }] };
    expect(failure(() => call(last))).toEqual({ status: 400, code: 'invalid_value', field: 'frame_images' });
    const two = { ...ref('https://a.example/f.png'), frame_type: 'first_frame' };
    expect(failure(() => call({ frame_images: [two, two] }))).toMatchObject({ field: 'frame_images' });
    expect(failure(() => call({ frame_images: 'x' }))).toMatchObject({ code: 'invalid_type' });
    expect(failure(() => call({ input_references: [{ type: 'image_url' }] }))).toMatchObject({
      field: 'input_references',
    });
    expect(failure(() => call({ previous_job_id: 'gen-vid-1-a' }))).toEqual({
      status: 400,
      code: 'invalid_value',
      field: 'previous_job_id',
    });
  });
});

describe('video job answers', () => {
  it('ids as OpenRouter shapes them; a job as its poll answers it', () => {
    expect(videoJobId(1_795_000_000_123)).toMatch(/^gen-vid-1795000000-[A-Za-z0-9]{20}$/);
    expect(videoJobId()).not.toBe(videoJobId());
    const base = { id: 'j', outputs: [], costUsd: null, error: null };
    expect(jobAnswer({ ...base, status: 'pending' }, 'http://gw/v/j')).toEqual({
      id: 'j',
      polling_url: 'http://gw/v/j',
      status: 'pending',
    });
    const outputs = [{ key: 'video/k.webp', url: 'http://m/files/video/k.webp', contentType: 'image/webp' }];
    expect(jobAnswer({ ...base, status: 'completed', outputs, costUsd: 0.5 }, 'u')).toEqual({
      id: 'j',
      polling_url: 'u',
      status: 'completed',
      unsigned_urls: ['http://m/files/video/k.webp'],
      usage: { cost: 0.5, is_byok: false },
    });
    expect(jobAnswer({ ...base, status: 'failed', error: 'boom' }, 'u')).toMatchObject({ error: 'boom' });
  });

  it('the model list describes each video route', () => {
    const [model] = videoModels(routes, 1).data;
    expect(model).toMatchObject({
      id: 'media/video-model',
      supported_durations: [2, 3, 4, 5],
      supported_resolutions: ['480p', '720p'],
      supported_aspect_ratios: null,
      supported_frame_images: ['first_frame'],
      pricing_skus: null,
    });
    expect(model?.allowed_passthrough_parameters).toEqual([
      'duration',
      'resolution',
      'camera_fixed',
      'output_format',
    ]);
  });
});
