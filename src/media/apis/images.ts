/**
 * The image APIs clients already speak, turned into calls of the media routes: OpenRouter's
 * (`POST /api/v1/images`, what `@openrouter/sdk`'s `images.generate` and the AI SDK's
 * `openrouter.imageModel(id)` send) and OpenAI's (`POST /api/v1/images/generations`, the `openai`
 * client's `images.generate` and the AI SDK's `openai.image(id)`). The model id names a route
 * (`media/<name>`: its text-to-image route, or its image-to-image one when `input_references` are
 * given), the fields become the route's parameters where the route has an equivalent, and the rest
 * are dropped and listed (the answer's `x-gatehouse-dropped-fields`). Pure: no I/O, errors are
 * MediaErrors naming the field.
 */

import { isObj } from '../../formats/validate.js';
import { MASK_PARAM, MediaError, type MediaRoute, type ParamSpec } from '../types.js';

/** The author segment of every media model id (`media/model-a`). */
export const MEDIA_AUTHOR = 'media';

export const imageModelId = (name: string) => `${MEDIA_AUTHOR}/${name}`;

/** The most images one call may ask for (`n`), as OpenRouter allows. */
export const MAX_IMAGES = 10;

/** Fields read here, never passed or listed as dropped. */
const READ_HERE = [
  'model',
  'prompt',
  'n',
  'stream',
  'input_references',
  'size',
  'resolution',
  'aspect_ratio',
];
/** Fields that steer the gateway or identify the caller, not the image: ignored. */
const OPENROUTER_IGNORED = new Set([...READ_HERE, 'provider', 'user', 'session_id', 'trace']);
const OPENAI_IGNORED = new Set([...READ_HERE, 'response_format', 'user', 'safety_identifier']);

export interface ImageCall {
  route: MediaRoute;
  /** The route's request: `prompt` and its parameters (validateGeneration checks it). */
  input: Record<string, unknown>;
  n: number;
  stream: boolean;
  /** Fields the route has no equivalent for, left out. */
  dropped: string[];
  /** OpenAI's `response_format: "url"`: answer the stored images' URLs instead of their bytes. */
  asUrl: boolean;
  /** The route parameter uploaded images fill (OpenAI's image edits), when there are any. */
  uploadParam: string | null;
}

const bad = (code: string, field: string, message: string) => new MediaError(400, code, message, field);

/** The routes of an image model (`media/<name>` or `<name>`): text-to-image and image-to-image. */
export function imageRoutes(routes: MediaRoute[], model: string) {
  const name = model.startsWith(`${MEDIA_AUTHOR}/`) ? model.slice(MEDIA_AUTHOR.length + 1) : model;
  return {
    t2i: routes.find((r) => r.kind === 't2i' && r.name === name),
    i2i: routes.find((r) => r.kind === 'i2i' && r.name === name),
  };
}

/** An OpenAI Images API request (`/images/generations`) as a media route call. */
export function openAiImageCall(body: unknown, routes: MediaRoute[], uploads = 0): ImageCall {
  if (!isObj(body)) throw bad('invalid_body', 'body', 'The body must be a JSON object');
  const format = body.response_format;
  if (format !== undefined && format !== null && format !== 'url' && format !== 'b64_json')
    throw bad('invalid_value', 'response_format', 'response_format must be url or b64_json');
  return { ...imageCall(body, routes, OPENAI_IGNORED, uploads), asUrl: format === 'url' };
}

/**
 * OpenAI's image edits (`/images/edits`) as an image-to-image call: a form's fields with its
 * uploaded images (`image`, `image[]`), or a JSON body whose `images` are `{image_url}` objects.
 * Form fields are text: `n` and `stream` are read as their number and boolean. A `mask` (a file
 * part, or `{image_url}` in JSON) fills the route's `mask` parameter; a route without one refuses it.
 */
