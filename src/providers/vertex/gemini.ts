/**
 * Gemini on Vertex AI: the Gemini adapter (`google/`) — same generateContent bodies, translation
 * and Google error shape — at Vertex's project/region URLs with a Bearer token, and embeddings
 * through `:predict`. Vertex AI has no server-side tool invocations: Google Search beside function
 * tools stays refused there for every model (an offered one is left out and listed).
 */
import type { EmbeddingsRequest, EmbeddingsResponse } from '../../formats/chat.js';
import { GoogleProvider } from '../google/adapter.js';
import { geminiStreamError, googleErrors } from '../google/errors.js';
import { callJson } from '../http.js';
import type { CallContext } from '../types.js';
import { fromPredictResponse, toPredictRequest } from './embeddings.js';
import { bearerHeaders } from './headers.js';
import { vertexModelUrl } from './urls.js';

export class VertexGemini extends GoogleProvider {
  protected override serverSideTools(): boolean {
    return false;
  }

  protected override url(model: string, method: string): string {
    return vertexModelUrl(this.config, 'google', model, method);
  }

  /** The operator's headers and the token; no header of theirs replaces Authorization. */
  protected override headers(ctx: CallContext): Record<string, string> {
    return bearerHeaders(this.config.headers, ctx);
  }

  override async embeddings(req: EmbeddingsRequest, ctx: CallContext): Promise<EmbeddingsResponse> {
    const { body, texts } = toPredictRequest(req);
    const raw = await callJson({
      url: this.url(req.model, 'predict'),
      body,
      headers: this.headers(ctx),
      signal: ctx.signal,
      secrets: [ctx.apiKey],
      errors: googleErrors,
    });
    if ((raw as { error?: unknown })?.error) throw geminiStreamError(raw, [ctx.apiKey]);
    return fromPredictResponse(raw, req, texts);
  }
}
