/**
 * Provider configuration: the `providers` list of the media routes file (GATEHOUSE_MEDIA_CONFIG),
 * camelCase or snake_case keys. A route's `provider` names one of these slugs (`local` is built in).
 *
 *   providers:
 *     - slug: openai                 # [A-Za-z0-9._-], not `local`
 *       kind: openai-images          # or task-api
 *       base_url: https://api.openai.com/v1
 *       api_key_env: OPENAI_API_KEY  # or api_key: sk-… (inline); neither → no Authorization header
 *       timeout_ms: 120000           # per HTTP attempt (default 120000)
 *       max_attempts: 3              # attempts on 429/5xx/connection errors (default 3)
 *       poll_interval_ms: 1000       # task-api only (default 1000)
 *       max_output_bytes: 104857600  # largest output fetched or decoded (default 100 MiB)
 *       max_inline_bytes: 10485760   # task-api: largest input image sent as a data: URL (default 10 MiB)
 *       headers: {X-Extra: value}    # sent on every request
 *
 * The API key is kept as a non-enumerable property, so logging or serialising the configuration
 * never shows it.
 */

import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';

export type ProviderKind = 'openai-images' | 'task-api';
export const PROVIDER_KINDS: readonly ProviderKind[] = ['openai-images', 'task-api'];

export interface MediaProviderConfig {
  slug: string;
  kind: ProviderKind;
  /** Without a trailing slash. */
  baseUrl: string;
  /** Non-enumerable (never serialised). Null: no Authorization header. */
  readonly apiKey: string | null;
  timeoutMs: number;
  maxAttempts: number;
  pollIntervalMs: number;
  maxOutputBytes: number;
  maxInlineBytes: number;
  headers: Record<string, string>;
}

export const PROVIDER_DEFAULTS = {
  timeoutMs: 120_000,
  maxAttempts: 3,
  pollIntervalMs: 1000,
  maxOutputBytes: 100 * 1024 * 1024,
  maxInlineBytes: 10 * 1024 * 1024,
} as const;

const SLUG = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const HEADER = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;

type Env = Record<string, string | undefined>;

/** Reads the `providers` list of a routes file (absent → none). */
export function loadProvidersFile(path: string, env: Env = process.env): MediaProviderConfig[] {
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`GATEHOUSE_MEDIA_CONFIG ${path}: ${(err as Error).message}`);
  }
  const providers = (doc as { providers?: unknown } | null)?.providers;
  if (providers === undefined || providers === null) return [];
  try {
    if (!Array.isArray(providers)) throw new Error('"providers" must be a list');
    return parseProviders(providers, env);
  } catch (err) {
    throw new Error(`GATEHOUSE_MEDIA_CONFIG ${path}: ${(err as Error).message}`);
  }
}

export function parseProviders(input: unknown[], env: Env = process.env): MediaProviderConfig[] {
  const seen = new Set<string>();
  return input.map((raw, i) => {
    const where = `providers[${i}]`;
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new Error(`${where} must be an object`);
    const p = raw as Record<string, unknown>;
    const pick = (camel: string, snake: string) => p[camel] ?? p[snake];
    const slug = p.slug;
    if (typeof slug !== 'string' || !SLUG.test(slug))
      throw new Error(`${where}.slug must match [A-Za-z0-9._-]`);
    if (slug === 'local') throw new Error(`${where}.slug: "local" is the built-in generator`);
    if (seen.has(slug)) throw new Error(`${where}: provider ${slug} is defined twice`);
    seen.add(slug);
    const at = `providers.${slug}`;
    if (!PROVIDER_KINDS.includes(p.kind as ProviderKind))
      throw new Error(`${at}.kind must be one of ${PROVIDER_KINDS.join(', ')}`);
    const baseUrl = pick('baseUrl', 'base_url');
    if (typeof baseUrl !== 'string' || !/^https?:\/\/[^/]/i.test(baseUrl))
      throw new Error(`${at}.base_url must be an http(s) URL`);
    const int = (camel: string, snake: string, fallback: number, min: number) => {
      const v = pick(camel, snake);
      if (v === undefined || v === null) return fallback;
      if (!Number.isInteger(v) || (v as number) < min)
        throw new Error(`${at}.${snake} must be an integer ≥ ${min}`);
      return v as number;
    };
    let apiKey: string | null = null;
    const inline = pick('apiKey', 'api_key');
    const fromEnv = pick('apiKeyEnv', 'api_key_env');
    if (inline !== undefined && fromEnv !== undefined)
      throw new Error(`${at}: give api_key or api_key_env, not both`);
    if (inline !== undefined) {
      if (typeof inline !== 'string' || !inline) throw new Error(`${at}.api_key must be a non-empty string`);
      apiKey = inline;
    } else if (fromEnv !== undefined) {
      if (typeof fromEnv !== 'string' || !fromEnv)
        throw new Error(`${at}.api_key_env must be a variable name`);
      const v = env[fromEnv];
      if (!v) throw new Error(`${at}.api_key_env: the environment variable ${fromEnv} is not set`);
      apiKey = v;
    }
    const headers: Record<string, string> = {};
    const rawHeaders = p.headers ?? {};
    if (!rawHeaders || typeof rawHeaders !== 'object' || Array.isArray(rawHeaders))
      throw new Error(`${at}.headers must be an object`);
    for (const [k, v] of Object.entries(rawHeaders)) {
      if (!HEADER.test(k) || typeof v !== 'string')
        throw new Error(`${at}.headers.${k} must be a string header`);
      headers[k.toLowerCase()] = v;
    }
    const config = {
      slug,
      kind: p.kind as ProviderKind,
      baseUrl: baseUrl.replace(/\/+$/, ''),
      timeoutMs: int('timeoutMs', 'timeout_ms', PROVIDER_DEFAULTS.timeoutMs, 1),
      maxAttempts: int('maxAttempts', 'max_attempts', PROVIDER_DEFAULTS.maxAttempts, 1),
      pollIntervalMs: int('pollIntervalMs', 'poll_interval_ms', PROVIDER_DEFAULTS.pollIntervalMs, 1),
      maxOutputBytes: int('maxOutputBytes', 'max_output_bytes', PROVIDER_DEFAULTS.maxOutputBytes, 1),
      maxInlineBytes: int('maxInlineBytes', 'max_inline_bytes', PROVIDER_DEFAULTS.maxInlineBytes, 1),
      headers,
    } as MediaProviderConfig;
    Object.defineProperty(config, 'apiKey', { value: apiKey, enumerable: false });
    return config;
  });
}

/** Start-up check: every route's provider is `local` or a configured slug that can serve its kind. */
export function checkRouteProviders(
  routes: readonly { kind: string; name: string; provider: string }[],
  providers: readonly MediaProviderConfig[],
): void {
  const slugs = new Set(['local', ...providers.map((p) => p.slug)]);
  for (const r of routes) {
    if (r.kind === 'video' && providers.some((p) => p.slug === r.provider && p.kind === 'openai-images'))
      throw new Error(
        `Media route ${r.kind}/${r.name}: provider "${r.provider}" (openai-images) makes no videos`,
      );
    if (!slugs.has(r.provider))
      throw new Error(
        `Media route ${r.kind}/${r.name}: unknown provider "${r.provider}" (configured: ${[...slugs].join(', ')})`,
      );
  }
}
