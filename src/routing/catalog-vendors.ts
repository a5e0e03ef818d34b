import type { ModelInfo, Provider as PriceProvider } from '@pydantic/genai-prices';
import { ALL_CAPS } from './catalog-config.js';
import type { ModelEntry, ModelKind, ProviderEntry } from './catalog-types.js';
import { pricesText, pricingOf, vendorData, vendorDataForUrl } from './model-data.js';

/** The catalog prefix of the vendors whose native API a provider kind speaks. */
const NATIVE: Partial<Record<string, { prefix: string; ids: RegExp }>> = {
  openai: { prefix: 'openai', ids: /^(gpt-|o\d|codex-|chatgpt-|text-embedding-)/ },
  anthropic: { prefix: 'anthropic', ids: /^claude-/ },
  google: { prefix: 'google', ids: /^(gemini-|gemma-)/ },
};

/** The vendor prefix a provider kind's models are listed under (`openai/…`), if it is a native kind. */
export const nativePrefix = (entry: ProviderEntry): string | undefined => NATIVE[entry.config.kind]?.prefix;

/**
 * The model data that lists and prices a provider's models: its vendor's for the native kinds,
 * else `model_data` in GATEHOUSE_CONFIG, else the vendor its base URL or slug belongs to
 * (`https://api.groq.com/openai/v1`, `groq`). None for the development provider or `model_data: false`.
 */
export function providerData(entry: ProviderEntry): PriceProvider | undefined {
  if (entry.development || entry.modelData === false) return undefined;
  if (typeof entry.modelData === 'string') return vendorData(entry.modelData);
  const native = NATIVE[entry.config.kind];
  if (native) return vendorData(native.prefix);
  return vendorDataForUrl(entry.config.baseUrl) ?? vendorData(entry.config.slug);
}

/** Endpoints the data knows that a chat or embeddings route cannot serve (audio, images, realtime…). */
const NOT_SERVED =
  /(^ft:|\.ft-|:|audio|realtime|transcri|tts|image|moderation|whisper|computer-use|live|omni|search-preview|-oss-|^gpt-oss)/i;

/**
 * The OpenRouter-style slug of a data id: `-latest` and a trailing `-0` dropped, version digits
 * dotted (`claude-3-5-haiku-latest` → `claude-3.5-haiku`, `claude-sonnet-4-0` → `claude-sonnet-4`).
 */
export function slugOf(id: string): string {
  return id
    .replace(/-latest$/, '')
    .replace(/(\d)-(\d)(?=-|$)/g, '$1.$2')
    .replace(/\.0$/, '');
}

/** A model's kind told from its id: rerankers (`bge-reranker-…`, `rerank-v3.5`), embedders, else chat. */
export const kindOfId = (id: string): ModelKind =>
  /rerank/i.test(id) ? 'rerank' : /embed/i.test(id) ? 'embeddings' : 'chat';

/** A catalog model for one data model served by one provider. */
export function dataModel(prefix: string, provider: string, m: ModelInfo, now: Date): ModelEntry {
  const slug = slugOf(m.id);
  const id = `${prefix}/${slug}`;
  const kind = kindOfId(m.id);
  const aliases = [...new Set([`${prefix}/${m.id}`, m.id, slug])].filter((a) => a !== id);
  return {
    id,
    name: m.name ?? id,
    aliases,
    kind,
    description: m.description ?? '',
    endpoints: [
      {
        provider,
        upstreamModel: m.id,
        pricing: pricingOf(m, now),
        contextLength: m.context_window ?? 128_000,
        ...(m.context_window == null ? { contextAssumed: true } : {}),
        maxCompletionTokens: null,
        capabilities: kind === 'chat' ? ALL_CAPS : [],
      },
    ],
  };
}

/** Every current text model the data lists for a configured provider (none for unknown vendors). */
export function vendorModels(entry: ProviderEntry, now = new Date()): ModelEntry[] {
  const data = providerData(entry);
  if (!data) return [];
  const native = NATIVE[entry.config.kind];
  const prefix = native?.prefix ?? entry.config.slug;
  return data.models
    .filter(
      (m) =>
        !m.deprecated &&
        !m.id.endsWith('-') &&
        !NOT_SERVED.test(m.id) &&
        (!native || native.ids.test(m.id)) &&
        pricesText(m, now),
    )
    .map((m) => dataModel(prefix, entry.config.slug, m, now));
}
