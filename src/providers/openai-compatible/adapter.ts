/**
 * Any OpenAI-compatible server (vLLM, Ollama, llama.cpp, Groq, Together, DeepInfra, Mistral…):
 * the OpenAI wire at a configured base URL, key optional (no `Authorization` header without one).
 * `max_tokens` and `reasoning` go through unchanged, `developer` messages become `system`; streams
 * without usage or without `[DONE]` are fine. The wire code is shared with `openai/`.
 */
import { OpenAiWireProvider } from '../openai/base.js';
import type { ProviderConfig } from '../types.js';

export class OpenAiCompatibleProvider extends OpenAiWireProvider {
  constructor(config: ProviderConfig) {
    super(config, 'openai-compatible');
  }
}