export function openAiEditCall(
  body: Record<string, unknown>,
  routes: MediaRoute[],
  opts: { uploads: number; form: boolean; maskFile?: boolean },
): ImageCall {
  const fields = { ...body };
  if (opts.form) {
    if (typeof fields.n === 'string' && /^\s*\d+\s*$/.test(fields.n)) fields.n = Number(fields.n);
    if (fields.stream === 'true' || fields.stream === 'false') fields.stream = fields.stream === 'true';
  }
  const mask = fields.mask;
  delete fields.mask;
  if (fields.images !== undefined) {
    const list = fields.images;
    if (!Array.isArray(list))
      throw bad('invalid_type', 'images', 'images must be a list of {image_url} objects');
    fields.input_references = list.map((item, i) => {
      if (!isObj(item) || typeof item.image_url !== 'string')
        throw bad('invalid_value', 'images', `images[${i}] must be {image_url: "<http(s) or data: URL>"}`);
      return { type: 'image_url', image_url: { url: item.image_url } };
    });
    delete fields.images;
  }
  const call = openAiImageCall(fields, routes, opts.uploads);
  if (call.route.kind !== 'i2i')
    throw bad('missing_parameter', 'image', 'An edit needs an input image (image, or images in a JSON body)');
  if (mask === undefined && !opts.maskFile) return call;
  if (call.route.params[MASK_PARAM]?.type !== 'image')
    throw bad(
      'invalid_value',
      MASK_PARAM,
      `${imageModelId(call.route.name)} does not take a mask (inpainting): it edits whole images`,
    );
  if (mask !== undefined) {
    // JSON: `{image_url}` as OpenAI's edits take it (a form's mask is a file part, never text).
    if (opts.form || !isObj(mask) || typeof mask.image_url !== 'string')
      throw bad(
        'invalid_value',
        MASK_PARAM,
        'mask must be a file part, or {image_url: "<http(s) or data: URL>"} in JSON',
      );
    call.input[MASK_PARAM] = mask.image_url;
  }
  return call;
}

/** An OpenRouter image request as a media route call (see the module comment). */
export function imageCall(
  body: unknown,
  routes: MediaRoute[],
  ignored = OPENROUTER_IGNORED,
  /** Images uploaded beside the body (OpenAI's image edits). */
  uploads = 0,
): ImageCall {
  if (!isObj(body)) throw bad('invalid_body', 'body', 'The body must be a JSON object');
  const { model } = body;
  if (typeof model !== 'string' || model === '')
    throw bad('missing_parameter', 'model', 'model is required (an image model id, e.g. media/model-a)');

  const refs = inputReferences(body.input_references);
  const { t2i, i2i } = imageRoutes(routes, model);
  const withImages = refs.length + uploads > 0;
  const route = withImages ? i2i : (t2i ?? i2i);
  if (!route) {
    if (withImages && t2i)
      throw bad('invalid_value', 'input_references', `${model} does not take input images`);
    throw new MediaError(404, 'not_found', `There is no image model ${model}`, 'model');
  }

  const input: Record<string, unknown> = { prompt: body.prompt };
  const dropped: string[] = [];
  // Fields named as the route's own parameters pass as they are (a configured route's `quality`, `seed`…).
  for (const [key, value] of Object.entries(body)) {
    if (ignored.has(key)) continue;
    const spec = route.params[key];
    if (spec && spec.type !== 'image' && spec.type !== 'image_urls') input[key] = value;
    else dropped.push(key);
  }
  mapSize(body, route, input, dropped);
  const param = withImages ? imageParam(route, refs.length + uploads) : null;
  if (param && refs.length > 0) input[param] = route.params[param]?.type === 'image' ? refs[0] : refs;
  const uploadParam = uploads > 0 ? param : null;

  const n = body.n ?? 1;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_IMAGES)
    throw bad('invalid_value', 'n', `n must be an integer from 1 to ${MAX_IMAGES}`);
  if (body.stream !== undefined && typeof body.stream !== 'boolean')
    throw bad('invalid_type', 'stream', 'stream must be a boolean');
  return { route, input, n, stream: body.stream === true, dropped, asUrl: false, uploadParam };
}

