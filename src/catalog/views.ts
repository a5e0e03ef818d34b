import type { Catalog, ModelEndpoint, ModelEntry, ProviderEntry } from '../routing/catalog.js';
import { perToken } from '../routing/pricing.js';

/**
 * The wire shapes of the catalog endpoints, as the official OpenRouter client validates them
 * (`Model`, `PublicEndpoint`, the provider list), plus Gatehouse's own fields (`development`,
 * `providers`, `pricing_known`).
 */

const PARAMS: Record<string, string[]> = {
  tools: ['tools', 'tool_choice', 'parallel_tool_calls'],
  json: ['response_format', 'structured_outputs'],
  logprobs: ['logprobs', 'top_logprobs'],
  reasoning: ['reasoning', 'include_reasoning'],
  images: [],
};
const BASE_PARAMS = ['max_tokens', 'temperature', 'top_p', 'stop', 'seed'];

/** Display names of the providers the official client knows by name (others show their slug). */
const PROVIDER_NAMES: Record<string, string> = {
  openai: 'OpenAI',
  anthropic: 'Anthropic',
  'google-ai-studio': 'Google AI Studio',
  'google-vertex': 'Google',
  groq: 'Groq',
  xai: 'xAI',
  mistral: 'Mistral',
  deepseek: 'DeepSeek',
  together: 'Together',
  fireworks: 'Fireworks',
  cerebras: 'Cerebras',
  gatehouse: 'Gatehouse',
};
export const providerName = (slug: string) => PROVIDER_NAMES[slug] ?? slug;

/** Tokenizer families the client's `ModelGroup` names. */
function tokenizer(id: string): string {
  if (/\/(gpt|o\d|codex|chatgpt|text-embedding)/.test(id)) return 'GPT';
  if (/claude/.test(id)) return 'Claude';
  if (/gemini/.test(id)) return 'Gemini';
  if (/gemma/.test(id)) return 'Gemma';
  return 'Other';
}

const cheapest = (m: ModelEntry): ModelEndpoint | undefined =>
  [...m.endpoints].sort(
    (a, b) => a.pricing.prompt + a.pricing.completion - (b.pricing.prompt + b.pricing.completion),
  )[0];

const capabilities = (m: ModelEntry) => new Set(m.endpoints.flatMap((e) => e.capabilities));

export function supportedParameters(m: ModelEntry, e?: ModelEndpoint): string[] {
  if (m.kind === 'embeddings') return ['dimensions', 'encoding_format'];
  if (m.kind === 'rerank') return ['top_n'];
  if (m.kind !== 'chat') return AUDIO_PARAMS[m.kind];
  const caps = e ? new Set(e.capabilities) : capabilities(m);
  return [...BASE_PARAMS, ...[...caps].flatMap((c) => PARAMS[c] ?? [])];
}

/** The parameters of OpenAI's audio endpoints. */
const AUDIO_PARAMS = {
  speech: ['voice', 'response_format', 'speed', 'instructions'],
  transcription: ['language', 'prompt', 'response_format', 'temperature', 'timestamp_granularities'],
};

export function architecture(m: ModelEntry) {
  if (m.kind === 'speech' || m.kind === 'transcription') {
    const [from, to] = m.kind === 'speech' ? ['text', 'audio'] : ['audio', 'text'];
    return {
      modality: `${from}->${to}`,
      input_modalities: [from],
      output_modalities: [to],
      tokenizer: 'Other',
      instruct_type: null,
    };
  }
  const images = capabilities(m).has('images');
  return {
    modality: m.kind !== 'chat' ? `text->${m.kind}` : images ? 'text+image->text' : 'text->text',
    input_modalities: images ? ['text', 'image'] : ['text'],
    output_modalities: [m.kind === 'chat' ? 'text' : m.kind],
    tokenizer: tokenizer(m.id),
    instruct_type: null,
  };
}

function pricing(e: ModelEndpoint | undefined) {
  return {
    prompt: perToken(e?.pricing.prompt),
    completion: perToken(e?.pricing.completion),
    request: String(e?.pricing.request ?? 0),
    image: '0',
    input_cache_read: perToken(e?.pricing.cached_prompt ?? e?.pricing.prompt),
    input_cache_write: perToken(e?.pricing.cache_write ?? e?.pricing.prompt),
  };
}

