/**
 * Anthropic Messages API: `POST {baseUrl}/v1/messages` with `x-api-key` and
 * `anthropic-version: 2023-06-01` (overridable through `config.headers`). Translation in `wire.ts`.
 * `baseUrl` may be given with or without the trailing `/v1`. No embeddings.
 *
 * Natively (pass-through lanes) it serves `/messages` and `/messages/count_tokens` callers: their
 * body goes upstream as sent, with the caller's `anthropic-version` and `anthropic-beta`. A
 * translated call (another format's caller, or a `/messages` call that could not take the lane)
 * carries the caller's `anthropic-beta` too (`req.anthropic_beta`).
 */
import type { ChatChunk, ChatRequest, ChatResponse } from '../../formats/chat.js';
import type { ErrorShape } from '../errors.js';
import { type ApiCall, callJson, callStream, joinUrl, sseEvents } from '../http.js';
import { forwardJson, forwardStream } from '../lane.js';
import {
  type CallContext,
  type ForwardedJson,
  type ForwardRequest,
  type Provider,
  type ProviderConfig,
  type ProviderTraits,
  type RelayFrame,
  UpstreamError,
} from '../types.js';
import { anthropicErrors, anthropicStreamError } from './errors.js';
import { messagesStreamTap, tapMessage } from './lane.js';
import {
  ANTHROPIC_VERSION,
  AnthropicStreamMapper,
  fromAnthropicResponse,
  toAnthropicRequest,
} from './wire.js';

type MessagesPath = 'messages' | 'messages/count_tokens';

/** `{base}/v1/{path}` of an Anthropic-format API: its base URL may be given with or without `/v1`. */
export function anthropicUrl(baseUrl: string, path: string): string {
  const base = baseUrl.replace(/\/+$/, '');
  return joinUrl(base, /\/v1$/.test(base) ? path : `v1/${path}`);
}

/** The fields of a Messages body that Anthropic's count_tokens takes. */
const COUNTED = new Set(['model', 'messages', 'system', 'tools', 'tool_choice', 'thinking']);

const TRAITS: ProviderTraits = {
  natives: new Set(['anthropic-messages', 'anthropic-count-tokens']),
  target: 'anthropic',
  keyOptional: false,
  holdsThreads: true,
};

/** A translated request's betas, as the caller's header (joined with the operator's configured ones). */
const betas = (req: ChatRequest): Record<string, string> =>
  req.anthropic_beta ? { 'anthropic-beta': req.anthropic_beta } : {};

export class AnthropicProvider implements Provider {
  readonly traits: ProviderTraits = TRAITS;
  /** How error bodies read (Vertex AI adds Google's own shape). */
  protected readonly errors: ErrorShape = anthropicErrors;

  constructor(readonly config: ProviderConfig) {}

  private url(path: MessagesPath): string {
    return anthropicUrl(this.config.baseUrl, path);
  }

  /**
   * Where a Messages body goes and what is sent there. Vertex AI overrides it: the model moves
   * from the body into the URL, and the API version into the body.
   */
  protected target(
    path: MessagesPath,
    body: Record<string, unknown>,
    _stream: boolean,
  ): { url: string; body: Record<string, unknown> } {
    return { url: this.url(path), body };
  }

  /**
   * The version header, the operator's configured headers, then the caller's own on a lane (its
   * `anthropic-version` wins: the body is written for it; betas of both are sent), and the key.
   */
  protected headers(ctx: CallContext, caller: Record<string, string> = {}): Record<string, string> {
    // Assigned, not spread: the keys set below would give a spread's object a hidden class per call
    // (lib/objects.ts).
    const h: Record<string, string> = Object.assign(
      { 'anthropic-version': ANTHROPIC_VERSION },
      this.config.headers,
    );
    for (const [name, value] of Object.entries(caller)) {
      h[name] = name === 'anthropic-beta' && h[name] ? `${h[name]},${value}` : value;
    }
    if (ctx.apiKey) h['x-api-key'] = ctx.apiKey;
    return h;
  }

  /** The call of a Messages body to `path` (through `target`). */
  private call(
    path: MessagesPath,
    messages: Record<string, unknown>,
    stream: boolean,
    headers: Record<string, string>,
    ctx: CallContext,
  ): ApiCall {
    const { url, body } = this.target(path, messages, stream);
    return {
      url,
      body,
      headers,
      signal: ctx.signal,
      secrets: [ctx.apiKey],
      errors: this.errors,
      idleTimeoutMs: ctx.idleTimeoutMs,
    };
  }

  async chat(req: ChatRequest, ctx: CallContext): Promise<ChatResponse> {
    const body = toAnthropicRequest(req, false, ctx.maxOutputTokens);
    const raw = await callJson(this.call('messages', body, false, this.headers(ctx, betas(req)), ctx));
    if ((raw as { type?: unknown })?.type === 'error') throw anthropicStreamError(raw, [ctx.apiKey]);
    return fromAnthropicResponse(raw, req.model, { excludeReasoning: req.reasoning?.exclude === true });
  }

  async chatStream(req: ChatRequest, ctx: CallContext): Promise<AsyncIterable<ChatChunk>> {
    const body = toAnthropicRequest(req, true, ctx.maxOutputTokens);
    const res = await callStream(this.call('messages', body, true, this.headers(ctx, betas(req)), ctx));
    const secrets = [ctx.apiKey];
    const mapper = new AnthropicStreamMapper(
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
        if (ev.event === 'error' && (parsed as { type?: unknown })?.type !== 'error') {
          throw anthropicStreamError({ type: 'error', error: parsed }, secrets);
        }
        yield* mapper.push(parsed);
        if (mapper.done) return;
      }
      mapper.finish();
    })();
  }

  async countTokens(req: ChatRequest, ctx: CallContext): Promise<number> {
    const whole = toAnthropicRequest(req, false, ctx.maxOutputTokens);
    // Anthropic's count takes the prompt's fields only (it refuses max_tokens and the sampling ones).
    const body = Object.fromEntries(Object.entries(whole).filter(([k]) => COUNTED.has(k)));
    const call = this.call('messages/count_tokens', body, false, this.headers(ctx, betas(req)), ctx);
    const raw = await callJson(call);
    if ((raw as { type?: unknown })?.type === 'error') throw anthropicStreamError(raw, [ctx.apiKey]);
    const n = (raw as { input_tokens?: unknown })?.input_tokens;
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0)
      throw new UpstreamError(502, 'upstream sent no token count', { retryable: false });
    return n;
  }

  forward(req: ForwardRequest, ctx: CallContext): Promise<ForwardedJson> {
    const path = req.wire === 'anthropic-count-tokens' ? 'messages/count_tokens' : 'messages';
    return forwardJson(this.call(path, req.body, false, this.headers(ctx, req.headers), ctx), tapMessage);
  }

  forwardStream(req: ForwardRequest, ctx: CallContext): Promise<AsyncIterable<RelayFrame>> {
    const call = this.call('messages', req.body, true, this.headers(ctx, req.headers), ctx);
    return forwardStream(call, messagesStreamTap(call.secrets), req.bytes);
  }
}
