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
  SpeechAudio,
  SpeechRequest,
  TranscriptionAnswer,
  TranscriptionRequest,
} from '../../formats/audio.js';
import type {
  ChatChunk,
  ChatRequest,
  ChatResponse,
  EmbeddingsRequest,
  EmbeddingsResponse,
} from '../../formats/chat.js';
import { extended } from '../../lib/objects.js';
import type { ErrorShape } from '../errors.js';
import { type ApiCall, callJson, callStream, getJson, joinUrl, sseEvents } from '../http.js';
import { forwardJson, forwardStream } from '../lane.js';
import {
  type CallContext,
  type ForwardedJson,
  type ForwardRequest,
  type NativeWire,
  type Provider,
  type ProviderConfig,
  type ProviderTraits,
  type RelayFrame,
  UpstreamError,
} from '../types.js';
import { postSpeech, postTranscription } from './audio.js';
import { openAiErrors, throwIfErrorPayload } from './errors.js';
import { chatStreamTap, responsesStreamTap, tapChat, tapResponse } from './lane.js';
import {
  fromOpenAiChunk,
  fromOpenAiEmbeddings,
  fromOpenAiResponse,
  type OpenAiFlavor,
  toOpenAiEmbeddingsRequest,
  toOpenAiRequest,
  withCitedSearch,
} from './wire.js';

/** The path of each native wire under the base URL. */
const PATHS: Partial<Record<NativeWire, string>> = {
  'openai-chat': '/chat/completions',
  'openai-completions': '/completions',
  'openai-responses': '/responses',
  'openai-responses-compact': '/responses/compact',
  'openai-responses-input-tokens': '/responses/input_tokens',
  'openai-embeddings': '/embeddings',
};

/**
 * What each flavour serves natively: OpenAI itself the Responses API too; OpenAI-compatible
 * servers Chat Completions, the legacy Completions and Embeddings (the wires they all have). Keys are optional only on
 * OpenAI-compatible servers (a local vLLM or Ollama takes none).
 */
const TRAITS: Record<OpenAiFlavor, ProviderTraits> = {
  openai: {
    natives: new Set([
      'openai-chat',
      'openai-completions',
      'openai-responses',
      'openai-responses-compact',
      'openai-responses-input-tokens',
      'openai-embeddings',
    ]),
    target: 'openai',
    keyOptional: false,
  },
  'openai-compatible': {
    natives: new Set(['openai-chat', 'openai-completions', 'openai-embeddings']),
    target: 'openai-compatible',
    keyOptional: true,
  },
};

/**
 * The caller's provider headers meant for this wire: another vendor's (`anthropic-beta`, which a
 * Chat Completions or Responses caller may send for an Anthropic model) are not sent (the route
 * lists them as dropped).
 */
function ownHeaders(caller: Record<string, string>): Record<string, string> {
  if (!('anthropic-beta' in caller)) return caller;
  const { 'anthropic-beta': _, ...own } = caller;
  return own;
}

export class OpenAiWireProvider implements Provider {
  readonly traits: ProviderTraits;

  constructor(
    readonly config: ProviderConfig,
    readonly flavor: OpenAiFlavor,
    traits: ProviderTraits = TRAITS[flavor],
  ) {
    // A hosted vendor's preset needs a key: without one the router skips it instead of calling.
    this.traits = config.keyRequired ? { ...traits, keyOptional: false } : traits;
  }

  /**
   * Where a call on `path` goes and the body sent there. OpenAI and compatible servers: the base
   * URL and the path, the body as it is; Azure puts the deployment in the URL (see azure/adapter.ts).
   */
  protected target(path: string, body: unknown): { url: string; body: unknown; errors: ErrorShape } {
    return { url: joinUrl(this.config.baseUrl, path), body, errors: openAiErrors };
  }

  /** An answer as canonical (Azure adds its content-filter results). */
  protected fromResponse(raw: unknown, model: string): ChatResponse {
    return fromOpenAiResponse(raw, model);
  }

  /** A stream chunk as canonical (Azure adds its content-filter results). */
  protected fromChunk(raw: unknown, model: string): ChatChunk {
    return fromOpenAiChunk(raw, model);
  }

  /** The operator's configured headers, then the caller's own on a lane (openai-beta), and the key. */
  protected headers(ctx: CallContext, caller: Record<string, string> = {}): Record<string, string> {
    const h: Record<string, string> = extended(this.config.headers ?? {}, caller);
    if (ctx.apiKey) h.authorization = `Bearer ${ctx.apiKey}`;
    return h;
  }

  protected call(path: string, body: unknown, ctx: CallContext, caller?: Record<string, string>): ApiCall {
    // Onto target's own new object: a spread of it would get a hidden class per call (lib/objects.ts).
    return Object.assign(this.target(path, body), {
      headers: this.headers(ctx, caller && ownHeaders(caller)),
      signal: ctx.signal,
      secrets: [ctx.apiKey],
      idleTimeoutMs: ctx.idleTimeoutMs,
    });
  }

