import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { ProviderConfig, ProviderKind } from '../providers/types.js';

/** Which guardrail ZDR flag governs a provider. */
export type Vendor = 'openai' | 'anthropic' | 'google' | 'xai' | 'other';

export interface ProviderEntry {
  config: ProviderConfig;
  /** Zero data retention: the provider keeps no prompts or completions. */
  zdr: boolean;
  /** The provider may train on data sent to it. */
  trainsOnData: boolean;
  vendor: Vendor;
  region: string;
  /** The built-in deterministic development provider (labelled in /models). */
  development: boolean;
  /** Requests a batch worker sends it at once (null: GATEHOUSE_BATCH_PROVIDER_CONCURRENCY). */
  batchConcurrency?: number | null;
}

/** USD per one million tokens (and per request for `request`). */
export interface Pricing {
  prompt: number;
  completion: number;
  cached_prompt?: number;
  cache_write?: number;
  request?: number;
}

export type Capability = 'tools' | 'json' | 'logprobs' | 'reasoning' | 'images';

export interface ModelEndpoint {
  provider: string;
  upstreamModel: string;
  pricing: Pricing;
  contextLength: number;
  maxCompletionTokens: number | null;
  capabilities: Capability[];
}

export interface ModelEntry {
  /** Canonical slug `author/model`. */
  id: string;
  name: string;
  aliases: string[];
  kind: 'chat' | 'embeddings';
  description: string;
  endpoints: ModelEndpoint[];
}

export interface Catalog {
  providers: Map<string, ProviderEntry>;
  models: Map<string, ModelEntry>;
  /** alias or id → canonical id */
  lookup: Map<string, string>;
}

const ALL_CAPS: Capability[] = ['tools', 'json', 'logprobs', 'reasoning', 'images'];

/** The built-in development provider and its models (on unless GATEHOUSE_DEV_PROVIDER=false). */
function devCatalog(): { provider: ProviderEntry; models: ModelEntry[] } {
  const provider: ProviderEntry = {
    config: { slug: 'gatehouse', kind: 'dev', baseUrl: 'internal://dev', apiKey: null },
    zdr: true,
    trainsOnData: false,
    vendor: 'other',
    region: 'local',
    development: true,
  };
  const endpoint = (upstreamModel: string, pricing: Pricing): ModelEndpoint => ({
    provider: 'gatehouse',
    upstreamModel,
    pricing,
    contextLength: 131_072,
    maxCompletionTokens: null,
    capabilities: ALL_CAPS,
  });
  return {
    provider,
    models: [
      {
        id: 'gatehouse/echo',
        name: 'Gatehouse Echo (development)',
        aliases: ['echo'],
        kind: 'chat',
        description: 'Development provider: replies with the last user message. Deterministic, offline.',
        endpoints: [endpoint('echo', { prompt: 1, completion: 2 })],
      },
      {
        id: 'gatehouse/scripted',
        name: 'Gatehouse Scripted (development)',
        aliases: [],
        kind: 'chat',
        description:
          'Development provider driven by a `gatehouse:{…}` directive in the last user message: text, tool calls, errors, delays and token counts.',
        endpoints: [endpoint('scripted', { prompt: 1, completion: 2 })],
      },
      {
        id: 'gatehouse/embed',
        name: 'Gatehouse Embeddings (development)',
        aliases: [],
        kind: 'embeddings',
        description: 'Development provider: deterministic 8-dimensional embeddings.',
        endpoints: [endpoint('embed', { prompt: 0.1, completion: 0 })],
      },
    ],
  };
}

