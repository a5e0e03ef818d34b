/**
 * Azure OpenAI: the OpenAI wire (the shared code in `openai/`) at an Azure resource's URLs, with
 * `api-key: <key>` instead of `Authorization`. Chat Completions, Embeddings and audio go to a
 * deployment: `{endpoint}/openai/deployments/{deployment}/{chat/completions|completions|embeddings|audio/…}
 * ?api-version=…`; the Responses API is the v1 route `{endpoint}/openai/v1/responses`, where the
 * deployment name is the body's `model`. A model's deployment is its entry in the provider's `deployments`, else its id.
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
import { joinUrl } from '../http.js';
import { OpenAiWireProvider } from '../openai/base.js';
import { fromOpenAiChunk, fromOpenAiResponse } from '../openai/wire.js';
import {
  type CallContext,
  type ForwardedJson,
  type ForwardRequest,
  type ProviderConfig,
  type ProviderTraits,
  type RelayFrame,
  UpstreamError,
} from '../types.js';
import { EntraTokenSource } from './entra.js';
import { azureErrors } from './errors.js';
import { azureSafeguards } from './filters.js';

/** The API version of the deployment routes when the entry names none (the current GA version). */
export const AZURE_DEFAULT_API_VERSION = '2024-10-21';

const TRAITS: ProviderTraits = {
  natives: new Set(['openai-chat', 'openai-completions', 'openai-responses', 'openai-embeddings']),
  // Azure takes OpenAI's own request fields (max_completion_tokens, reasoning_effort …).
  target: 'openai',
  keyOptional: false,
};

export class AzureProvider extends OpenAiWireProvider {
  /** Set when the resource is called with Entra ID tokens instead of a key. */
  private readonly entra: EntraTokenSource | null;

  constructor(config: ProviderConfig) {
    const entra = config.azure?.entra;
    // With Entra ID no key is configured: the router must still route here.
    super(config, 'openai', entra ? { ...TRAITS, keyOptional: true } : TRAITS);
    this.entra = entra ? new EntraTokenSource(entra) : null;
  }

  /** The call's credential: the key, or (Entra ID) a current token in its place. */
  private async credential(ctx: CallContext): Promise<CallContext> {
    return this.entra ? { ...ctx, apiKey: await this.entra.get(ctx.signal) } : ctx;
  }

  override async chat(req: ChatRequest, ctx: CallContext): Promise<ChatResponse> {
    return super.chat(req, await this.credential(ctx));
  }

  override async chatStream(req: ChatRequest, ctx: CallContext): Promise<AsyncIterable<ChatChunk>> {
    return super.chatStream(req, await this.credential(ctx));
  }

  override async embeddings(req: EmbeddingsRequest, ctx: CallContext): Promise<EmbeddingsResponse> {
    return super.embeddings(req, await this.credential(ctx));
  }

  override async speech(req: SpeechRequest, ctx: CallContext): Promise<SpeechAudio> {
    return super.speech(req, await this.credential(ctx));
  }

  override async transcription(req: TranscriptionRequest, ctx: CallContext): Promise<TranscriptionAnswer> {
    return super.transcription(req, await this.credential(ctx));
  }

  override async forward(req: ForwardRequest, ctx: CallContext): Promise<ForwardedJson> {
    return super.forward(req, await this.credential(ctx));
  }

  override async forwardStream(req: ForwardRequest, ctx: CallContext): Promise<AsyncIterable<RelayFrame>> {
    return super.forwardStream(req, await this.credential(ctx));
  }

  /**
   * The deployment serving `model`: the configured one, else a deployment named like the model. A
   * caller may name any `<slug>/<id>`: a name Azure could not have (Azure allows letters, digits,
   * `-`, `_`, `.`) is refused here, so `..` can never climb out of the deployment's URL.
   */
  deploymentOf(model: string): string {
    const deployment = this.config.azure?.deployments[model] ?? model;
    if (!/^[\w.-]{1,128}$/.test(deployment) || /^\.+$/.test(deployment))
      throw new UpstreamError(
        400,
        `not a valid Azure deployment name: ${JSON.stringify(deployment.slice(0, 80))}`,
        {
          retryable: false,
        },
      );
    return deployment;
  }

  protected override target(path: string, body: unknown) {
    const b = body && typeof body === 'object' ? (body as Record<string, unknown>) : {};
    const model = typeof b.model === 'string' ? b.model : null;
    const deployment = model === null ? null : this.deploymentOf(model);
    // Azure routes by the URL's deployment and ignores `model`; it is sent as the deployment name
    // (the v1 Responses route reads it there).
    const sent = deployment === null ? body : { ...b, model: deployment };
    if (path === '/responses')
      return {
        url: joinUrl(this.config.baseUrl, '/openai/v1/responses'),
        body: sent,
        errors: azureErrors(deployment),
      };
    const version = encodeURIComponent(this.config.azure?.apiVersion ?? AZURE_DEFAULT_API_VERSION);
    const url = joinUrl(
      this.config.baseUrl,
      `/openai/deployments/${encodeURIComponent(deployment ?? '')}${path}?api-version=${version}`,
    );
    return { url, body: sent, errors: azureErrors(deployment) };
  }

  // Azure's content-filter results become the answer's safeguard results (translated routes; a
  // lane relays them as Azure sent them).
  protected override fromResponse(raw: unknown, model: string): ChatResponse {
    const safeguards = azureSafeguards(raw);
    const res = fromOpenAiResponse(raw, model);
    return safeguards ? { ...res, provider_safeguards: safeguards } : res;
  }

  protected override fromChunk(raw: unknown, model: string): ChatChunk {
    const safeguards = azureSafeguards(raw);
    const chunk = fromOpenAiChunk(raw, model);
    return safeguards ? { ...chunk, provider_safeguards: safeguards } : chunk;
  }

  /** A key goes in Azure's `api-key` header (no Authorization header then); an Entra token as a Bearer token. */
  protected override headers(ctx: CallContext, caller: Record<string, string> = {}): Record<string, string> {
    const h: Record<string, string> = {};
    for (const [k, v] of Object.entries({ ...this.config.headers, ...caller }))
      if (!/^(authorization|api-key)$/i.test(k)) h[k] = v;
    if (ctx.apiKey && this.entra) h.authorization = `Bearer ${ctx.apiKey}`;
    else if (ctx.apiKey) h['api-key'] = ctx.apiKey;
    return h;
  }
}
