/**
 * Azure OpenAI: the OpenAI wire (the shared code in `openai/`) at an Azure resource's URLs, with
 * `api-key: <key>` instead of `Authorization`. Chat Completions and Embeddings go to a deployment:
 * `{endpoint}/openai/deployments/{deployment}/{chat/completions|embeddings}?api-version=…`; the
 * Responses API is the v1 route `{endpoint}/openai/v1/responses`, where the deployment name is the
 * body's `model`. A model's deployment is its entry in the provider's `deployments`, else its id.
 */
import type { ChatChunk, ChatResponse } from '../../formats/chat.js';
import { joinUrl } from '../http.js';
import { OpenAiWireProvider } from '../openai/base.js';
import { fromOpenAiChunk, fromOpenAiResponse } from '../openai/wire.js';
import type { CallContext, ProviderConfig, ProviderTraits } from '../types.js';
import { azureErrors } from './errors.js';
import { azureSafeguards } from './filters.js';

/** The API version of the deployment routes when the entry names none (the current GA version). */
export const AZURE_DEFAULT_API_VERSION = '2024-10-21';

const TRAITS: ProviderTraits = {
  natives: new Set(['openai-chat', 'openai-responses', 'openai-embeddings']),
  // Azure takes OpenAI's own request fields (max_completion_tokens, reasoning_effort …).
  target: 'openai',
  keyOptional: false,
};

export class AzureProvider extends OpenAiWireProvider {
  constructor(config: ProviderConfig) {
    super(config, 'openai', TRAITS);
  }

  /** The deployment serving `model`: the configured one, else a deployment named like the model. */
  deploymentOf(model: string): string {
    return this.config.azure?.deployments[model] ?? model;
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

  /** Azure's key header is `api-key`; an Authorization header is never sent with it. */
  protected override headers(ctx: CallContext, caller: Record<string, string> = {}): Record<string, string> {
    const h: Record<string, string> = {};
    for (const [k, v] of Object.entries({ ...this.config.headers, ...caller }))
      if (!/^(authorization|api-key)$/i.test(k)) h[k] = v;
    if (ctx.apiKey) h['api-key'] = ctx.apiKey;
    return h;
  }
}
