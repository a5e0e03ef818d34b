import { describe, expect, it } from 'vitest';
import { AnthropicProvider } from './anthropic/adapter.js';
import { DevProvider } from './dev/adapter.js';
import { GoogleProvider } from './google/adapter.js';
import { OpenAiProvider } from './openai/adapter.js';
import { OpenAiCompatibleProvider } from './openai-compatible/adapter.js';
import { createProvider, ProviderRegistry } from './registry.js';
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

describe('ProviderRegistry', () => {
  const config = (slug: string, baseUrl: string, apiKey: string | null = 'k'): ProviderConfig => ({
    slug,
    kind: 'openai',
    baseUrl,
    apiKey,
  });

  it('installs a rebuilt set at once; an unchanged provider keeps its adapter', () => {
    const reg = new ProviderRegistry();
    reg.prepare([config('a', 'http://a'), config('b', 'http://b')]).install();
    const [a, b] = [reg.get('a'), reg.get('b')];
    expect(a?.config.baseUrl).toBe('http://a');

    const next = reg.prepare([config('a', 'http://a'), config('b', 'http://b2', 'k2')]);
    // Prepared, not installed: calls still get the adapters in use.
    expect(reg.get('b')).toBe(b);
    next.install();
    expect(reg.get('a')).toBe(a);
    expect(reg.get('b')).not.toBe(b);
    expect(reg.get('b')?.config).toMatchObject({ baseUrl: 'http://b2', apiKey: 'k2' });
    // A provider no longer configured: a call still running on it finds its last adapter.
    const lastB = reg.get('b');
    reg.prepare([config('a', 'http://a')]).install();
    expect(reg.get('b')).toBe(lastB);
    expect(reg.get('never')).toBeUndefined();
    // Configured again: a new adapter.
    reg.prepare([config('a', 'http://a'), config('b', 'http://b3')]).install();
    expect(reg.get('b')?.config.baseUrl).toBe('http://b3');
  });

  it('refuses a set with an adapter that cannot be built, naming the provider; the set in use stays', () => {
    const reg = new ProviderRegistry((c) => {
      if (c.baseUrl === 'bad') throw new Error('base URL is bad');
      return createProvider(c);
    });
    reg.prepare([config('a', 'http://a')]).install();
    const a = reg.get('a');
    expect(() => reg.prepare([config('a', 'http://a2'), config('b', 'bad')])).toThrow(
      'provider b: base URL is bad',
    );
    expect(reg.get('a')).toBe(a);
    expect(reg.get('b')).toBeUndefined();
  });
});