/** Defaults for the providers configured by environment variables alone. */
const ENV_PROVIDERS: {
  env: string;
  slug: string;
  kind: ProviderKind;
  baseUrl: string;
  vendor: Vendor;
  models: { id: string; upstream: string; pricing: Pricing; kind?: 'embeddings'; context: number }[];
}[] = [
  {
    env: 'OPENAI',
    slug: 'openai',
    kind: 'openai',
    baseUrl: 'https://api.openai.com/v1',
    vendor: 'openai',
    models: [
      {
        id: 'openai/gpt-4o-mini',
        upstream: 'gpt-4o-mini',
        pricing: { prompt: 0.15, completion: 0.6, cached_prompt: 0.075 },
        context: 128_000,
      },
      {
        id: 'openai/gpt-4o',
        upstream: 'gpt-4o',
        pricing: { prompt: 2.5, completion: 10, cached_prompt: 1.25 },
        context: 128_000,
      },
      {
        id: 'openai/text-embedding-3-small',
        upstream: 'text-embedding-3-small',
        pricing: { prompt: 0.02, completion: 0 },
        kind: 'embeddings',
        context: 8191,
      },
    ],
  },
  {
    env: 'ANTHROPIC',
    slug: 'anthropic',
    kind: 'anthropic',
    baseUrl: 'https://api.anthropic.com',
    vendor: 'anthropic',
    models: [
      {
        id: 'anthropic/claude-sonnet-4',
        upstream: 'claude-sonnet-4-20250514',
        pricing: { prompt: 3, completion: 15, cached_prompt: 0.3, cache_write: 3.75 },
        context: 200_000,
      },
      {
        id: 'anthropic/claude-3.5-haiku',
        upstream: 'claude-3-5-haiku-20241022',
        pricing: { prompt: 0.8, completion: 4, cached_prompt: 0.08, cache_write: 1 },
        context: 200_000,
      },
    ],
  },
  {
    env: 'GEMINI',
    slug: 'google-ai-studio',
    kind: 'google',
    baseUrl: 'https://generativelanguage.googleapis.com/v1beta',
    vendor: 'google',
    models: [
      {
        id: 'google/gemini-2.5-flash',
        upstream: 'gemini-2.5-flash',
        pricing: { prompt: 0.3, completion: 2.5, cached_prompt: 0.075 },
        context: 1_048_576,
      },
      {
        id: 'google/text-embedding-004',
        upstream: 'text-embedding-004',
        pricing: { prompt: 0, completion: 0 },
        kind: 'embeddings',
        context: 2048,
      },
    ],
  },
];

/** Shape of GATEHOUSE_CONFIG (JSON or YAML). See docs/configuration.md. */
interface FileConfig {
  providers?: {
    slug: string;
    kind: ProviderKind;
    base_url: string;
    api_key?: string;
    api_key_env?: string;
    headers?: Record<string, string>;
    zdr?: boolean;
    trains_on_data?: boolean;
    vendor?: Vendor;
    region?: string;
    batch_concurrency?: number;
  }[];
  models?: {
    id: string;
    name?: string;
    aliases?: string[];
    kind?: 'chat' | 'embeddings';
    description?: string;
    endpoints: {
      provider: string;
      upstream_model?: string;
      pricing?: Partial<Pricing>;
      context_length?: number;
      max_completion_tokens?: number;
      capabilities?: Capability[];
    }[];
  }[];
  development_provider?: boolean;
}

export class CatalogError extends Error {}

function readFileConfig(path: string): FileConfig {
  const text = readFileSync(path, 'utf8');
  const parsed = /\.json$/i.test(path) ? JSON.parse(text) : parseYaml(text);
  if (!parsed || typeof parsed !== 'object') throw new CatalogError(`${path}: expected an object`);
  return parsed as FileConfig;
}

const vendorOf = (kind: ProviderKind, slug: string): Vendor =>
  kind === 'openai'
    ? 'openai'
    : kind === 'anthropic'
      ? 'anthropic'
      : kind === 'google'
        ? 'google'
        : slug === 'xai'
          ? 'xai'
          : 'other';

/**
 * Builds the catalog: the development provider (unless disabled), providers configured by
 * OPENAI_/ANTHROPIC_/GEMINI_ API_KEY/BASE_URL with their default models, then GATEHOUSE_CONFIG,
 * whose providers and models add to or replace (same slug / id) the defaults.
 */