/** GET /models/{author}/{slug}/endpoints: where the endpoint list of a model is. */
const detailsLink = (id: string) => `/api/v1/models/${id}/endpoints`;

/** One model as `GET /models` lists it: cheapest pricing, and every provider that serves it. */
export function modelView(catalog: Catalog, m: ModelEntry) {
  const top = cheapest(m);
  return {
    id: m.id,
    canonical_slug: m.id,
    name: m.name,
    created: 0,
    description: m.description,
    context_length: top?.contextLength ?? null,
    architecture: architecture(m),
    pricing: pricing(top),
    top_provider: {
      context_length: top?.contextLength ?? null,
      max_completion_tokens: top?.maxCompletionTokens ?? null,
      is_moderated: false,
    },
    per_request_limits: null,
    supported_parameters: supportedParameters(m),
    default_parameters: null,
    supported_voices: null,
    links: { details: detailsLink(m.id) },
    /** False for a model no price is known for (calls cost 0; GATEHOUSE_UNPRICED_MODELS). */
    pricing_known: m.priced !== false,
    /** True when only the built-in development provider serves it (deterministic, offline). */
    development: m.endpoints.every((e) => catalog.providers.get(e.provider)?.development),
    object: 'model' as const,
    owned_by: m.id.includes('/') ? m.id.slice(0, m.id.indexOf('/')) : 'gatehouse',
    providers: m.endpoints.map((e) => {
      const p = catalog.providers.get(e.provider);
      return {
        slug: e.provider,
        upstream_model: e.upstreamModel,
        development: p?.development ?? false,
        zdr: p?.zdr ?? false,
        trains_on_data: p?.trainsOnData ?? false,
        region: p?.region ?? 'global',
        context_length: e.contextLength,
        pricing: {
          prompt: perToken(e.pricing.prompt),
          completion: perToken(e.pricing.completion),
          input_cache_read: perToken(e.pricing.cached_prompt ?? e.pricing.prompt),
          input_cache_write: perToken(e.pricing.cache_write ?? e.pricing.prompt),
          request: String(e.pricing.request ?? 0),
        },
      };
    }),
  };
}

/** One provider endpoint of a model (`PublicEndpoint`); live statistics are not kept (null). */
export function endpointView(m: ModelEntry, e: ModelEndpoint) {
  const tools = e.capabilities.includes('tools');
  return {
    name: `${providerName(e.provider)} | ${e.upstreamModel}`,
    model_id: m.id,
    model_name: m.name,
    context_length: e.contextLength,
    pricing: pricing(e),
    provider_name: providerName(e.provider),
    tag: e.provider,
    quantization: null,
    max_completion_tokens: e.maxCompletionTokens,
    max_prompt_tokens: null,
    supported_parameters: supportedParameters(m, e),
    status: 0,
    uptime_last_30m: null,
    uptime_last_5m: null,
    uptime_last_1d: null,
    latency_last_30m: null,
    throughput_last_30m: null,
    supports_implicit_caching: e.pricing.cached_prompt !== undefined,
    supports_tool_choice: { auto: tools, function: tools, none: tools, required: tools },
    supports_voice_cloning: false,
  };
}

/** GET /models/{author}/{slug}/endpoints. */
export function modelEndpointsView(m: ModelEntry) {
  return {
    id: m.id,
    name: m.name,
    created: 0,
    description: m.description,
    architecture: architecture(m),
    endpoints: m.endpoints.map((e) => endpointView(m, e)),
  };
}

/** GET /providers: the providers this gateway is configured with. */
export function providerView(p: ProviderEntry) {
  return {
    name: providerName(p.config.slug),
    slug: p.config.slug,
    privacy_policy_url: null,
    terms_of_service_url: null,
    status_page_url: null,
    // A vendor preset shows as configured (`groq`), not as the adapter it runs on.
    kind: p.config.preset ?? p.config.kind,
    zdr: p.zdr,
    trains_on_data: p.trainsOnData,
    region: p.region,
    development: p.development,
  };
}
