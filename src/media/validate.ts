/**
 * Checks a generation request against its route: no parameter the route does not take, each value
 * of its type and in its allowed set, the prompt and required parameters present, an input image
 * where the route needs one. The same rules serve JSON bodies (typed values) and multipart forms
 * (strings: integers and booleans parsed, lists as repeated fields or a JSON array). Every failure is
 * a MediaError 400 naming the field; defaults are applied to what passes.
 */

import { PROMPT_MAX_LENGTH } from './config.js';
import { type GenerateRequest, MASK_PARAM, MediaError, type MediaRoute, type ParamSpec } from './types.js';

export interface ValidatedRequest {
  prompt: string;
  /** Validated values with defaults applied (image URLs included, as given). */
  params: GenerateRequest['params'];
  /** Image URLs to fetch, in request order, with the parameter each came from. */
  imageUrls: { param: string; url: string }[];
}

export interface ValidateOptions {
  /** The values came from a multipart form: strings (or lists of strings for repeated fields). */
  form?: boolean;
  /** Parameters that arrived as uploaded files (multipart parts), one entry per file. */
  files?: string[];
  /**
   * Files may fill an image-URL list parameter too, counted with its URLs (OpenAI's image edits
   * upload their inputs). The media routes' own forms take a file for an `image` parameter only.
   */
  filesForLists?: boolean;
}

const bad = (code: string, field: string, message: string) => new MediaError(400, code, message, field);

/** Whether `value` is an image URL the service takes: an absolute http(s) URL, or a base64 `data:` URL. */
export function isImageUrl(value: string): boolean {
  return /^data:[^,]*;base64,/i.test(value) || isHttpUrl(value);
}

