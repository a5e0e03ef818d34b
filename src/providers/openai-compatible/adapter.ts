/**
 * Any OpenAI-compatible server (vLLM, Ollama, llama.cpp, Groq, Together, DeepInfra, Mistral…):
 * the OpenAI wire at a configured base URL, key optional (no `Authorization` header without one).
 * `max_tokens` and `reasoning` go through unchanged, `developer` messages become `system`; streams
 * without usage or without `[DONE]` are fine. The wire code is shared with `openai/`.
 *
 * Reranking: `POST {base_url}/rerank` in Jina's shape, which vLLM, Infinity, Jina, Voyage and
 * OpenRouter serve; Cohere's preset: its `/v2/rerank` beside the compatibility API (providers/rerank.ts).
 */
import type { RerankRequest, RerankResponse } from '../../formats/rerank.js';
import { callJson, joinUrl } from '../http.js';
import { OpenAiWireProvider } from '../openai/base.js';
import { throwIfErrorPayload } from '../openai/errors.js';
import { presetOf } from '../presets.js';
import { fromRerank, toCohereRerank, toJinaRerank } from '../rerank.js';
import type { CallContext, ProviderConfig } from '../types.js';

export class OpenAiCompatibleProvider extends OpenAiWireProvider {
  constructor(config: ProviderConfig) {
    super(config, 'openai-compatible');
  }

  async rerank(req: RerankRequest, ctx: CallContext): Promise<RerankResponse> {
    const { preset } = this.config;
    const cohere = preset !== undefined && presetOf(preset).rerank === 'cohere';
    const base = this.call('/rerank', cohere ? toCohereRerank(req) : toJinaRerank(req), ctx);
    // Cohere's API root is the compatibility API's without `/compatibility/v1`.
    const call = cohere
      ? { ...base, url: joinUrl(this.config.baseUrl.replace(/\/compatibility\/v1$/, ''), '/v2/rerank') }
      : base;
    const raw = await callJson(call);
    throwIfErrorPayload(raw, call.secrets, false, call.errors);
    return fromRerank(raw, req);
  }
}
