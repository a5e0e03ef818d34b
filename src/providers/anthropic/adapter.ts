/**
 * Anthropic Messages API: `POST {baseUrl}/v1/messages` with `x-api-key` and
 * `anthropic-version: 2023-06-01` (overridable through `config.headers`). Translation in `wire.ts`.
 * `baseUrl` may be given with or without the trailing `/v1`. No embeddings.
 */
import type { ChatChunk, ChatRequest, ChatResponse } from '../../formats/chat.js';
import { callJson, callStream, joinUrl, sseEvents } from '../http.js';
import { type CallContext, type Provider, type ProviderConfig, UpstreamError } from '../types.js';
import {
  ANTHROPIC_VERSION,
  AnthropicStreamMapper,
  anthropicStreamError,
  fromAnthropicResponse,
  toAnthropicRequest,
} from './wire.js';

export class AnthropicProvider implements Provider {
  constructor(readonly config: ProviderConfig) {}

  private url(): string {
    const base = this.config.baseUrl.replace(/\/+$/, '');
    return joinUrl(base, /\/v1$/.test(base) ? 'messages' : 'v1/messages');
  }

  private headers(ctx: CallContext): Record<string, string> {
    const h: Record<string, string> = { 'anthropic-version': ANTHROPIC_VERSION, ...this.config.headers };
    if (ctx.apiKey) h['x-api-key'] = ctx.apiKey;
    return h;
  }

  async chat(req: ChatRequest, ctx: CallContext): Promise<ChatResponse> {
    const body = toAnthropicRequest(req, false);
    const raw = await callJson(this.url(), body, this.headers(ctx), ctx.signal, [ctx.apiKey]);
    if ((raw as { type?: unknown })?.type === 'error') throw anthropicStreamError(raw, [ctx.apiKey]);
    return fromAnthropicResponse(raw, req.model, { excludeReasoning: req.reasoning?.exclude === true });
  }

  async chatStream(req: ChatRequest, ctx: CallContext): Promise<AsyncIterable<ChatChunk>> {
    const body = toAnthropicRequest(req, true);
    const res = await callStream(
      this.url(),
      body,
      this.headers(ctx),
      ctx.signal,
      [ctx.apiKey],
      ctx.idleTimeoutMs,
    );
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
}
