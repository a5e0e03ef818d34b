/**
 * Embeddings through InvokeModel, in each model family's own body:
 * - Cohere Embed (`cohere.embed-…`): every input in one call, `{texts, input_type:
 *   "search_document"}` → `{embeddings: [[…]]}` (or `{embeddings: {float: [[…]]}}`); the token
 *   count is the `x-amzn-bedrock-input-token-count` header;
 * - Amazon Titan and the others (`amazon.titan-embed-text-v2:0` …): one call per input,
 *   `{inputText, dimensions?}` → `{embedding, inputTextTokenCount}`.
 */
import type { EmbeddingsRequest, EmbeddingsResponse } from '../../formats/chat.js';
import { obj } from '../errors.js';
import { floatsToBase64 } from '../google/wire.js';
import { UpstreamError } from '../types.js';

export const isCohereEmbed = (modelId: string): boolean => /(^|[./])cohere\.embed/.test(modelId);

/** The inputs as texts; token arrays have no Bedrock equivalent (a 400). */
export function embeddingTexts(req: EmbeddingsRequest): string[] {
  const input = req.input;
  const list = Array.isArray(input) ? input : [input];
  if (!list.every((x): x is string => typeof x === 'string'))
    throw new UpstreamError(400, 'Bedrock embedding models take text inputs, not token arrays', {
      retryable: false,
    });
  return list;
}

export const cohereBody = (texts: string[]) => ({ texts, input_type: 'search_document' });

export function titanBody(text: string, req: EmbeddingsRequest): Record<string, unknown> {
  return { inputText: text, ...(req.dimensions !== undefined ? { dimensions: req.dimensions } : {}) };
}

const vector = (x: unknown): number[] => {
  if (!Array.isArray(x) || !x.every((n) => typeof n === 'number'))
    throw new UpstreamError(502, 'Bedrock sent an embedding that is not a list of numbers', {
      retryable: true,
    });
  return x;
};

/** The vectors of a Cohere answer (floats, either shape). */
export function cohereVectors(raw: unknown, count: number): number[][] {
  const e = obj(raw).embeddings;
  const list = Array.isArray(e) ? e : obj(e).float;
  if (!Array.isArray(list) || list.length !== count)
    throw new UpstreamError(
      502,
      `Bedrock sent ${Array.isArray(list) ? list.length : 'no'} embeddings for ${count} inputs`,
      {
        retryable: true,
      },
    );
  return list.map(vector);
}

/** The vector and token count of a Titan answer. */
export function titanVector(raw: unknown): { vector: number[]; tokens: number } {
  const r = obj(raw);
  return {
    vector: vector(r.embedding),
    tokens: typeof r.inputTextTokenCount === 'number' ? r.inputTextTokenCount : 0,
  };
}

export function embeddingsResponse(
  req: EmbeddingsRequest,
  vectors: number[][],
  tokens: number,
): EmbeddingsResponse {
  return {
    object: 'list',
    data: vectors.map((v, index) => ({
      object: 'embedding',
      index,
      embedding: req.encoding_format === 'base64' ? floatsToBase64(v) : v,
    })),
    model: req.model,
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  };
}
