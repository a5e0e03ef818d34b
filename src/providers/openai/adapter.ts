/**
 * OpenAI (api.openai.com): Chat Completions + Embeddings with `Authorization: Bearer <key>`.
 * `max_tokens` → `max_completion_tokens`, `reasoning` → `reasoning_effort`; see `wire.ts`.
 */
import type { ProviderConfig } from '../types.js';
import { OpenAiWireProvider } from './base.js';

export class OpenAiProvider extends OpenAiWireProvider {
  constructor(config: ProviderConfig) {
    super(config, 'openai');
  }
}
