/**
 * Gemini API (Google AI Studio): `POST {baseUrl}/models/{model}:generateContent`,
 * `:streamGenerateContent?alt=sse` and `:batchEmbedContents`, authenticated with the
 * `x-goog-api-key` header (never a `?key=` query parameter, so the key stays out of URLs and logs).
 * `baseUrl` includes the API version, e.g. https://generativelanguage.googleapis.com/v1beta.
 * Translation in `wire.ts`. Gemini 3 and later search beside function tools here (server-side tool
 * invocations), so an offered search is kept beside functions (traits `keeps`); other models refuse
 * one asked for outright beside functions (traits `refuses`), before any call.
 */

import { SEARCH_BESIDE_FUNCTIONS } from '../../formats/capabilities.js';
import type {
  ChatChunk,
  ChatRequest,
  ChatResponse,
  EmbeddingsRequest,
  EmbeddingsResponse,
} from '../../formats/chat.js';
import { extended } from '../../lib/objects.js';
import { type ApiCall, callJson, callStream, joinUrl, sseEvents } from '../http.js';
import { inlineRemoteMedia } from '../remote-media.js';
import {
  type CallContext,
  type Provider,
  type ProviderConfig,
  type ProviderTraits,
  UpstreamError,
} from '../types.js';
import { geminiStreamError, googleErrors } from './errors.js';
import {
  fromGeminiEmbeddings,
  fromGeminiResponse,
  GeminiStreamMapper,
  geminiGeneration,
  geminiModelId,
  toGeminiEmbeddingsRequest,
  toGeminiRequest,
} from './wire.js';

/** No caller speaks Gemini's wire: every call is translated. */
const BASE: ProviderTraits = { natives: new Set(), target: 'google', keyOptional: false };
/** A model that cannot search beside function tools: such a search asked for outright is refused. */
const TRAITS: ProviderTraits = { ...BASE, refuses: [SEARCH_BESIDE_FUNCTIONS] };
/** A model that searches beside function tools: an offered search is not dropped there either. */
const SEARCHES_BESIDE_FUNCTIONS: ProviderTraits = { ...BASE, keeps: ['web_search'] };

export class GoogleProvider implements Provider {
  readonly traits: ProviderTraits = {
    ...TRAITS,
    // An id that names no generation (`gemini-flash-latest`) may be a Gemini 3: sent as asked,
    // Gemini decides.
    forModel: (model) =>
      this.serverSideTools(model) ? SEARCHES_BESIDE_FUNCTIONS : geminiGeneration(model) > 0 ? TRAITS : BASE,
  };

  constructor(readonly config: ProviderConfig) {}

  /**
   * Whether `model` runs Google Search beside function declarations, its searches exposed as parts
   * of the answer (`includeServerSideToolInvocations`): Gemini 3 and later. Vertex AI overrides.
   */
  protected serverSideTools(model: string): boolean {
    return geminiGeneration(model) >= 3;
  }

  private call(url: string, body: unknown, ctx: CallContext): ApiCall {
    return {
      url,
      body,
      headers: this.headers(ctx),
      signal: ctx.signal,
      secrets: [ctx.apiKey],
      errors: googleErrors,
      idleTimeoutMs: ctx.idleTimeoutMs,
    };
  }

  /** Where `method` of `model` is called (Vertex AI overrides: its project/region path). */
  protected url(model: string, method: string): string {
    return joinUrl(this.config.baseUrl, `models/${encodeURIComponent(geminiModelId(model))}:${method}`);
  }

  /** The operator's headers and the credential (Vertex AI overrides: a Bearer token). */
  protected headers(ctx: CallContext): Record<string, string> {
    return extended(this.config.headers ?? {}, ctx.apiKey ? { 'x-goog-api-key': ctx.apiKey } : {});
  }

  /** The Gemini body; images and documents given by URL fetched and sent inline (Gemini fetches none). */
  private async body(req: ChatRequest, ctx: CallContext): Promise<Record<string, unknown>> {
    return toGeminiRequest(await inlineRemoteMedia(req, ctx.media, ctx.signal), {
      serverSideTools: this.serverSideTools(req.model),
    });
  }

  async chat(req: ChatRequest, ctx: CallContext): Promise<ChatResponse> {
    const url = this.url(req.model, 'generateContent');
    const raw = await callJson(this.call(url, await this.body(req, ctx), ctx));
    if ((raw as { error?: unknown })?.error) throw geminiStreamError(raw, [ctx.apiKey]);
    return fromGeminiResponse(raw, req.model, { excludeReasoning: req.reasoning?.exclude === true });
  }

  async chatStream(req: ChatRequest, ctx: CallContext): Promise<AsyncIterable<ChatChunk>> {
    const url = `${this.url(req.model, 'streamGenerateContent')}?alt=sse`;
    const res = await callStream(this.call(url, await this.body(req, ctx), ctx));
    const secrets = [ctx.apiKey];
    const mapper = new GeminiStreamMapper(
      req.model,
      { excludeReasoning: req.reasoning?.exclude === true },
      secrets,
    );
    return (async function* () {
      for await (const ev of sseEvents(res, ctx.signal, secrets)) {
        if (!ev.data.trim()) continue;
        let parsed: unknown;
        try {
          parsed = JSON.parse(ev.data);
        } catch {
          throw new UpstreamError(502, 'upstream sent an invalid stream event', { retryable: true });
        }
        yield* mapper.push(parsed);
      }
      yield* mapper.finish();
    })();
  }

  async embeddings(req: EmbeddingsRequest, ctx: CallContext): Promise<EmbeddingsResponse> {
    const { requests, texts } = toGeminiEmbeddingsRequest(req);
    const url = this.url(req.model, 'batchEmbedContents');
    const raw = await callJson(this.call(url, { requests }, ctx));
    if ((raw as { error?: unknown })?.error) throw geminiStreamError(raw, [ctx.apiKey]);
    return fromGeminiEmbeddings(raw, req, texts);
  }
}
