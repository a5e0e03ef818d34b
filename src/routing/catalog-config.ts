import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { ProviderKind } from '../providers/types.js';
import { azureSettings } from './catalog-azure.js';
import { bedrockSettings } from './catalog-bedrock.js';
import { CatalogError } from './catalog-error.js';
import {
  envPresetProviders,
  isPresetKind,
  PRESET_KINDS,
  presetEntry,
  presetKeyEnv,
} from './catalog-presets.js';
import type {
  Capability,
  ModelEndpoint,
  ModelEntry,
  ModelKind,
  Pricing,
  ProviderEntry,
  Vendor,
} from './catalog-types.js';
import { vertexSettings } from './catalog-vertex.js';
import { parseOperatorKeys } from './credentials/operator-keys.js';

export { CatalogError };

export const ALL_CAPS: Capability[] = ['tools', 'json', 'logprobs', 'reasoning', 'images'];

/** The built-in development provider and its models (on unless GATEHOUSE_DEV_PROVIDER=false). */
export function devCatalog(): { provider: ProviderEntry; models: ModelEntry[] } {
  const provider: ProviderEntry = {
    config: { slug: 'gatehouse', kind: 'dev', baseUrl: 'internal://dev', apiKey: null },
    zdr: true,
    trainsOnData: false,
    vendor: 'other',
    region: 'local',
    development: true,
    byok: false,
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
      {
        id: 'gatehouse/rerank',
        name: 'Gatehouse Rerank (development)',
        aliases: [],
        kind: 'rerank',
        description: "Development provider: scores each document by the query's words it contains.",
        endpoints: [endpoint('rerank', { prompt: 0.1, completion: 0 })],
      },
      {
        id: 'gatehouse/speech',
        name: 'Gatehouse Speech (development)',
        aliases: [],
        kind: 'speech',
        description: 'Development provider: a WAV of silence, 50 ms per character of the input.',
        endpoints: [
          { ...endpoint('speech', { prompt: 0, completion: 0, characters: 15 }), capabilities: [] },
        ],
      },
      {
        id: 'gatehouse/transcribe',
        name: 'Gatehouse Transcription (development)',
        aliases: [],
        kind: 'transcription',
        description: 'Development provider: says how many bytes of audio it heard.',
        endpoints: [
          { ...endpoint('transcribe', { prompt: 0, completion: 0, audio_minute: 0.006 }), capabilities: [] },
        ],
      },
    ],
  };
}

/**
 * BYOK is allowed by default only on the public vendors' APIs (kinds openai, anthropic, google) the
 * operator holds a key for. A keyless entry, or an OpenAI-compatible server (a local vLLM, say), may
 * answer whatever key it is sent, so an organization's made-up BYOK key would buy the operator's
 * capacity for free: there BYOK needs `byok: true`.
 */
export const byokByDefault = (kind: ProviderKind, apiKey: string | null): boolean =>
  apiKey !== null && (kind === 'openai' || kind === 'anthropic' || kind === 'google');

/** The providers configured by environment variables alone (their models come from the model data). */
const ENV_PROVIDERS: { env: string; slug: string; kind: ProviderKind; baseUrl: string; vendor: Vendor }[] = [
  { env: 'OPENAI', slug: 'openai', kind: 'openai', baseUrl: 'https://api.openai.com/v1', vendor: 'openai' },
  {
    env: 'ANTHROPIC',
    slug: 'anthropic',
    kind: 'anthropic',
    baseUrl: 'https://api.anthropic.com',
    vendor: 'anthropic',
  },
  {
    env: 'GEMINI',
    slug: 'google-ai-studio',
    kind: 'google',
    baseUrl: 'https://generativelanguage.googleapis.com/v1beta',
    vendor: 'google',
  },
];

/** Providers configured by OPENAI_/ANTHROPIC_/GEMINI_ API_KEY or BASE_URL, then the vendor presets' (GROQ_API_KEY …). */
export function envProviders(env: Record<string, string | undefined>): ProviderEntry[] {
  const builtIn = ENV_PROVIDERS.flatMap((p) => {
    const apiKey = env[`${p.env}_API_KEY`];
    const baseUrl = env[`${p.env}_BASE_URL`];
    if (!apiKey && !baseUrl) return [];
    return [
      {
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
        byok: byokByDefault(p.kind, apiKey ?? null),
      },
    ];
  });
  return [...builtIn, ...envPresetProviders(env)];
}

