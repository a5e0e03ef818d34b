/**
 * The media service's configuration, read from the environment (the README's media table): its
 * port and host, where outputs are stored and served from, upload and fetch limits, the generation
 * deadline, and its routes — the defaults below, or `routes` from GATEHOUSE_MEDIA_CONFIG (JSON or
 * YAML, camelCase or snake_case keys).
 */

import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { MediaKind, MediaRoute, ParamSpec } from './types.js';

type Env = Record<string, string | undefined>;

export interface MediaConfig {
  port: number;
  host: string;
  logLevel: string;
  routes: MediaRoute[];
  /** Largest uploaded file or fetched image, bytes (400 file_too_large beyond). */
  maxUploadBytes: number;
  /** Largest JSON body (and multipart text field), bytes (413 beyond). */
  bodyLimit: number;
  /** Base of returned file URLs; null → `http://localhost:<listening port>`. */
  publicUrl: string | null;
  /** The filesystem object store's directory. */
  storeDir: string;
  /** Generation deadline, ms (504 generation_timeout beyond). */
  timeoutMs: number;
  /** Deadline of fetching one image URL, ms. */
  fetchTimeoutMs: number;
  /** Image URLs may point at loopback, private and link-local addresses (GATEHOUSE_MEDIA_FETCH_PRIVATE=on). */
  fetchPrivate: boolean;
}

export const MEDIA_KINDS: readonly MediaKind[] = ['t2i', 'i2i', 'video'];
/** Every route takes a prompt of at most this many characters. */
export const PROMPT_MAX_LENGTH = 4000;

const SIZES = ['1K', '2K'];
const ASPECT_RATIOS = ['1:1', '4:3', '3:4', '16:9', '9:16', '3:2', '2:3'];

/** The seed's routes, all served by the built-in local generator. */
export const DEFAULT_ROUTES: MediaRoute[] = [
  {
    kind: 't2i',
    name: 'model-a',
    provider: 'local',
    providerModel: 'model-a',
    description: 'Text to image.',
    params: { output_format: { type: 'string', enum: ['png', 'jpeg', 'webp'], default: 'png' } },
  },
  {
    kind: 't2i',
    name: 'model-b',
    provider: 'local',
    providerModel: 'model-b',
    description: 'Text to image at a size class and aspect ratio.',
    params: {
      size: { type: 'string', enum: SIZES, default: '1K' },
      aspect_ratio: { type: 'string', enum: ASPECT_RATIOS, default: '1:1' },
    },
  },
  {
    kind: 'i2i',
    name: 'model-b',
    provider: 'local',
    providerModel: 'model-b',
    description: 'Image to image: image_input URLs, or a multipart file part named image.',
    requiresImage: true,
    params: {
      image_input: { type: 'image_urls', minItems: 1, maxItems: 4 },
      image: { type: 'image' },
      size: { type: 'string', enum: SIZES, default: '1K' },
    },
  },
  {
    kind: 'i2i',
    name: 'model-a',
    provider: 'local',
    providerModel: 'model-a',
    description: 'Image to image from one or more image URLs.',
    requiresImage: true,
    params: { image_input: { type: 'image_urls', minItems: 1, maxItems: 8, required: true } },
  },
  {
    kind: 'video',
    name: 'video-model',
    provider: 'local',
    providerModel: 'video-model',
    description: 'A short video from a prompt, optionally animating an image.',
    params: {
      duration: { type: 'integer', enum: [2, 3, 4, 5], default: 3 },
      resolution: { type: 'string', enum: ['480p', '720p'], default: '480p' },
      image: { type: 'image' },
      reference_images: { type: 'image_urls', minItems: 0, maxItems: 4 },
      camera_fixed: { type: 'boolean', default: false },
    },
  },
];

const isOn = (v: string | undefined) => ['on', 'true', '1'].includes((v ?? '').toLowerCase());

