/**
 * Google Vertex AI (`kind: vertex`): Gemini and Claude models of one project and region, under
 * one provider entry. Each model goes to its publisher — `claude-*` to Anthropic's, every other id
 * to Google's, unless the entry's `publishers` says otherwise — and is spoken to by that
 * publisher's adapter (`gemini.ts`, `claude.ts`). Every call carries an OAuth token of the entry's
 * service account or of the application default credentials (`auth.ts`), never a key.
 *
 * Claude models serve `/messages` and `/messages/count_tokens` callers natively (pass-through
 * lanes); Gemini models are translated for every caller.
 */

import { SEARCH_BESIDE_FUNCTIONS } from '../../formats/capabilities.js';
import type {
  ChatChunk,
  ChatRequest,
  ChatResponse,
  EmbeddingsRequest,
  EmbeddingsResponse,
} from '../../formats/chat.js';
import {
  type CallContext,
  type ForwardedJson,
  type ForwardRequest,
  type Provider,
  type ProviderConfig,
  type ProviderTraits,
  type RelayFrame,
  UpstreamError,
  type VertexPublisher,
} from '../types.js';
import { VertexTokenSource } from './auth.js';
import { droppedVertexFields, VertexClaude } from './claude.js';
import { VertexGemini } from './gemini.js';

// No key is ever configured (keyOptional): the credential is the entry's own OAuth token. No
// Gemini model searches beside function tools here: one asked for outright beside them is refused.
const GEMINI: ProviderTraits = {
  natives: new Set(),
  target: 'google',
  keyOptional: true,
  refuses: [SEARCH_BESIDE_FUNCTIONS],
};
const CLAUDE: ProviderTraits = {
  natives: new Set(['anthropic-messages', 'anthropic-count-tokens']),
  target: 'anthropic',
  keyOptional: true,
  // Vertex refuses beta flags it does not have: those are left out, and listed (claude.ts).
  laneDropped: droppedVertexFields,
};

/** The publisher of a model id by default: Anthropic's Claude models, else Google's. */
export const defaultPublisher = (model: string): VertexPublisher =>
  /^claude-/i.test(model) ? 'anthropic' : 'google';

export class VertexProvider implements Provider {
  readonly traits: ProviderTraits;
  private readonly gemini: VertexGemini;
  private readonly claude: VertexClaude;
  private readonly tokens: VertexTokenSource;

  constructor(readonly config: ProviderConfig) {
    const v = config.vertex;
    if (!v) throw new Error(`provider ${config.slug}: a vertex entry needs its vertex settings`);
    this.gemini = new VertexGemini(config);
    this.claude = new VertexClaude(config);
    this.tokens = new VertexTokenSource({
      ...(v.serviceAccount ? { serviceAccount: v.serviceAccount } : {}),
      ...(v.tokenUrl ? { tokenUrl: v.tokenUrl } : {}),
    });
    this.traits = {
      ...GEMINI,
      forModel: (model) => (this.publisherOf(model) === 'anthropic' ? CLAUDE : GEMINI),
    };
  }

  publisherOf(model: string): VertexPublisher {
    return this.config.vertex?.publishers[model] ?? defaultPublisher(model);
  }

  /** The call's credential: a current token in place of the (absent) key. */
  private async credential(ctx: CallContext): Promise<CallContext> {
    return { ...ctx, apiKey: await this.tokens.get(ctx.signal) };
  }

  private adapter(model: string): VertexGemini | VertexClaude {
    return this.publisherOf(model) === 'anthropic' ? this.claude : this.gemini;
  }

  async chat(req: ChatRequest, ctx: CallContext): Promise<ChatResponse> {
    return this.adapter(req.model).chat(req, await this.credential(ctx));
  }

  async chatStream(req: ChatRequest, ctx: CallContext): Promise<AsyncIterable<ChatChunk>> {
    return this.adapter(req.model).chatStream(req, await this.credential(ctx));
  }

  async embeddings(req: EmbeddingsRequest, ctx: CallContext): Promise<EmbeddingsResponse> {
    if (this.publisherOf(req.model) === 'anthropic')
      throw new UpstreamError(400, `${req.model} on Vertex AI serves no embeddings`, { retryable: false });
    return this.gemini.embeddings(req, await this.credential(ctx));
  }

  /** A `/messages` (or count_tokens) lane: Claude models only, the only ones declaring natives. */
  async forward(req: ForwardRequest, ctx: CallContext): Promise<ForwardedJson> {
    return this.claude.forward(this.claudeOnly(req), await this.credential(ctx));
  }

  async forwardStream(req: ForwardRequest, ctx: CallContext): Promise<AsyncIterable<RelayFrame>> {
    return this.claude.forwardStream(this.claudeOnly(req), await this.credential(ctx));
  }

  private claudeOnly(req: ForwardRequest): ForwardRequest {
    const model = String(req.body.model ?? '');
    if (!req.wire.startsWith('anthropic-') || this.publisherOf(model) !== 'anthropic')
      throw new UpstreamError(400, `Vertex AI serves ${req.wire} bodies for Claude models only`, {
        retryable: false,
      });
    return req;
  }
}