  async chat(req: ChatRequest, ctx: CallContext): Promise<ChatResponse> {
    const body = toOpenAiRequest(req, this.flavor, false);
    const call = this.call('/chat/completions', body, ctx);
    const raw = await callJson(call);
    throwIfErrorPayload(raw, call.secrets, false, call.errors);
    return this.fromResponse(raw, req.model);
  }

  async chatStream(req: ChatRequest, ctx: CallContext): Promise<AsyncIterable<ChatChunk>> {
    const secrets = [ctx.apiKey];
    const body = toOpenAiRequest(req, this.flavor, true);
    const call = this.call('/chat/completions', body, ctx);
    const res = await callStream(call);
    const { errors } = call;
    const model = req.model;
    const fromChunk = (raw: unknown) => this.fromChunk(raw, model);
    return (async function* () {
      let finished = false;
      let cited = false;
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
        // An error event mid-stream reads in the provider's shape (Azure's content filter).
        throwIfErrorPayload(parsed, secrets, ev.event === 'error', errors);
        const chunk = fromChunk(parsed);
        if (chunk.choices.some((c) => c.finish_reason)) finished = true;
        if (chunk.choices.some((c) => c.delta.annotations?.length)) cited = true;
        // The search a cited answer ran, counted on the usage chunk (see withCitedSearch).
        yield cited && chunk.usage ? { ...chunk, usage: withCitedSearch(chunk.usage) } : chunk;
      }
      // Servers may close without [DONE], but not before a finish reason: that body was cut short.
      if (!finished)
        throw new UpstreamError(502, 'upstream stream ended before its finish reason', { retryable: true });
    })();
  }

  async embeddings(req: EmbeddingsRequest, ctx: CallContext): Promise<EmbeddingsResponse> {
    const body = toOpenAiEmbeddingsRequest(req);
    const call = this.call('/embeddings', body, ctx);
    const raw = await callJson(call);
    throwIfErrorPayload(raw, call.secrets, false, call.errors);
    return fromOpenAiEmbeddings(raw, req.model);
  }

  /** Text to speech: the audio relayed as it arrives (see audio.ts). */
  speech(req: SpeechRequest, ctx: CallContext): Promise<SpeechAudio> {
    return postSpeech(this.call('/audio/speech', req, ctx));
  }

  /** A transcription of the request's audio, sent as a multipart form (see audio.ts). */
  transcription(req: TranscriptionRequest, ctx: CallContext): Promise<TranscriptionAnswer> {
    // The target sees the model alone (Azure's deployment URL); the form carries the rest, with the
    // model the target sends (Azure's deployment name).
    const call = this.call('/audio/transcriptions', { model: req.model }, ctx);
    const model = (call.body as { model?: unknown } | undefined)?.model;
    return postTranscription(call, typeof model === 'string' ? { ...req, model } : req);
  }

  forward(req: ForwardRequest, ctx: CallContext): Promise<ForwardedJson> {
    const call = this.call(this.path(req.wire), req.body, ctx, req.headers);
    // A compaction answer reports its usage as a response does; a token count reports none.
    const tap =
      req.wire === 'openai-responses' || req.wire === 'openai-responses-compact' ? tapResponse : tapChat;
    return forwardJson(call, (json, secrets) => tap(json, secrets, call.errors));
  }

  forwardStream(req: ForwardRequest, ctx: CallContext): Promise<AsyncIterable<RelayFrame>> {
    const call = this.call(this.path(req.wire), req.body, ctx, req.headers);
    const { secrets, errors } = call;
    return forwardStream(
      call,
      req.wire === 'openai-responses' ? responsesStreamTap(secrets, errors) : chatStreamTap(secrets, errors),
      req.bytes,
    );
  }

  /** A stored response's input items, where this provider's Responses route keeps them. */
  inputItems(responseId: string, query: string, ctx: CallContext): Promise<unknown> {
    if (!this.traits.natives.has('openai-responses'))
      throw new UpstreamError(404, `${this.config.slug} stores no responses`, { retryable: false });
    const { url, errors } = this.target('/responses', {});
    return getJson({
      url: `${url.replace(/\?.*$/, '')}/${encodeURIComponent(responseId)}/input_items${query}`,
      headers: this.headers(ctx),
      signal: ctx.signal,
      secrets: [ctx.apiKey],
      errors,
    });
  }

  private path(wire: NativeWire): string {
    const path = this.traits.natives.has(wire) ? PATHS[wire] : undefined;
    if (!path)
      throw new UpstreamError(400, `${this.config.slug} does not serve ${wire}`, { retryable: false });
    return path;
  }
}