/** Shape of GATEHOUSE_CONFIG (JSON or YAML). See docs/configuration.md. */
export interface FileConfig {
  providers?: {
    slug: string;
    /** A provider kind, or a vendor preset (`groq`, `ollama` …: see providers/presets.ts). */
    kind: ProviderKind | (typeof PRESET_KINDS)[number];
    /** Required, except for a vendor preset (its vendor's URL by default). */
    base_url?: string;
    api_key?: string;
    api_key_env?: string;
    /** Several operator keys instead of api_key: `[{ name, key | key_env, weight }]` (credentials/operator-keys.ts). */
    keys?: { name?: string; key?: string; key_env?: string; weight?: number }[];
    headers?: Record<string, string>;
    zdr?: boolean;
    trains_on_data?: boolean;
    vendor?: Vendor;
    region?: string;
    batch_concurrency?: number;
    /** Send batches to the provider's batch API (openai and anthropic kinds; default on there). */
    native_batches?: boolean;
    /** The provider's batch discount, 0–1 (default 0.5: half price). */
    batch_discount?: number;
    /** The model data's provider id whose models and prices this provider serves, or false. */
    model_data?: string | false;
    /** OpenAI-compatible servers: list the server's own `GET /models` (default: vendors the model data does not know); Anthropic: ask its Models API for output limits (default: on). */
    discover_models?: boolean;
    /** Whether organizations' BYOK credentials apply here (default: see byokByDefault). */
    byok?: boolean;
    /** Azure OpenAI (`kind: azure`): the resource URL, instead of base_url. */
    endpoint?: string;
    /** Azure OpenAI: the api-version of the deployment routes. */
    api_version?: string;
    /** Azure OpenAI: model id → deployment name. */
    deployments?: Record<string, string>;
    /** AWS Bedrock (`kind: bedrock`): IAM keys (else the AWS default chain), its profile, model id map. */
    access_key_id?: string;
    secret_access_key?: string;
    session_token?: string;
    profile?: string;
    model_ids?: Record<string, string>;
    /** AWS Bedrock batch inference: the S3 location, the service role, optional endpoints. */
    batch_s3_uri?: string;
    batch_role_arn?: string;
    batch_s3_endpoint?: string;
    batch_endpoint?: string;
    /** Azure OpenAI: Microsoft Entra ID client credentials instead of a key. */
    auth?: {
      tenant_id: string;
      client_id: string;
      client_secret?: string;
      client_secret_env?: string;
      token_url?: string;
    };
    /** Google Vertex AI (`kind: vertex`, with `region`): the Google Cloud project. */
    project?: string;
    /** Vertex AI: a service account key (object, JSON text or file path); absent: application default credentials. */
    credentials?: string | Record<string, unknown>;
    /** Vertex AI: the variable holding the key's JSON or its path. */
    credentials_env?: string;
    /** Vertex AI: the OAuth token endpoint, when not Google's. */
    token_url?: string;
    /** Vertex AI: model id → publisher (`google` | `anthropic`). */
    publishers?: Record<string, string>;
  }[];
  models?: {
    id: string;
    name?: string;
    aliases?: string[];
    kind?: ModelKind;
    description?: string;
    /** Models tried in order when every provider of this one fails (the request's `models` wins). */
    fallbacks?: string[];
    /** The model a prompt longer than this one's context goes to. */
    context_fallback?: string;
    /** Absent: the entry only sets `fallbacks`/`context_fallback` of a model the catalog has. */
    endpoints?: {
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

export function readFileConfig(path: string): FileConfig {
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

const KINDS: readonly ProviderKind[] = [
  'openai',
  'anthropic',
  'google',
  'openai-compatible',
  'azure',
  'vertex',
  'bedrock',
  'dev',
];

/**
 * The fields an adapter connects with: checked when the file loads (at start and on every reload),
 * so a typo is refused naming the field instead of failing the calls that reach the provider.
 */
function checkConnection(p: NonNullable<FileConfig['providers']>[number], where: string): void {
  const fail = (field: string, why: string): never => {
    throw new CatalogError(`${where}.${field} (provider ${p.slug}): ${why}`);
  };
  if (p.base_url !== undefined) {
    let url: URL | null = null;
    try {
      url = typeof p.base_url === 'string' ? new URL(p.base_url) : null;
    } catch {}
    if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.search || url.hash)
      // The value is not repeated: a URL may carry credentials.
      fail('base_url', 'must be an http(s) URL without a query string');
  }
  for (const field of ['api_key', 'api_key_env'] as const)
    if (p[field] !== undefined && (typeof p[field] !== 'string' || p[field] === ''))
      fail(field, 'must be a non-empty string');
  if (p.headers !== undefined) {
    if (!p.headers || typeof p.headers !== 'object' || Array.isArray(p.headers))
      fail('headers', 'must map header names to values');
    for (const [name, value] of Object.entries(p.headers as object))
      if (!/^[!#$%&'*+.^`|~\w-]+$/.test(name) || typeof value !== 'string' || /[\r\n]/.test(value))
        fail(`headers.${name}`, 'must be a header name with a one-line string value');
  }
}

/** The providers GATEHOUSE_CONFIG declares. */
export function fileProviders(file: FileConfig, env: Record<string, string | undefined>): ProviderEntry[] {
  return (file.providers ?? []).map((p, i) => {
    if (!p.slug || !p.kind) throw new CatalogError('every provider needs slug, kind and base_url');
    if (!isPresetKind(p.kind) && !KINDS.includes(p.kind))
      throw new CatalogError(
        `providers[${i}].kind: unknown kind ${JSON.stringify(p.kind)} (provider ${p.slug}); expected one of ${[...KINDS, ...PRESET_KINDS].join(', ')}`,
      );
    if (
      !p.base_url &&
      !isPresetKind(p.kind) &&
      p.kind !== 'azure' &&
      p.kind !== 'vertex' &&
      p.kind !== 'bedrock'
    )
      throw new CatalogError('every provider needs slug, kind and base_url');
    if (p.byok !== undefined && typeof p.byok !== 'boolean')
      throw new CatalogError(`provider ${p.slug}: byok must be true or false`);
    if (p.native_batches !== undefined && typeof p.native_batches !== 'boolean')
      throw new CatalogError(`provider ${p.slug}: native_batches must be true or false`);
    if (
      p.batch_discount !== undefined &&
      (typeof p.batch_discount !== 'number' || !(p.batch_discount >= 0 && p.batch_discount < 1))
    )
      throw new CatalogError(
        `provider ${p.slug}: batch_discount must be a number from 0 to 1 (0.5: half price)`,
      );
    checkConnection(p, `providers[${i}]`);
    // Several keys (`keys`, the first is `apiKey`), or one: a preset's comes from its vendor's
    // variable (GROQ_API_KEY …) unless the entry names one.
    const keys = parseOperatorKeys(p, `providers[${i}]`, env) ?? undefined;
    const keyEnv = p.api_key_env ?? (isPresetKind(p.kind) ? presetKeyEnv(p.kind) : undefined);
    const apiKey = keys ? (keys[0]?.apiKey ?? null) : (p.api_key ?? (keyEnv ? env[keyEnv] || null : null));
    if (isPresetKind(p.kind))
      return presetEntry(p.kind, {
        slug: p.slug,
        baseUrl: p.base_url,
        apiKey,
        keys,
        headers: p.headers,
        byok: p.byok,
        zdr: p.zdr,
        trainsOnData: p.trains_on_data,
        vendor: p.vendor,
        region: p.region,
        batchConcurrency: p.batch_concurrency,
        modelData: p.model_data,
        discoverModels: p.discover_models,
      });
    const kind = p.kind;
    // Azure: the resource endpoint is the base URL; its deployments and api-version ride along.
    const azure = kind === 'azure' ? azureSettings(p, apiKey, `providers[${i}]`, env) : null;
    // Vertex AI: the regional origin (or `endpoint`) is the base URL; project and credentials ride along.
    const vertex = kind === 'vertex' ? vertexSettings(p, `providers[${i}]`, env) : null;
    // Bedrock: the region's runtime endpoint (or `endpoint`); region, credentials, model ids ride along.
    const bedrock = kind === 'bedrock' ? bedrockSettings(p, `providers[${i}]`) : null;
    return {
      config: {
        slug: p.slug,
        kind,
        baseUrl:
          azure?.endpoint ??
          vertex?.endpoint ??
          bedrock?.endpoint ??
          (p.base_url as string).replace(/\/+$/, ''),
        apiKey,
        headers: p.headers,
        ...(azure ? { azure: azure.azure } : {}),
        ...(vertex ? { vertex: vertex.vertex } : {}),
        ...(bedrock ? { bedrock: bedrock.bedrock } : {}),
        ...(keys ? { keys } : {}),
      },
      byok: p.byok ?? byokByDefault(kind, apiKey),
      zdr: p.zdr ?? false,
      trainsOnData: p.trains_on_data ?? false,
      vendor: p.vendor ?? vendorOf(kind, p.slug),
      region: p.region ?? 'global',
      development: kind === 'dev',
      batchConcurrency: p.batch_concurrency ?? null,
      ...(p.native_batches !== undefined ? { nativeBatches: p.native_batches } : {}),
      ...(p.batch_discount !== undefined ? { batchDiscount: p.batch_discount } : {}),
      ...(p.model_data !== undefined ? { modelData: p.model_data } : {}),
      ...(p.discover_models !== undefined ? { discoverModels: p.discover_models } : {}),
    };
  });
}

/** The models GATEHOUSE_CONFIG declares (each replaces a catalog model of the same id). */
export function fileModels(file: FileConfig, providers: Map<string, ProviderEntry>): ModelEntry[] {
  return (file.models ?? []).filter(declaresEndpoints).map((m) => {
    return {
      id: m.id,
      name: m.name ?? m.id,
      aliases: m.aliases ?? [],
      kind: m.kind ?? 'chat',
      description: m.description ?? '',
      endpoints: (m.endpoints ?? []).map((e) => {
        if (!providers.has(e.provider))
          throw new CatalogError(`model ${m.id}: unknown provider ${e.provider}`);
        return {
          provider: e.provider,
          upstreamModel: e.upstream_model ?? m.id.split('/').slice(1).join('/'),
          pricing: { prompt: 0, completion: 0, ...e.pricing },
          contextLength: e.context_length ?? 128_000,
          ...(e.context_length === undefined ? { contextAssumed: true } : {}),
          maxCompletionTokens: e.max_completion_tokens ?? null,
          capabilities: e.capabilities ?? ((m.kind ?? 'chat') === 'chat' ? ALL_CAPS : []),
        };
      }),
    };
  });
}

type FileModel = NonNullable<FileConfig['models']>[number];

/** A model entry with endpoints declares a model; one with only fallbacks annotates a catalog model. */
function declaresEndpoints(m: FileModel): boolean {
  if (!m?.id) throw new CatalogError('every model needs an id and at least one endpoint');
  if (Array.isArray(m.endpoints) && m.endpoints.length > 0) return true;
  if (m.fallbacks === undefined && m.context_fallback === undefined)
    throw new CatalogError(`model ${m.id}: needs at least one endpoint`);
  return false;
}

/**
 * Sets each GATEHOUSE_CONFIG model's `fallbacks` and `context_fallback` on the catalog's model (a
 * model declared with endpoints, or one the catalog has from the model data). Every id named must
 * be in the catalog (by id or alias): a typo fails at startup, not on the call that needed it.
 */
export function modelFallbacks(
  file: FileConfig,
  models: Map<string, ModelEntry>,
  lookup: Map<string, string>,
): void {
  const resolve = (owner: string, id: unknown, field: string): string => {
    const found = typeof id === 'string' ? lookup.get(id) : undefined;
    if (!found) throw new CatalogError(`model ${owner}: ${field} ${String(id)} is not in the catalog`);
    return found;
  };
  for (const m of file.models ?? []) {
    if (m.fallbacks === undefined && m.context_fallback === undefined) continue;
    const id = lookup.get(m.id);
    const entry = id ? models.get(id) : undefined;
    if (!entry)
      throw new CatalogError(`model ${m.id}: not in the catalog (fallbacks need a model to apply to)`);
    if (m.fallbacks !== undefined) {
      if (!Array.isArray(m.fallbacks))
        throw new CatalogError(`model ${m.id}: fallbacks must be a list of model ids`);
      entry.fallbacks = m.fallbacks.map((f) => resolve(m.id, f, 'fallback'));
    }
    if (m.context_fallback !== undefined)
      entry.contextFallback = resolve(m.id, m.context_fallback, 'context_fallback');
  }
}