export function loadCatalog(env: Record<string, string | undefined> = process.env): Catalog {
  const providers = new Map<string, ProviderEntry>();
  const models = new Map<string, ModelEntry>();
  const file = env.GATEHOUSE_CONFIG ? readFileConfig(env.GATEHOUSE_CONFIG) : {};
  const devOn = (env.GATEHOUSE_DEV_PROVIDER ?? String(file.development_provider ?? true)) !== 'false';
  if (devOn) {
    const dev = devCatalog();
    providers.set('gatehouse', dev.provider);
    for (const m of dev.models) models.set(m.id, m);
  }
  for (const p of ENV_PROVIDERS) {
    const apiKey = env[`${p.env}_API_KEY`];
    const baseUrl = env[`${p.env}_BASE_URL`];
    if (!apiKey && !baseUrl) continue;
    providers.set(p.slug, {
      config: {
        slug: p.slug,
        kind: p.kind,
        baseUrl: (baseUrl || p.baseUrl).replace(/\/+$/, ''),
        apiKey: apiKey ?? null,
      },
      zdr: false,
      trainsOnData: false,
      vendor: p.vendor,
      region: 'global',
      development: false,
    });
    for (const m of p.models) {
      models.set(m.id, {
        id: m.id,
        name: m.id,
        aliases: [m.id.split('/')[1] as string],
        kind: m.kind ?? 'chat',
        description: '',
        endpoints: [
          {
            provider: p.slug,
            upstreamModel: m.upstream,
            pricing: m.pricing,
            contextLength: m.context,
            maxCompletionTokens: null,
            capabilities: m.kind === 'embeddings' ? [] : ALL_CAPS,
          },
        ],
      });
    }
  }
  for (const p of file.providers ?? []) {
    if (!p.slug || !p.kind || !p.base_url)
      throw new CatalogError('every provider needs slug, kind and base_url');
    providers.set(p.slug, {
      config: {
        slug: p.slug,
        kind: p.kind,
        baseUrl: p.base_url.replace(/\/+$/, ''),
        apiKey: p.api_key ?? (p.api_key_env ? (env[p.api_key_env] ?? null) : null),
        headers: p.headers,
      },
      zdr: p.zdr ?? false,
      trainsOnData: p.trains_on_data ?? false,
      vendor: p.vendor ?? vendorOf(p.kind, p.slug),
      region: p.region ?? 'global',
      development: p.kind === 'dev',
      batchConcurrency: p.batch_concurrency ?? null,
    });
  }
  for (const m of file.models ?? []) {
    if (!m.id || !Array.isArray(m.endpoints) || m.endpoints.length === 0) {
      throw new CatalogError('every model needs an id and at least one endpoint');
    }
    models.set(m.id, {
      id: m.id,
      name: m.name ?? m.id,
      aliases: m.aliases ?? [],
      kind: m.kind ?? 'chat',
      description: m.description ?? '',
      endpoints: m.endpoints.map((e) => {
        if (!providers.has(e.provider))
          throw new CatalogError(`model ${m.id}: unknown provider ${e.provider}`);
        return {
          provider: e.provider,
          upstreamModel: e.upstream_model ?? m.id.split('/').slice(1).join('/'),
          pricing: { prompt: 0, completion: 0, ...e.pricing },
          contextLength: e.context_length ?? 128_000,
          maxCompletionTokens: e.max_completion_tokens ?? null,
          capabilities: e.capabilities ?? (m.kind === 'embeddings' ? [] : ALL_CAPS),
        };
      }),
    });
  }
  // Models whose every provider is gone (e.g. the development provider turned off) are dropped.
  for (const [id, m] of models) {
    m.endpoints = m.endpoints.filter((e) => providers.has(e.provider));
    if (m.endpoints.length === 0) models.delete(id);
  }
  const lookup = new Map<string, string>();
  for (const m of models.values()) {
    lookup.set(m.id, m.id);
    for (const a of m.aliases) if (!lookup.has(a)) lookup.set(a, m.id);
  }
  return { providers, models, lookup };
}

/** The model a request names: canonical slug, alias, or slug with a `:variant` suffix. */
export function findModel(catalog: Catalog, requested: string): ModelEntry | undefined {
  const id = catalog.lookup.get(requested) ?? catalog.lookup.get(requested.replace(/:[\w-]+$/, ''));
  return id ? catalog.models.get(id) : undefined;
}