/** `input_references`' image URLs (`[{type: "image_url", image_url: {url}}]`). */
function inputReferences(raw: unknown): string[] {
  if (raw === undefined || raw === null) return [];
  const field = 'input_references';
  if (!Array.isArray(raw)) throw bad('invalid_type', field, `${field} must be a list of image_url parts`);
  return raw.map((part, i) => {
    const url = isObj(part) && isObj(part.image_url) ? part.image_url.url : undefined;
    if (!isObj(part) || part.type !== 'image_url' || typeof url !== 'string')
      throw bad('invalid_value', field, `${field}[${i}] must be {type: "image_url", image_url: {url}}`);
    return url;
  });
}

/** The route parameter input images fill: its list of images, or its single image (then only one). */
function imageParam(route: MediaRoute, count: number): string {
  const params = Object.entries(route.params).filter(([name]) => name !== MASK_PARAM);
  const list = params.find(([, s]) => s.type === 'image_urls')?.[0];
  if (list) return list;
  const single = params.find(([, s]) => s.type === 'image')?.[0];
  if (!single || count > 1)
    throw bad(
      'invalid_value',
      'input_references',
      `${route.kind}/${route.name} takes ${single ? 'one input image' : 'no input images'} (got ${count})`,
    );
  return single;
}

/**
 * `size` (a tier such as `2K`, or `WxH` pixels), `resolution` (a tier) and `aspect_ratio` as the
 * route's `size` and `aspect_ratio`: a value the route accepts as it is passes; `WxH` becomes the
 * tier of its long side and the route's nearest aspect ratio. A field the route cannot use at all
 * is dropped; one it could use with a value it does not allow reaches validation (a 400 naming it).
 */
function mapSize(
  body: Record<string, unknown>,
  route: MediaRoute,
  input: Record<string, unknown>,
  dropped: string[],
): void {
  const sizeSpec = route.params.size;
  const ratioSpec = route.params.aspect_ratio;
  const pixels = typeof body.size === 'string' ? /^(\d{2,5})x(\d{2,5})$/.exec(body.size) : null;

  if (body.aspect_ratio !== undefined) {
    if (ratioSpec) input.aspect_ratio = body.aspect_ratio;
    else if (body.aspect_ratio !== 'auto') dropped.push('aspect_ratio');
  }
  for (const field of ['resolution', 'size'] as const) {
    const value = body[field];
    // `auto` (OpenAI's default) asks for nothing in particular.
    if (value === undefined || value === null || value === 'auto') continue;
    if (field === 'size' && pixels && !accepts(sizeSpec, value)) continue;
    if (sizeSpec) input.size = value;
    else dropped.push(field);
  }
  if (!pixels) return;
  const [w, h] = [Number(pixels[1]), Number(pixels[2])];
  let used = false;
  if (sizeSpec && input.size === undefined) {
    const long = Math.max(w, h);
    const tier = long <= 1024 ? '1K' : long <= 2048 ? '2K' : '4K';
    if (accepts(sizeSpec, tier)) {
      input.size = tier;
      used = true;
    }
  }
  if (ratioSpec?.type === 'string' && ratioSpec.enum && input.aspect_ratio === undefined && h > 0) {
    input.aspect_ratio = nearestRatio(w / h, ratioSpec.enum);
    used = true;
  }
  if (!used && !(sizeSpec && input.size !== undefined)) dropped.push('size');
}

function accepts(spec: ParamSpec | undefined, value: unknown): boolean {
  if (spec?.type !== 'string' || typeof value !== 'string') return false;
  return !spec.enum || spec.enum.includes(value);
}

/** The listed `W:H` ratio closest to `ratio` (compared as logarithms, so 2:1 and 1:2 are as far from 1:1). */
export function nearestRatio(ratio: number, listed: string[]): string {
  let best = listed[0] as string;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const entry of listed) {
    const [a, b] = entry.split(':').map(Number);
    if (!a || !b) continue;
    const distance = Math.abs(Math.log(ratio) - Math.log(a / b));
    if (distance < bestDistance) {
      best = entry;
      bestDistance = distance;
    }
  }
  return best;
}
