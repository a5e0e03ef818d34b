/**
 * The catalog's shapes (providers, models, endpoints, prices, credentials), apart from the code that
 * builds them, so the catalog's builders and the router import them without importing each other.
 */
import type { ProviderConfig } from '../providers/types.js';

/** A key to call an endpoint with: the operator's, or a BYOK credential's secret. */
export interface Credential {
  apiKey: string | null;
  isByok: boolean;
  byokId?: string;
  /** How metrics and the operator endpoint name it: the operator key's name, or the BYOK credential's id. */
  name?: string;
  /** Its share of calls among the credentials of its tier (default 1). */
  weight?: number;
  /** Its circuit breaker's key and version (a new secret, a BYOK update: a new version). None: no breaker. */
  health?: { key: string; version: string };
}

/** Which guardrail ZDR flag governs a provider. */
export type Vendor = 'openai' | 'anthropic' | 'google' | 'xai' | 'other';

export interface ProviderEntry {
  config: ProviderConfig;
  /** The operator's credentials, each named and weighted (built from `config` when the catalog loads). */
  credentials?: Credential[];
  /** Zero data retention: the provider keeps no prompts or completions. */
  zdr: boolean;
  /** The provider may train on data sent to it. */
  trainsOnData: boolean;
  vendor: Vendor;
  region: string;
  /** The built-in deterministic development provider (labelled in /models). */
  development: boolean;
  /**
   * Whether organizations' BYOK credentials may be used on this provider (GATEHOUSE_CONFIG `byok`).
   * Off, calls always go out with the operator's credential and are billed as the operator's.
   */
  byok: boolean;
  /** Requests a batch worker sends it at once (null: GATEHOUSE_BATCH_PROVIDER_CONCURRENCY). */
  batchConcurrency?: number | null;
  /** Batches go to the provider's own batch API (GATEHOUSE_CONFIG `native_batches`; unset: on for openai and anthropic kinds). */
  nativeBatches?: boolean;
  /** The provider's batch discount, a fraction of the price (GATEHOUSE_CONFIG `batch_discount`; unset: 0.5). */
  batchDiscount?: number;
  /** The model data's provider id that lists and prices its models; false: none (GATEHOUSE_CONFIG `model_data`). */
  modelData?: string | false;
  /**
   * OpenAI-compatible servers: add the models their `GET /models` lists (default: when the model
   * data does not know the vendor). Anthropic: ask its Models API for output limits (default: on).
   */
  discoverModels?: boolean;
}

/** USD per one million tokens (and per request for `request`). */
export interface Pricing {
  prompt: number;
  completion: number;
  cached_prompt?: number;
  cache_write?: number;
  /** USD per call; a rerank call's per search (each search unit its upstream reports). */
  request?: number;
  /** USD per web search the provider runs for the call (its server-side search tool). */
  web_search?: number;
  /** USD per one million input characters (text to speech priced by its text: OpenAI's tts-1). */
  characters?: number;
  /** USD per minute of input audio (transcription priced by duration: OpenAI's whisper-1). */
  audio_minute?: number;
  /** Prices that apply to the whole call once its prompt exceeds `above` tokens (long-context tiers). */
  long_context?: { above: number } & Partial<Omit<Pricing, 'long_context' | 'request' | 'web_search'>>;
}

export type Capability = 'tools' | 'json' | 'logprobs' | 'reasoning' | 'images';

export interface ModelEndpoint {
  provider: string;
  upstreamModel: string;
  pricing: Pricing;
  contextLength: number;
  /** The context length is a default (128k), not known: the context-window check does not apply. */
  contextAssumed?: boolean;
  maxCompletionTokens: number | null;
  capabilities: Capability[];
}

/** What a model does, and so which endpoint calls it. */
export type ModelKind = 'chat' | 'embeddings' | 'rerank' | 'speech' | 'transcription';

export interface ModelEntry {
  /** Canonical slug `author/model`. */
  id: string;
  name: string;
  aliases: string[];
  kind: ModelKind;
  description: string;
  endpoints: ModelEndpoint[];
  /** Not listed: synthesized for an id passed through to a configured provider. */
  unlisted?: boolean;
  /** False when no price is known (calls cost 0 and are flagged `pricing_unknown`). */
  priced?: boolean;
  /** Models tried in order when every provider of this one fails (GATEHOUSE_CONFIG `fallbacks`). */
  fallbacks?: string[];
  /** The model a prompt too long for this one's context goes to (GATEHOUSE_CONFIG `context_fallback`). */
  contextFallback?: string;
}

/** What a provider's Models API says of one model (Anthropic's `GET /v1/models`); null: not said. */
export interface ModelLimits {
  id: string;
  maxOutputTokens: number | null;
  maxInputTokens: number | null;
}

export interface Catalog {
  providers: Map<string, ProviderEntry>;
  models: Map<string, ModelEntry>;
  /** alias or id → canonical id */
  lookup: Map<string, string>;
  /** GATEHOUSE_UNPRICED_MODELS: whether calls to models with no known price are served (at cost 0). */
  unpriced?: 'allow' | 'deny';
  /** Model ids each OpenAI-compatible server listed at its `GET /models` (kept across reloads). */
  discovered?: Map<string, string[]>;
  /** The model limits each Anthropic provider's Models API gave, by provider slug (kept across reloads). */
  limits?: Map<string, ModelLimits[]>;
  /** Unlisted ids resolved since the last reload. */
  passthrough?: Map<string, ModelEntry>;
  /**
   * What is built from the providers' configuration (their adapters: base URL, key, headers, Azure
   * settings): prepared for a reloaded catalog before it is swapped in — throwing refuses the
   * reload — and installed in the same step as the swap.
   */
  prepareProviders?: (providers: Map<string, ProviderEntry>) => { install(): void };
}
