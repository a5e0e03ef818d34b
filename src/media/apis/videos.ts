/**
 * OpenRouter's video API (`POST /api/v1/videos`, what `@openrouter/sdk`'s `videoGeneration.generate`
 * and the AI SDK's `openrouter.videoModel(id)` send) turned into a call of a video route, and the
 * answers it polls for. The model id names a route (`media/<name>` → `video/<name>`); fields become
 * the route's parameters where the route has an equivalent and are otherwise dropped and listed
 * (`x-gatehouse-dropped-fields`). Pure: no I/O, errors are MediaErrors naming the field.
 */

import { randomInt } from 'node:crypto';
import { isObj } from '../../formats/validate.js';
import { httpsCallbackUrl } from '../../lib/callback-url.js';
import type { VideoJob } from '../jobs/store.js';
import { MediaError, type MediaRoute, providerSlugOf } from '../types.js';
import { MEDIA_AUTHOR, nearestRatio } from './images.js';

export interface VideoCall {
  route: MediaRoute;
  /** The model as the caller named it. */
  model: string;
  /** The route's request: `prompt` and its parameters (validateGeneration checks it). */
  input: Record<string, unknown>;
  /** Fields the route has no equivalent for, left out. */
  dropped: string[];
  /** Where the job's end is POSTed (`callback_url`, HTTPS), or null. */
  callbackUrl: string | null;
}

/** Fields read here, never passed or listed as dropped. */
const READ_HERE = new Set([
  'model',
  'prompt',
  'size',
  'resolution',
  'aspect_ratio',
  'frame_images',
  'input_references',
  'previous_job_id',
  'callback_url',
]);
/** Fields that steer the gateway or identify the caller, not the video: ignored. */
const IGNORED = new Set(['provider', 'user', 'session_id', 'trace']);

const bad = (code: string, field: string, message: string) => new MediaError(400, code, message, field);

/** The video route of a model id (`media/<name>` or `<name>`). */
export function videoRoute(routes: MediaRoute[], model: string): MediaRoute | undefined {
  const name = model.startsWith(`${MEDIA_AUTHOR}/`) ? model.slice(MEDIA_AUTHOR.length + 1) : model;
  return routes.find((r) => r.kind === 'video' && r.name === name);
}

/** An OpenRouter video request as a video route call (see the module comment). */
export function videoCall(body: unknown, routes: MediaRoute[]): VideoCall {
  if (!isObj(body)) throw bad('invalid_body', 'body', 'The body must be a JSON object');
  const { model } = body;
  if (typeof model !== 'string' || model === '')
    throw bad('missing_parameter', 'model', 'model is required (a video model id, e.g. media/video-model)');
  const route = videoRoute(routes, model);
  if (!route) throw new MediaError(404, 'not_found', `There is no video model ${model}`, 'model');
  if (body.previous_job_id !== undefined && body.previous_job_id !== null)
    throw bad('invalid_value', 'previous_job_id', `${model} does not continue earlier videos`);

  const input: Record<string, unknown> = { prompt: body.prompt };
  const dropped: string[] = [];
  for (const [key, value] of Object.entries(body)) {
    if (READ_HERE.has(key) || IGNORED.has(key) || value === undefined || value === null) continue;
    const spec = route.params[key];
    if (spec && spec.type !== 'image' && spec.type !== 'image_urls') input[key] = value;
    else dropped.push(key);
  }
  mapFormat(body, route, input, dropped);
  mapImages(body, route, input, dropped);
  // The API's content is `video/mp4` (its clients take nothing else): asked of a route that offers
  // it as its `output_format`, unless the caller chose one.
  const output = route.params.output_format;
  if (input.output_format === undefined && output?.type === 'string' && output.enum?.includes('mp4'))
    input.output_format = 'mp4';
  return { route, model, input, dropped, callbackUrl: callbackOf(body.callback_url) };
}

/** `callback_url`: an https URL (as OpenRouter requires), at most 2,048 characters; null when absent. */
function callbackOf(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  const url = httpsCallbackUrl(value);
  if (url === null)
    throw bad(
      'invalid_value',
      'callback_url',
      'callback_url must be an https:// URL (at most 2,048 characters)',
    );
  return url;
}

/**
 * `resolution` and `aspect_ratio` pass where the route has them; `size` (`WxH`) becomes the
 * resolution of its short side (`1280x720` → `720p`) and, where the route takes one, its nearest
 * aspect ratio.
 */
function mapFormat(
  body: Record<string, unknown>,
  route: MediaRoute,
  input: Record<string, unknown>,
  dropped: string[],
): void {
  const resolution = route.params.resolution;
  const ratio = route.params.aspect_ratio;
  if (body.resolution !== undefined && body.resolution !== null) {
    if (resolution) input.resolution = body.resolution;
    else dropped.push('resolution');
  }
  if (body.aspect_ratio !== undefined && body.aspect_ratio !== null) {
    if (ratio) input.aspect_ratio = body.aspect_ratio;
    else dropped.push('aspect_ratio');
  }
  if (body.size === undefined || body.size === null) return;
  const pixels = typeof body.size === 'string' ? /^(\d{2,5})x(\d{2,5})$/.exec(body.size) : null;
  if (!pixels) throw bad('invalid_value', 'size', 'size must be WIDTHxHEIGHT pixels, e.g. 1280x720');
  const [w, h] = [Number(pixels[1]), Number(pixels[2])];
  if (!resolution && !ratio) return void dropped.push('size');
  if (resolution && input.resolution === undefined) {
    const tier = `${Math.min(w, h)}p`;
    if (resolution.type === 'string' && resolution.enum && !resolution.enum.includes(tier))
      throw bad(
        'invalid_value',
        'size',
        `${route.name} makes videos of ${resolution.enum.join(', ')} (the short side of size)`,
      );
    input.resolution = tier;
  }
  if (ratio?.type === 'string' && ratio.enum && input.aspect_ratio === undefined)
    input.aspect_ratio = nearestRatio(w / h, ratio.enum);
}