function intFrom(env: Env, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer ≥ ${min}`);
  return n;
}

export function loadMediaConfig(env: Env = process.env): MediaConfig {
  const dataDir = resolve(env.GATEHOUSE_DATA_DIR || './data');
  const file = env.GATEHOUSE_MEDIA_CONFIG;
  const publicUrl = env.GATEHOUSE_MEDIA_PUBLIC_URL?.trim();
  if (publicUrl && !/^https?:\/\/[^/]/i.test(publicUrl))
    throw new Error('GATEHOUSE_MEDIA_PUBLIC_URL must be an http(s) URL');
  return {
    port: intFrom(env, 'MEDIA_PORT', 8081),
    host: env.MEDIA_HOST || '0.0.0.0',
    logLevel: env.LOG_LEVEL || 'info',
    routes: file ? loadRoutesFile(file) : DEFAULT_ROUTES,
    maxUploadBytes: intFrom(env, 'GATEHOUSE_MEDIA_MAX_UPLOAD_BYTES', 20 * 1024 * 1024, 1),
    bodyLimit: intFrom(env, 'GATEHOUSE_MEDIA_BODY_LIMIT', 1024 * 1024, 1024),
    publicUrl: publicUrl ? publicUrl.replace(/\/+$/, '') : null,
    storeDir: resolve(env.GATEHOUSE_MEDIA_STORE_DIR || join(dataDir, 'objects')),
    timeoutMs: intFrom(env, 'GATEHOUSE_MEDIA_TIMEOUT_MS', 120_000, 1),
    fetchTimeoutMs: intFrom(env, 'GATEHOUSE_MEDIA_FETCH_TIMEOUT_MS', 30_000, 1),
    fetchPrivate: isOn(env.GATEHOUSE_MEDIA_FETCH_PRIVATE),
  };
}

/** Reads `routes` from a JSON or YAML file (by extension; YAML is a superset of JSON anyway). */
export function loadRoutesFile(path: string): MediaRoute[] {
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`GATEHOUSE_MEDIA_CONFIG ${path}: ${(err as Error).message}`);
  }
  const routes = (doc as { routes?: unknown } | null)?.routes;
  if (!Array.isArray(routes) || routes.length === 0)
    throw new Error(`GATEHOUSE_MEDIA_CONFIG ${path}: "routes" must be a non-empty list`);
  try {
    return parseRoutes(routes);
  } catch (err) {
    throw new Error(`GATEHOUSE_MEDIA_CONFIG ${path}: ${(err as Error).message}`);
  }
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const PARAM = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** Validates routes written in configuration (camelCase or snake_case keys) into MediaRoutes. */
export function parseRoutes(input: unknown[]): MediaRoute[] {
  const seen = new Set<string>();
  return input.map((raw, i) => {
    const r = obj(raw, `routes[${i}]`);
    const where = `routes[${i}]`;
    const kind = r.kind;
    if (!MEDIA_KINDS.includes(kind as MediaKind))
      throw new Error(`${where}.kind must be one of ${MEDIA_KINDS.join(', ')}`);
    const name = r.name;
    if (typeof name !== 'string' || !NAME.test(name))
      throw new Error(`${where}.name must be a path segment ([A-Za-z0-9._-])`);
    const id = `${kind}/${name}`;
    if (seen.has(id)) throw new Error(`${where}: route ${id} is defined twice`);
    seen.add(id);
    const provider = r.provider ?? 'local';
    const providerModel = r.providerModel ?? r.provider_model ?? name;
    if (typeof provider !== 'string' || !provider) throw new Error(`${where}.provider must be a string`);
    if (typeof providerModel !== 'string' || !providerModel)
      throw new Error(`${where}.provider_model must be a string`);
    const params: Record<string, ParamSpec> = {};
    for (const [p, spec] of Object.entries(obj(r.params ?? {}, `${where}.params`))) {
      if (!PARAM.test(p) || p === 'prompt')
        throw new Error(`${where}.params.${p}: not a usable parameter name`);
      params[p] = parseParam(spec, `${where}.params.${p}`);
    }
    const requiresImage = r.requiresImage ?? r.requires_image;
    if (requiresImage !== undefined && typeof requiresImage !== 'boolean')
      throw new Error(`${where}.requires_image must be a boolean`);
    if (requiresImage && !Object.values(params).some((s) => s.type === 'image' || s.type === 'image_urls'))
      throw new Error(`${where}: requires_image needs an image or image_urls parameter`);
    const route: MediaRoute = { kind: kind as MediaKind, name, provider, providerModel, params };
    if (requiresImage) route.requiresImage = true;
    if (typeof r.description === 'string') route.description = r.description;
    return route;
  });
}

function obj(v: unknown, where: string): Record<string, unknown> {
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error(`${where} must be an object`);
  return v as Record<string, unknown>;
}

function parseParam(raw: unknown, where: string): ParamSpec {
  const s = obj(raw, where);
  const num = (k: string, alt?: string) => {
    const v = s[k] ?? (alt ? s[alt] : undefined);
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v))
      throw new Error(`${where}.${alt ?? k} must be a number`);
    return v;
  };
  const required = s.required;
  if (required !== undefined && typeof required !== 'boolean')
    throw new Error(`${where}.required must be a boolean`);
  const opt = <T extends object>(spec: T) => (required ? { ...spec, required: true } : spec);
  switch (s.type) {
    case 'string': {
      const values = s.enum;
      if (values !== undefined && (!Array.isArray(values) || !values.every((v) => typeof v === 'string')))
        throw new Error(`${where}.enum must be a list of strings`);
      if (s.default !== undefined && typeof s.default !== 'string')
        throw new Error(`${where}.default must be a string`);
      if (values && s.default !== undefined && !values.includes(s.default))
        throw new Error(`${where}.default must be one of its enum`);
      const maxLength = num('maxLength', 'max_length');
      return opt({
        type: 'string',
        ...(values ? { enum: values as string[] } : {}),
        ...(s.default !== undefined ? { default: s.default as string } : {}),
        ...(maxLength !== undefined ? { maxLength } : {}),
      });
    }
    case 'integer': {
      const values = s.enum;
      if (values !== undefined && (!Array.isArray(values) || !values.every((v) => Number.isInteger(v))))
        throw new Error(`${where}.enum must be a list of integers`);
      if (s.default !== undefined && !Number.isInteger(s.default))
        throw new Error(`${where}.default must be an integer`);
      if (values && s.default !== undefined && !values.includes(s.default))
        throw new Error(`${where}.default must be one of its enum`);
      const min = num('min');
      const max = num('max');
      return opt({
        type: 'integer',
        ...(values ? { enum: values as number[] } : {}),
        ...(s.default !== undefined ? { default: s.default as number } : {}),
        ...(min !== undefined ? { min } : {}),
        ...(max !== undefined ? { max } : {}),
      });
    }
    case 'boolean':
      if (s.default !== undefined && typeof s.default !== 'boolean')
        throw new Error(`${where}.default must be a boolean`);
      return opt({ type: 'boolean', ...(s.default !== undefined ? { default: s.default as boolean } : {}) });
    case 'image_urls': {
      const minItems = num('minItems', 'min_items');
      const maxItems = num('maxItems', 'max_items');
      return opt({
        type: 'image_urls',
        ...(minItems !== undefined ? { minItems } : {}),
        ...(maxItems !== undefined ? { maxItems } : {}),
      });
    }
    case 'image':
      return opt({ type: 'image' });
    default:
      throw new Error(`${where}.type must be string, integer, boolean, image_urls or image`);
  }
}
