/**
 * The media service's configuration, read from the environment (the README's media table): its
 * port and host, where outputs are stored and served from, upload and fetch limits, the generation
 * deadline, and its routes — the defaults below, or `routes` from GATEHOUSE_MEDIA_CONFIG (JSON or
 * YAML, camelCase or snake_case keys).
 */

import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { type HttpTimeouts, loadHttpTimeouts } from '../lib/http-server.js';
import { readMasterKey } from '../lib/master-key.js';
import { checkRouteProviders, loadProvidersFile, type MediaProviderConfig } from './providers/config.js';
import { storeDirProblem } from './storage/store-dir.js';
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
  /** Provider adapters (`providers` of GATEHOUSE_MEDIA_CONFIG; see providers/config.ts); routes name them by slug. */
  providers: MediaProviderConfig[];
  /** Where outputs go (GATEHOUSE_MEDIA_STORE): `filesystem` (default) or `s3`. */
  store: 'filesystem' | 's3';
  /** The S3-compatible store's settings; set when `store` is `s3`. */
  s3: MediaS3Config | null;
  /**
   * GATEHOUSE_MEDIA_AUTH; null when unset: `keys` when the service is given the gateway's keys
   * (inside `serve`), `none` otherwise (see auth.ts).
   */
  auth: MediaAuthMode | null;
  /** The static bearer token of `auth: 'token'` (GATEHOUSE_MEDIA_TOKEN). */
  token: string | null;
  /** The gateway's database (DATABASE_URL, else the SQLite file in GATEHOUSE_DATA_DIR), for `keys` alone. */
  databaseUrl: string;
  /**
   * The gateway's master key (GATEHOUSE_MASTER_KEY, else `master.key` in the data directory; never
   * made here), for `keys` alone: it unseals the workspaces' webhook signing secrets. Null: none.
   */
  masterKey: Buffer | null;
  /** Generations running at once (GATEHOUSE_MEDIA_CONCURRENCY). */
  concurrency: number;
  /** Generations waiting for a slot before a 429 queue_full (GATEHOUSE_MEDIA_QUEUE). */
  queue: number;
  /** Most slots (running + waiting) one organization may hold; 0 = its fair share (GATEHOUSE_MEDIA_QUEUE_PER_ORG). */
  queuePerOrganization: number;
  /** How long a client may take to send a request (the gateway's GATEHOUSE_HEADERS_TIMEOUT_MS … variables). */
  http: HttpTimeouts;
  /** How long running video jobs may take to finish when the service stops (GATEHOUSE_SHUTDOWN_GRACE_MS, as the gateway's). */
  shutdownGraceMs: number;
}

export type MediaAuthMode = 'keys' | 'token' | 'none';
export const MEDIA_AUTH_MODES: readonly MediaAuthMode[] = ['keys', 'token', 'none'];

