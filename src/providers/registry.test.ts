import { describe, expect, it } from 'vitest';
import { AnthropicProvider } from './anthropic/adapter.js';
import { DevProvider } from './dev/adapter.js';
import { GoogleProvider } from './google/adapter.js';
import { OpenAiProvider } from './openai/adapter.js';
import { OpenAiCompatibleProvider } from './openai-compatible/adapter.js';
import { createProvider } from './registry.js';
import type { ProviderConfig } from './types.js';

describe('createProvider', () => {
  const make = (kind: ProviderConfig['kind']) =>
    createProvider({ slug: `s-${kind}`, kind, baseUrl: 'http://127.0.0.1:1', apiKey: null });
  it('picks the adapter by kind and keeps the config', () => {
    expect(make('openai')).toBeInstanceOf(OpenAiProvider);
    expect(make('openai-compatible')).toBeInstanceOf(OpenAiCompatibleProvider);
    expect(make('anthropic')).toBeInstanceOf(AnthropicProvider);
    expect(make('google')).toBeInstanceOf(GoogleProvider);
    expect(make('dev')).toBeInstanceOf(DevProvider);
    expect(make('google').config.slug).toBe('s-google');
    expect(make('anthropic').embeddings).toBeUndefined();
  });
  it('rejects an unknown kind', () => {
    expect(() => make('bogus' as ProviderConfig['kind'])).toThrow('unknown provider kind');
  });
});
