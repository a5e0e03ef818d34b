/**
 * The one adapter for the OpenAI Chat Completions wire, parameterised by flavour: `openai` (the
 * official API) and `openai-compatible` (vLLM, Ollama, llama.cpp, Groq, Together, DeepInfra,
 * Mistral…). Both live here so the wire code exists once; `openai/adapter.ts` and
 * `openai-compatible/adapter.ts` only pick the flavour.
 *
 * Streams tolerate servers that omit usage (no usage chunk: the router estimates), that end with
 * `data: [DONE]` or simply close the response, and that report an error inside the stream as
 * `data: {"error": {...}}` (→ the iterator throws UpstreamError). A connection that drops before
 * the response ended → UpstreamError(0); a body that closes before any finish reason (and without
 * `[DONE]`) was cut short → UpstreamError(502).
 */
import type {
  ChatChunk,
  ChatRequest,
  ChatResponse,
  EmbeddingsRequest,
  EmbeddingsResponse,
} from '../../formats/chat.js';
import { callJson, callStream, joinUrl, redact, sseEvents, upstreamMessage } from '../http.js';
import { type CallContext, type Provider, type ProviderConfig, UpstreamError } from '../types.js';
import {
  fromOpenAiChunk,
  fromOpenAiEmbeddings,
  fromOpenAiResponse,
  type OpenAiFlavor,
  toOpenAiEmbeddingsRequest,
  toOpenAiRequest,
} from './wire.js';

export class OpenAiWireProvider implements Provider {
  constructor(
    readonly config: ProviderConfig,
    readonly flavor: OpenAiFlavor,
  ) {}

  protected headers(ctx: CallContext): Record<string, string> {
    const h: Record<string, string> = { ...this.config.headers };
    if (ctx.apiKey) h.authorization = `Bearer ${ctx.apiKey}`;
    return h;
  }

  private url(path: string): string {
    return joinUrl(this.config.baseUrl, path);
  }

  async chat(req: ChatRequest, ctx: CallContext): Promise<ChatResponse> {
    const body = toOpenAiRequest(req, this.flavor, false);
    const raw = await callJson(this.url('/chat/completions'), body, this.headers(ctx), ctx.signal, [
      ctx.apiKey,
    ]);
    throwIfErrorPayload(raw, ctx.apiKey);
    return fromOpenAiResponse(raw, req.model);
  }

  async chatStream(req: ChatRequest, ctx: CallContext): Promise<AsyncIterable<ChatChunk>> {
    const secrets = [ctx.apiKey];
    const body = toOpenAiRequest(req, this.flavor, true);
    const res = await callStream(
      this.url('/chat/completions'),
      body,
      this.headers(ctx),
      ctx.signal,
      secrets,
      ctx.idleTimeoutMs,
    );
    const model = req.model;
    return (async function* () {
      let finished = false;
      for await (const ev of sseEvents(res, ctx.signal, secrets)) {
        const data = ev.data.trim();
        if (data === '[DONE]') return;
        if (!data) continue;
        let parsed: unknown;
        try {
          parsed = JSON.parse(data);
        } catch {
          throw new UpstreamError(502, 'upstream sent an invalid stream event', { retryable: true });
        }
        throwIfErrorPayload(parsed, ctx.apiKey, ev.event === 'error');
        const chunk = fromOpenAiChunk(parsed, model);
        if (chunk.choices.some((c) => c.finish_reason)) finished = true;
        yield chunk;
      }
      // Servers may close without [DONE], but not before a finish reason: that body was cut short.
      if (!finished)
        throw new UpstreamError(502, 'upstream stream ended before its finish reason', { retryable: true });
    })();
  }

  async embeddings(req: EmbeddingsRequest, ctx: CallContext): Promise<EmbeddingsResponse> {
    const body = toOpenAiEmbeddingsRequest(req);
    const raw = await callJson(this.url('/embeddings'), body, this.headers(ctx), ctx.signal, [ctx.apiKey]);
    throwIfErrorPayload(raw, ctx.apiKey);
    return fromOpenAiEmbeddings(raw, req.model);
  }
}

/**
 * An error reported with a 200 status (in a stream, or by servers that always answer 200):
 * `{error: {message, code?}}` → UpstreamError (status from a numeric `code`, else 502).
 */
function throwIfErrorPayload(raw: unknown, apiKey: string | null, isErrorEvent = false): void {
  if (!raw || typeof raw !== 'object') return;
  const err = (raw as { error?: unknown }).error;
  if (!err && !isErrorEvent) return;
  const e = (err && typeof err === 'object' ? err : {}) as { code?: unknown; status?: unknown };
  const code =
    typeof e.code === 'number' ? e.code : typeof e.status === 'number' ? e.status : Number(e.code) || 502;
  const status = code >= 400 && code <= 599 ? code : 502;
  const msg = redact(upstreamMessage(raw, '') ?? 'upstream reported an error', [apiKey]);
  throw new UpstreamError(status, msg, { body: raw });
}
