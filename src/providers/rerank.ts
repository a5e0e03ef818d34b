/**
 * The two rerank APIs upstreams speak, to and from the canonical shapes (formats/rerank.ts):
 *
 * - Jina's (`POST …/rerank`), also served by vLLM, Infinity, Voyage and OpenRouter:
 *   `{model, query, documents, top_n, return_documents}` → `{results: [{index, relevance_score,
 *   document?}], usage: {total_tokens}}` (Voyage answers `data` for `results`).
 * - Cohere's (`POST /v2/rerank`): `{model, query, documents: string[], top_n}` → `{id, results:
 *   [{index, relevance_score}], meta: {billed_units: {search_units}}}`.
 *
 * Answers are checked (an index out of range or a missing score is an invalid answer, 502), put in
 * score order and cut to `top_n` whatever the upstream did.
 */
import type { RerankRequest, RerankResponse, RerankResult } from '../formats/rerank.js';
import { UpstreamError } from './types.js';

/** Jina's body: documents as the caller gave them (strings, or `{text, image}` for multimodal models). */
export const toJinaRerank = (req: RerankRequest) => ({
  model: req.model,
  query: req.query,
  documents: req.documents,
  ...(req.top_n !== undefined ? { top_n: req.top_n } : {}),
  // The answer's documents are the request's (filled in by the route): no need to send them back.
  return_documents: false,
});

/** Cohere's body: text documents only (it reranks no images). */
export function toCohereRerank(req: RerankRequest) {
  return {
    model: req.model,
    query: req.query,
    documents: req.documents.map((d, i) => {
      const text = typeof d === 'string' ? d : d.text;
      if (text === undefined)
        throw new UpstreamError(400, `documents[${i}]: this provider reranks text documents only`, {
          retryable: false,
        });
      return text;
    }),
    ...(req.top_n !== undefined ? { top_n: req.top_n } : {}),
  };
}

const isObj = (x: unknown): x is Record<string, unknown> =>
  typeof x === 'object' && x !== null && !Array.isArray(x);
const count = (x: unknown): number | undefined =>
  typeof x === 'number' && Number.isFinite(x) ? x : undefined;
const invalid = (why: string) =>
  new UpstreamError(502, `upstream sent an invalid rerank answer: ${why}`, { retryable: true });

/** A document an upstream echoed (a string, `{text}`, or absent). */
function echoed(d: unknown): RerankResult['document'] {
  if (typeof d === 'string') return { text: d };
  if (!isObj(d)) return undefined;
  const out: NonNullable<RerankResult['document']> = {};
  if (typeof d.text === 'string') out.text = d.text;
  if (typeof d.image === 'string') out.image = d.image;
  return out.text === undefined && out.image === undefined ? undefined : out;
}

/** Either API's answer as canonical. */
export function fromRerank(raw: unknown, req: RerankRequest): RerankResponse {
  if (!isObj(raw)) throw invalid('not a JSON object');
  const list = Array.isArray(raw.results) ? raw.results : Array.isArray(raw.data) ? raw.data : null;
  if (!list) throw invalid('no results');
  const results = list.map((r, i): RerankResult => {
    const index = isObj(r) ? r.index : undefined;
    const score = isObj(r) ? count(r.relevance_score) : undefined;
    if (!Number.isInteger(index) || (index as number) < 0 || (index as number) >= req.documents.length)
      throw invalid(`results[${i}].index`);
    if (score === undefined) throw invalid(`results[${i}].relevance_score`);
    const document = echoed((r as Record<string, unknown>).document);
    return { index: index as number, relevance_score: score, ...(document ? { document } : {}) };
  });
  results.sort((a, b) => b.relevance_score - a.relevance_score);
  const usage = isObj(raw.usage) ? raw.usage : {};
  const billed = isObj(raw.meta) && isObj(raw.meta.billed_units) ? raw.meta.billed_units : {};
  const total = count(usage.total_tokens);
  const searches = count(billed.search_units) ?? count(usage.search_units);
  return {
    ...(typeof raw.id === 'string' ? { id: raw.id } : {}),
    model: typeof raw.model === 'string' ? raw.model : req.model,
    results: req.top_n !== undefined ? results.slice(0, req.top_n) : results,
    usage: {
      ...(total !== undefined ? { total_tokens: total } : {}),
      ...(searches !== undefined ? { search_units: searches } : {}),
    },
  };
}
