import type { Catalog } from '../routing/catalog.js';
import { perToken } from '../routing/pricing.js';

const PARAMS: Record<string, string[]> = {
  tools: ['tools', 'tool_choice', 'parallel_tool_calls'],
  json: ['response_format', 'structured_outputs'],
  logprobs: ['logprobs', 'top_logprobs'],
  reasoning: ['reasoning', 'include_reasoning'],
  images: [],
};
const BASE_PARAMS = ['max_tokens', 'temperature', 'top_p', 'stop', 'seed'];

/** GET /models: every catalog model with its cheapest pricing and every provider that serves it. */
export function modelsView(catalog: Catalog) {
  return [...catalog.models.values()].map((m) => {
    const top = [...m.endpoints].sort(
      (a, b) => a.pricing.prompt + a.pricing.completion - (b.pricing.prompt + b.pricing.completion),
    )[0];
    const caps = new Set(m.endpoints.flatMap((e) => e.capabilities));
    const development = m.endpoints.every((e) => catalog.providers.get(e.provider)?.development);
    return {
      id: m.id,
      canonical_slug: m.id,
      name: m.name,
      created: 0,
      description: m.description,
      context_length: top?.contextLength ?? 0,
      architecture: {
        modality:
          m.kind === 'embeddings'
            ? 'text->embeddings'
            : caps.has('images')
              ? 'text+image->text'
              : 'text->text',
        input_modalities: caps.has('images') ? ['text', 'image'] : ['text'],
        output_modalities: [m.kind === 'embeddings' ? 'embeddings' : 'text'],
        tokenizer: 'Other',
        instruct_type: null,
      },
      pricing: {
        prompt: perToken(top?.pricing.prompt),
        completion: perToken(top?.pricing.completion),
        request: String(top?.pricing.request ?? 0),
        image: '0',
        input_cache_read: perToken(top?.pricing.cached_prompt ?? top?.pricing.prompt),
        input_cache_write: perToken(top?.pricing.cache_write ?? top?.pricing.prompt),
      },
      top_provider: {
        context_length: top?.contextLength ?? 0,
        max_completion_tokens: top?.maxCompletionTokens ?? null,
        is_moderated: false,
      },
      per_request_limits: null,
      supported_parameters:
        m.kind === 'embeddings'
          ? ['dimensions', 'encoding_format']
          : [...BASE_PARAMS, ...[...caps].flatMap((c) => PARAMS[c] ?? [])],
      /** True when only the built-in development provider serves it (deterministic, offline). */
      development,
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
  });
}