export interface MediaS3Config {
  /** An S3-compatible server's URL; path-style addressing is used when set. Null → AWS S3. */
  endpoint: string | null;
  bucket: string;
  region: string;
  /** Static credentials; null → the SDK's default provider chain (env, profile, instance role…). */
  credentials: { accessKeyId: string; secretAccessKey: string } | null;
  /** Base of object URLs (`<publicUrl>/<key>`); null → presigned GET URLs. */
  publicUrl: string | null;
  /** Lifetime of presigned URLs, seconds. */
  urlTtlS: number;
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
    description:
      'Image to image: image_input URLs, or a multipart file part named image; a mask (transparent where the image is edited) keeps the rest as it was.',
    requiresImage: true,
    params: {
      image_input: { type: 'image_urls', minItems: 1, maxItems: 4 },
      image: { type: 'image' },
      mask: { type: 'image' },
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
      output_format: { type: 'string', enum: ['webp', 'mp4'], default: 'webp' },
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
  const routes = file ? loadRoutesFile(file) : DEFAULT_ROUTES;
  const providers = file ? loadProvidersFile(file, env) : [];
  checkRouteProviders(routes, providers);
  const storeDir = resolve(env.GATEHOUSE_MEDIA_STORE_DIR || join(dataDir, 'objects'));
  const operations = loadMediaOperations(env, dataDir);
  if (operations.store === 'filesystem') {
    const problem = storeDirProblem(storeDir, {
      dataDir,
      databaseUrl: operations.databaseUrl,
      internsDir: resolve(env.GATEHOUSE_INTERNS_DIR || join(dataDir, 'interns')),
    });
    if (problem) throw new Error(problem);
  }
  return {
    port: intFrom(env, 'MEDIA_PORT', 8081),
    host: env.MEDIA_HOST || '0.0.0.0',
    logLevel: env.LOG_LEVEL || 'info',
    routes,
    providers,
    maxUploadBytes: intFrom(env, 'GATEHOUSE_MEDIA_MAX_UPLOAD_BYTES', 20 * 1024 * 1024, 1),
    bodyLimit: intFrom(env, 'GATEHOUSE_MEDIA_BODY_LIMIT', 1024 * 1024, 1024),
    publicUrl: publicUrl ? publicUrl.replace(/\/+$/, '') : null,
    storeDir,
    timeoutMs: intFrom(env, 'GATEHOUSE_MEDIA_TIMEOUT_MS', 120_000, 1),
    fetchTimeoutMs: intFrom(env, 'GATEHOUSE_MEDIA_FETCH_TIMEOUT_MS', 30_000, 1),
    fetchPrivate: isOn(env.GATEHOUSE_MEDIA_FETCH_PRIVATE),
    http: loadHttpTimeouts(env),
    shutdownGraceMs: intFrom(env, 'GATEHOUSE_SHUTDOWN_GRACE_MS', 20_000, 0),
    ...operations,
  };
}

/** The store, authentication and queue settings (GATEHOUSE_MEDIA_STORE, _S3_*, _AUTH, _TOKEN, _CONCURRENCY, _QUEUE). */
function loadMediaOperations(env: Env, dataDir: string) {
  const store = (env.GATEHOUSE_MEDIA_STORE || 'filesystem').toLowerCase();
  if (store !== 'filesystem' && store !== 's3')
    throw new Error('GATEHOUSE_MEDIA_STORE must be filesystem or s3');
  const auth = env.GATEHOUSE_MEDIA_AUTH ? env.GATEHOUSE_MEDIA_AUTH.toLowerCase() : null;
  if (auth !== null && !MEDIA_AUTH_MODES.includes(auth as MediaAuthMode))
    throw new Error(`GATEHOUSE_MEDIA_AUTH must be one of ${MEDIA_AUTH_MODES.join(', ')}`);
  const token = env.GATEHOUSE_MEDIA_TOKEN || null;
  if (auth === 'token' && (!token || token.length < 16))
    throw new Error('GATEHOUSE_MEDIA_AUTH=token needs GATEHOUSE_MEDIA_TOKEN (at least 16 characters)');
  return {
    store: store as 'filesystem' | 's3',
    s3: store === 's3' ? loadS3Config(env) : null,
    auth: auth as MediaAuthMode | null,
    token,
    databaseUrl: env.DATABASE_URL || `sqlite:${join(dataDir, 'gatehouse.db')}`,
    masterKey: auth === 'keys' ? readMasterKey(env, dataDir) : null,
    concurrency: intFrom(env, 'GATEHOUSE_MEDIA_CONCURRENCY', 2, 1),
    queue: intFrom(env, 'GATEHOUSE_MEDIA_QUEUE', 16, 0),
    queuePerOrganization: intFrom(env, 'GATEHOUSE_MEDIA_QUEUE_PER_ORG', 0, 0),
  };
}

/** SigV4 presigned URLs live at most 7 days. */
function presignTtl(s: number): number {
  if (s > 604_800) throw new Error('GATEHOUSE_MEDIA_S3_URL_TTL_S must be at most 604800 (7 days)');
  return s;
}

function loadS3Config(env: Env): MediaS3Config {
  const bucket = env.GATEHOUSE_MEDIA_S3_BUCKET?.trim();
  if (!bucket) throw new Error('GATEHOUSE_MEDIA_STORE=s3 needs GATEHOUSE_MEDIA_S3_BUCKET');
  const endpoint = env.GATEHOUSE_MEDIA_S3_ENDPOINT?.trim() || null;
  if (endpoint && !/^https?:\/\/[^/]/i.test(endpoint))
    throw new Error('GATEHOUSE_MEDIA_S3_ENDPOINT must be an http(s) URL');
  const publicUrl = env.GATEHOUSE_MEDIA_S3_PUBLIC_URL?.trim() || null;
  if (publicUrl && !/^https?:\/\/[^/]/i.test(publicUrl))
    throw new Error('GATEHOUSE_MEDIA_S3_PUBLIC_URL must be an http(s) URL');
  const accessKeyId = env.GATEHOUSE_MEDIA_S3_ACCESS_KEY_ID || '';
  const secretAccessKey = env.GATEHOUSE_MEDIA_S3_SECRET_ACCESS_KEY || '';
  if (Boolean(accessKeyId) !== Boolean(secretAccessKey))
    throw new Error(
      'Set both GATEHOUSE_MEDIA_S3_ACCESS_KEY_ID and GATEHOUSE_MEDIA_S3_SECRET_ACCESS_KEY, or neither',
    );
  return {
    endpoint,
    bucket,
    region: env.GATEHOUSE_MEDIA_S3_REGION || 'us-east-1',
    credentials: accessKeyId ? { accessKeyId, secretAccessKey } : null,
    publicUrl: publicUrl ? publicUrl.replace(/\/+$/, '') : null,
    urlTtlS: presignTtl(intFrom(env, 'GATEHOUSE_MEDIA_S3_URL_TTL_S', 3600, 1)),
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
    const price = r.priceUsd ?? r.price_usd;
    if (price !== undefined) {
      if (typeof price !== 'number' || !Number.isFinite(price) || price < 0)
        throw new Error(`${where}.price_usd must be a non-negative number`);
      if (price > 0) route.priceUsd = price;
    }
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
