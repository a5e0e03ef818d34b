/**
 * Embeddings on Vertex AI: the `:predict` method of Google's text-embedding and gemini-embedding
 * models — `{instances: [{content}], parameters: {outputDimensionality}}` in, `{predictions:
 * [{embeddings: {values, statistics: {token_count}}}]}` out (AI Studio's batchEmbedContents does
 * not exist on Vertex). The canonical request and answer are the Gemini adapter's.
 */
import type { EmbeddingsRequest, EmbeddingsResponse } from '../../formats/chat.js';
import { obj } from '../errors.js';
import { fromGeminiEmbeddings, toGeminiEmbeddingsRequest } from '../google/wire.js';

/** Canonical embeddings → a `:predict` body, and the texts sent (token ids cannot be: 400). */
export function toPredictRequest(req: EmbeddingsRequest): { body: Record<string, unknown>; texts: string[] } {
  const { texts } = toGeminiEmbeddingsRequest(req);
  return {
    texts,
    body: {
      instances: texts.map((content) => ({ content })),
      ...(req.dimensions !== undefined ? { parameters: { outputDimensionality: req.dimensions } } : {}),
    },
  };
}

/** `:predict`'s predictions → canonical, with the token counts Vertex reports (else an estimate). */
export function fromPredictResponse(
  raw: unknown,
  req: EmbeddingsRequest,
  texts: string[],
): EmbeddingsResponse {
  const predictions = Array.isArray(obj(raw).predictions) ? (obj(raw).predictions as unknown[]) : [];
  const embeddings = predictions.map((p) => obj(obj(p).embeddings));
  const res = fromGeminiEmbeddings({ embeddings }, req, texts);
  const counts = embeddings.map((e) => obj(e.statistics).token_count);
  if (counts.length && counts.every((n) => typeof n === 'number')) {
    const tokens = (counts as number[]).reduce((a, b) => a + b, 0);
    return { ...res, usage: { prompt_tokens: tokens, total_tokens: tokens } };
  }
  return res;
}
