/**
 * Reranking (OpenRouter's `POST /rerank`): a query and documents in, the documents' relevance
 * scores out. The canonical shapes the rerank wire parses to and the providers' adapters answer in.
 */

/** A document: a string, or OpenRouter's structured one (text and/or an image URL or data URI). */
export type RerankDocument = string | { text?: string; image?: string };

export interface RerankRequest {
  /** The upstream's model id once an attempt is planned. */
  model: string;
  query: string;
  documents: RerankDocument[];
  /** How many of the best documents to return (all when absent). */
  top_n?: number;
}

export interface RerankResult {
  /** The document's index in the request's `documents`. */
  index: number;
  relevance_score: number;
  /** The document as the upstream echoed it (absent: the request's is filled in). */
  document?: { text?: string; image?: string };
}

export interface RerankResponse {
  /** The upstream's id of the answer, when it gave one. */
  id?: string;
  model: string;
  /** Best first. */
  results: RerankResult[];
  /** What the upstream reported: tokens (Jina, Voyage, vLLM) and/or search units (Cohere). */
  usage: { total_tokens?: number; search_units?: number };
}

/** A document as OpenRouter's answer echoes it. */
export const documentObject = (d: RerankDocument): { text?: string; image?: string } =>
  typeof d === 'string' ? { text: d } : { ...d };