/**
 * `frame_images`' first frame fills the route's single image parameter; `input_references`' images
 * its list of reference images. A last frame no route takes is refused (it would change the video);
 * audio and video references are dropped, as OpenRouter drops them for models that ignore them.
 */
function mapImages(
  body: Record<string, unknown>,
  route: MediaRoute,
  input: Record<string, unknown>,
  dropped: string[],
): void {
  const params = Object.entries(route.params);
  const single = params.find(([, s]) => s.type === 'image')?.[0];
  const list = params.find(([, s]) => s.type === 'image_urls')?.[0];

  const frames = body.frame_images;
  if (frames !== undefined && frames !== null) {
    if (!Array.isArray(frames)) throw bad('invalid_type', 'frame_images', 'frame_images must be a list');
    for (const [i, frame] of frames.entries()) {
      const url = isObj(frame) && isObj(frame.image_url) ? frame.image_url.url : undefined;
      if (!isObj(frame) || typeof url !== 'string')
        throw bad(
          'invalid_value',
          'frame_images',
          `frame_images[${i}] must be {type: "image_url", image_url: {url}, frame_type}`,
        );
      if (frame.frame_type !== 'first_frame')
        throw bad(
          'invalid_value',
          'frame_images',
          `${route.name} takes a first frame only (frame_images[${i}])`,
        );
      if (!single || input[single] !== undefined)
        throw bad('invalid_value', 'frame_images', `${route.name} takes at most one first frame`);
      input[single] = url;
    }
  }

  const refs = body.input_references;
  if (refs === undefined || refs === null) return;
  if (!Array.isArray(refs)) throw bad('invalid_type', 'input_references', 'input_references must be a list');
  const images: string[] = [];
  let others = false;
  for (const [i, ref] of refs.entries()) {
    if (!isObj(ref))
      throw bad('invalid_value', 'input_references', `input_references[${i}] must be an object`);
    if (ref.type !== 'image_url') {
      others = true;
      continue;
    }
    const url = isObj(ref.image_url) ? ref.image_url.url : undefined;
    if (typeof url !== 'string')
      throw bad(
        'invalid_value',
        'input_references',
        `input_references[${i}] must be {type: "image_url", image_url: {url}}`,
      );
    images.push(url);
  }
  if (images.length > 0) {
    if (!list) throw bad('invalid_value', 'input_references', `${route.name} takes no reference images`);
    input[list] = images;
  }
  if (others) dropped.push('input_references');
}

/** A new job id, as OpenRouter shapes them: `gen-vid-<unix seconds>-<20 alphanumerics>`. */
export function videoJobId(now = Date.now()): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let tail = '';
  for (let i = 0; i < 20; i++) tail += chars[randomInt(chars.length)];
  return `gen-vid-${Math.floor(now / 1000)}-${tail}`;
}

/** A job as OpenRouter's poll answers it; `pollingUrl` is where the caller polls. */
export function jobAnswer(
  job: Pick<VideoJob, 'id' | 'status' | 'outputs' | 'costUsd' | 'error'>,
  pollingUrl: string,
) {
  return {
    id: job.id,
    polling_url: pollingUrl,
    status: job.status,
    ...(job.status === 'completed'
      ? {
          unsigned_urls: job.outputs.map((o) => o.url),
          usage: { cost: job.costUsd ?? 0, is_byok: false },
        }
      : {}),
    ...(job.status === 'failed' && job.error ? { error: job.error } : {}),
  };
}

/** The video routes as OpenRouter's video model list (`GET /api/v1/videos/models`). */
export function videoModels(routes: MediaRoute[], created: number) {
  return {
    data: routes
      .filter((r) => r.kind === 'video')
      .map((r) => {
        const enumOf = (name: string) => {
          const spec = r.params[name];
          return spec && (spec.type === 'string' || spec.type === 'integer') && spec.enum
            ? [...spec.enum]
            : null;
        };
        const id = `${MEDIA_AUTHOR}/${r.name}`;
        return {
          id,
          canonical_slug: id,
          name: `${r.name} (${providerSlugOf(r)})`,
          created,
          description: r.description ?? `Video generation by the ${r.name} route`,
          allowed_passthrough_parameters: Object.keys(r.params).filter(
            (p) => !['image', 'image_urls'].includes(r.params[p]?.type ?? ''),
          ),
          supported_durations: enumOf('duration'),
          supported_resolutions: enumOf('resolution'),
          supported_aspect_ratios: enumOf('aspect_ratio'),
          supported_sizes: null,
          supported_frame_images: Object.values(r.params).some((s) => s.type === 'image')
            ? ['first_frame']
            : [],
          seed: r.params.seed ? true : null,
          generate_audio: r.params.generate_audio ? true : null,
          creativity: null,
          upscale_factor: null,
          pricing_skus: r.priceUsd ? { video: String(r.priceUsd) } : null,
        };
      }),
  };
}
