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

/** What a reload installs: the adapters built for the new configuration, swapped in at once. */
export interface PreparedProviders {
  install(): void;
}

/**
 * The adapters of the configured providers, one per slug. A catalog reload rebuilds them as a
 * whole (`prepare`, then `install`): every adapter of the new configuration is built first — one
 * that cannot be built refuses the reload, naming the provider, and the ones in use stay — and then
 * they replace the old ones in one step. A call holds the adapter it got: an upstream request
 * already sent finishes on the old configuration; every attempt begun after the install uses the
 * new one. An unchanged provider keeps its adapter (and what it holds, e.g. an Entra ID token).
 */
export class ProviderRegistry {
  private adapters = new Map<string, { key: string; provider: Provider }>();
  /**
   * The last adapter of each provider a reload removed: a call still running on it reads it when
   * it finishes (new calls never name it: the catalog no longer has it).
   */
  private readonly retired = new Map<string, Provider>();

  constructor(private readonly make: (config: ProviderConfig) => Provider = createProvider) {}

  /** The adapter of a configured provider (or of one removed while calls still ran on it). */
  get(slug: string): Provider | undefined {
    return this.adapters.get(slug)?.provider ?? this.retired.get(slug);
  }

  /** Builds the adapters of `configs` without installing them; throws when one cannot be built. */
  prepare(configs: Iterable<ProviderConfig>): PreparedProviders {
    const next = new Map<string, { key: string; provider: Provider }>();
    for (const config of configs) {
      const key = JSON.stringify(config);
      const current = this.adapters.get(config.slug);
      if (current?.key === key) {
        next.set(config.slug, current);
        continue;
      }
      try {
        next.set(config.slug, { key, provider: this.make(config) });
      } catch (err) {
        throw new Error(`provider ${config.slug}: ${(err as Error).message}`);
      }
    }
    return {
      install: () => {
        for (const [slug, { provider }] of this.adapters)
          if (!next.has(slug)) this.retired.set(slug, provider);
        for (const slug of next.keys()) this.retired.delete(slug);
        this.adapters = next;
      },
    };
  }
}