/** Whether `value` is an absolute http(s) URL. */
export function isHttpUrl(value: string): boolean {
  try {
    const u = new URL(value);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

export function validateGeneration(
  route: MediaRoute,
  input: Record<string, unknown>,
  opts: ValidateOptions = {},
): ValidatedRequest {
  const form = opts.form ?? false;
  const files = new Set(opts.files ?? []);
  const routeId = `${route.kind}/${route.name}`;
  const takes = ['prompt', ...Object.keys(route.params)].join(', ');

  for (const key of [...Object.keys(input), ...files]) {
    if (key !== 'prompt' && !Object.hasOwn(route.params, key))
      throw bad(
        'unknown_parameter',
        key,
        `${routeId} does not take the parameter ${key} (it takes ${takes})`,
      );
  }
  const filesOf = (name: string) => (opts.files ?? []).filter((f) => f === name).length;
  for (const key of files) {
    const type = route.params[key]?.type;
    if (type !== 'image' && !(opts.filesForLists && type === 'image_urls'))
      throw bad('invalid_type', key, `${key} cannot be sent as a file; only an image parameter can`);
  }

  const present = (v: unknown) => v !== undefined && v !== null && !(form && v === '');

  // The prompt.
  const rawPrompt = input.prompt;
  if (!present(rawPrompt)) throw bad('missing_parameter', 'prompt', 'prompt is required');
  if (typeof rawPrompt !== 'string') throw bad('invalid_type', 'prompt', 'prompt must be a string');
  if (rawPrompt.trim() === '') throw bad('missing_parameter', 'prompt', 'prompt must not be empty');
  if (rawPrompt.length > PROMPT_MAX_LENGTH)
    throw bad('invalid_value', 'prompt', `prompt must be at most ${PROMPT_MAX_LENGTH} characters`);

  const params: GenerateRequest['params'] = {};
  const imageUrls: ValidatedRequest['imageUrls'] = [];
  // A mask is an image parameter but not an input image: it edits one, and needs one beside it.
  let images = (opts.files ?? []).filter((f) => f !== MASK_PARAM).length;
  let mask = files.has(MASK_PARAM);
  for (const [name, spec] of Object.entries(route.params)) {
    const raw = input[name];
    if (!present(raw)) {
      if (spec.type === 'image' && files.has(name)) continue;
      if (spec.type === 'image_urls' && files.has(name)) {
        checkCount(name, spec, filesOf(name));
        continue;
      }
      if (spec.required) throw bad('missing_parameter', name, `${name} is required`);
      if ('default' in spec && spec.default !== undefined) params[name] = spec.default;
      continue;
    }
    if (spec.type === 'image' && files.has(name))
      throw bad('invalid_value', name, `${name} was sent both as a file and as a URL; send one`);
    const value = checkValue(name, spec, raw, form, filesOf(name));
    params[name] = value;
    if (spec.type === 'image_urls') {
      for (const url of value as string[]) imageUrls.push({ param: name, url });
      images += (value as string[]).length;
    } else if (spec.type === 'image') {
      imageUrls.push({ param: name, url: value as string });
      if (name === MASK_PARAM) mask = true;
      else images += 1;
    }
  }
  if (mask && images === 0)
    throw bad('missing_parameter', MASK_PARAM, `${MASK_PARAM} edits an input image: send the image with it`);

  if (route.requiresImage && images === 0) {
    const entries = Object.entries(route.params);
    const field =
      entries.find(([, s]) => s.type === 'image_urls')?.[0] ??
      entries.find(([n, s]) => s.type === 'image' && n !== MASK_PARAM)?.[0] ??
      'image';
    throw bad('missing_parameter', field, `${routeId} needs an input image (${describeImageInputs(route)})`);
  }
  return { prompt: rawPrompt, params, imageUrls };
}

function describeImageInputs(route: MediaRoute): string {
  return Object.entries(route.params)
    .filter(([n, s]) => (s.type === 'image' && n !== MASK_PARAM) || s.type === 'image_urls')
    .map(([n, s]) => (s.type === 'image' ? `${n} as a URL or a multipart file` : `${n} as a list of URLs`))
    .join(', or ');
}

/** An image list's size (its URLs and any files sent for it) against the parameter's bounds. */
function checkCount(
  name: string,
  spec: ParamSpec & { type: 'image_urls' },
  count: number,
  noun = 'images',
): void {
  const min = spec.minItems ?? 0;
  const max = spec.maxItems ?? Number.POSITIVE_INFINITY;
  if (count < min || count > max)
    throw bad(
      'invalid_value',
      name,
      Number.isFinite(max)
        ? `${name} must hold ${min} to ${max} ${noun} (got ${count})`
        : `${name} must hold at least ${min} ${noun} (got ${count})`,
    );
}

function checkValue(
  name: string,
  spec: ParamSpec,
  raw: unknown,
  form: boolean,
  /** Files sent for an image list, counted with its URLs. */
  files = 0,
): string | number | boolean | string[] {
  if (spec.type !== 'image_urls' && Array.isArray(raw))
    throw bad('invalid_type', name, `${name} must be a single ${spec.type === 'image' ? 'URL' : spec.type}`);
  switch (spec.type) {
    case 'string': {
      if (typeof raw !== 'string') throw bad('invalid_type', name, `${name} must be a string`);
      if (spec.enum && !spec.enum.includes(raw))
        throw bad('invalid_value', name, `${name} must be one of ${spec.enum.join(', ')}`);
      if (spec.maxLength !== undefined && raw.length > spec.maxLength)
        throw bad('invalid_value', name, `${name} must be at most ${spec.maxLength} characters`);
      return raw;
    }
    case 'integer': {
      let n: number;
      if (form && typeof raw === 'string' && /^\s*-?\d+\s*$/.test(raw)) n = Number(raw);
      else if (typeof raw === 'number' && Number.isInteger(raw)) n = raw;
      else throw bad('invalid_type', name, `${name} must be an integer`);
      if (spec.enum && !spec.enum.includes(n))
        throw bad('invalid_value', name, `${name} must be one of ${spec.enum.join(', ')}`);
      if ((spec.min !== undefined && n < spec.min) || (spec.max !== undefined && n > spec.max))
        throw bad(
          'invalid_value',
          name,
          `${name} must be between ${spec.min ?? '-∞'} and ${spec.max ?? '∞'}`,
        );
      return n;
    }
    case 'boolean': {
      if (typeof raw === 'boolean') return raw;
      if (form && typeof raw === 'string') {
        const v = raw.trim().toLowerCase();
        if (v === 'true' || v === '1') return true;
        if (v === 'false' || v === '0') return false;
      }
      throw bad('invalid_type', name, `${name} must be a boolean (true or false)`);
    }
    case 'image': {
      if (typeof raw !== 'string') throw bad('invalid_type', name, `${name} must be an image URL or a file`);
      if (!isImageUrl(raw)) throw bad('invalid_value', name, `${name} must be an http(s) or data: URL`);
      return raw;
    }
    case 'image_urls': {
      let list: unknown = raw;
      if (form && typeof raw === 'string') {
        if (raw.trimStart().startsWith('[')) {
          try {
            list = JSON.parse(raw);
          } catch {
            throw bad(
              'invalid_type',
              name,
              `${name} must be a list of image URLs (a JSON array or repeated fields)`,
            );
          }
        } else list = [raw];
      }
      if (!Array.isArray(list) || !list.every((u) => typeof u === 'string'))
        throw bad('invalid_type', name, `${name} must be a list of image URL strings`);
      const urls = (list as string[]).filter((u) => !(form && u === ''));
      checkCount(name, spec, urls.length + files, files > 0 ? 'images' : 'image URLs');
      for (const u of urls)
        if (!isImageUrl(u)) throw bad('invalid_value', name, `${name} must hold http(s) or data: URLs`);
      return urls;
    }
  }
}
