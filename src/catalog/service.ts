import { type EffectivePolicy, modelAllowed, providerAllowed, regionAllowed } from '../guardrails/policy.js';
import type { Catalog, ModelEntry } from '../routing/catalog.js';
import { supportedParameters } from './views.js';

/** The filters of `GET /models` (and its count) that Gatehouse honours; others are accepted and ignored. */
export interface ModelQuery {
  /** Comma-separated output modalities (`text`, `embeddings`, `all`); unset: every model. */
  output_modalities?: string;
  input_modalities?: string;
  /** Every listed parameter must be supported. */
  supported_parameters?: string;
  /** Words matched against id and name. */
  q?: string;
  /** Smallest context length. */
  context?: number;
  /** Comma-separated provider slugs, at least one of which serves the model. */
  providers?: string;
  /** Comma-separated authors (the id's prefix). */
  model_authors?: string;
  /** `true`: only models with a zero-data-retention endpoint. */
  zdr?: string;
  sort?: string;
}

const list = (csv: string | undefined) =>
  csv
    ?.split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean) ?? [];

/** What a model puts out: text (chat, transcription), audio (speech), embeddings or rerank. */
const outputOf = (m: ModelEntry) =>
  m.kind === 'chat' || m.kind === 'transcription' ? 'text' : m.kind === 'speech' ? 'audio' : m.kind;
const inputsOf = (m: ModelEntry) =>
  m.kind === 'transcription'
    ? ['audio']
    : m.endpoints.some((e) => e.capabilities.includes('images'))
      ? ['text', 'image']
      : ['text'];
const contextOf = (m: ModelEntry) => Math.max(0, ...m.endpoints.map((e) => e.contextLength));
const priceOf = (m: ModelEntry) =>
  Math.min(...m.endpoints.map((e) => e.pricing.prompt + e.pricing.completion));

/** The catalog's models a query selects, in catalog order unless `sort` names an order. */
export function queryModels(catalog: Catalog, q: ModelQuery, defaultOutputs: string[] = []): ModelEntry[] {
  const outputs = q.output_modalities !== undefined ? list(q.output_modalities) : defaultOutputs;
  const inputs = list(q.input_modalities);
  const params = list(q.supported_parameters);
  const words = list(q.q?.replace(/\s+/g, ','));
  const providers = list(q.providers);
  const authors = list(q.model_authors);
  const zdrOnly = q.zdr === 'true';
  const out = [...catalog.models.values()].filter((m) => {
    if (outputs.length && !outputs.includes('all') && !outputs.includes(outputOf(m))) return false;
    if (inputs.length && !inputs.every((i) => inputsOf(m).includes(i))) return false;
    if (params.length && !params.every((p) => supportedParameters(m).includes(p))) return false;
    if (q.context !== undefined && contextOf(m) < q.context) return false;
    if (providers.length && !m.endpoints.some((e) => providers.includes(e.provider))) return false;
    if (authors.length && !authors.includes(m.id.split('/')[0]?.toLowerCase() ?? '')) return false;
    if (zdrOnly && !m.endpoints.some((e) => catalog.providers.get(e.provider)?.zdr)) return false;
    const text = `${m.id} ${m.name}`.toLowerCase();
    return words.every((w) => text.includes(w));
  });
  if (q.sort === 'pricing-low-to-high') out.sort((a, b) => priceOf(a) - priceOf(b));
  if (q.sort === 'pricing-high-to-low') out.sort((a, b) => priceOf(b) - priceOf(a));
  if (q.sort === 'context-high-to-low') out.sort((a, b) => contextOf(b) - contextOf(a));
  return out;
}

/**
 * The models a key may use under its effective policy: the model lists, and at least one endpoint
 * its provider lists, ZDR, training and region rules allow. Endpoints it may not use are left out.
 */
export function modelsForPolicy(
  catalog: Catalog,
  models: ModelEntry[],
  policy: EffectivePolicy,
): ModelEntry[] {
  return models.flatMap((m) => {
    if (!modelAllowed(policy, m.id, m.aliases).ok) return [];
    const free = m.endpoints.every((e) => e.pricing.prompt === 0 && e.pricing.completion === 0);
    const endpoints = m.endpoints.filter((e) => {
      const p = catalog.providers.get(e.provider);
      if (!p) return false;
      const attrs = { zdr: p.zdr, vendor: p.vendor, trainsOnData: p.trainsOnData, isFree: free };
      return (
        providerAllowed(policy, p.config.slug, attrs).ok &&
        regionAllowed(policy, p.region === 'local' ? 'global' : p.region).ok
      );
    });
    return endpoints.length > 0 ? [{ ...m, endpoints }] : [];
  });
}

/** A page of a list, with the link to the next one when the page is full. */
export function page<T>(items: T[], path: string, offset = 0, limit = 500) {
  const data = items.slice(offset, offset + limit);
  const more = offset + limit < items.length;
  return {
    data,
    links: { next: more ? `${path}?offset=${offset + limit}&limit=${limit}` : null },
    total_count: items.length,
  };
}
