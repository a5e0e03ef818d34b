/**
 * One adapter per configured upstream, chosen by `kind`. Adding a provider = a folder with its
 * adapter, one case here, and one line in test/providers.contract.test.ts.
 */
import { AnthropicProvider } from './anthropic/adapter.js';
import { AzureProvider } from './azure/adapter.js';
import { BedrockProvider } from './bedrock/adapter.js';
import { DevProvider } from './dev/adapter.js';
import { GoogleProvider } from './google/adapter.js';
import { OpenAiProvider } from './openai/adapter.js';
import { OpenAiCompatibleProvider } from './openai-compatible/adapter.js';
import type { Provider, ProviderConfig } from './types.js';
import { VertexProvider } from './vertex/adapter.js';

export function createProvider(config: ProviderConfig): Provider {
  switch (config.kind) {
    case 'openai':
      return new OpenAiProvider(config);
    case 'openai-compatible':
      return new OpenAiCompatibleProvider(config);
    case 'anthropic':
      return new AnthropicProvider(config);
    case 'google':
      return new GoogleProvider(config);
    case 'azure':
      return new AzureProvider(config);
    case 'vertex':
      return new VertexProvider(config);
    case 'bedrock':
      return new BedrockProvider(config);
    case 'dev':
      return new DevProvider(config);
    default: {
      const kind: never = config.kind;
      throw new Error(`unknown provider kind: ${String(kind)}`);
    }
  }
}
