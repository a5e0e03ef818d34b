import { isPresetKind, PRESET_KINDS, type PresetKind, presetOf } from '../providers/presets.js';
import type { OperatorKey } from '../providers/types.js';
import type { Capability, ModelEndpoint, ProviderEntry, Vendor } from './catalog-types.js';

export { isPresetKind, PRESET_KINDS };

/** What GATEHOUSE_CONFIG (or the environment) says of a preset provider; unset fields take the preset's. */
export interface PresetOverrides {
  slug: string;
  baseUrl?: string;
  apiKey: string | null;
  /** Several operator keys (the first is `apiKey`). */
  keys?: OperatorKey[];
  headers?: Record<string, string>;
  byok?: boolean;
  zdr?: boolean;
  trainsOnData?: boolean;
  vendor?: Vendor;
  region?: string;
  batchConcurrency?: number | null;
  modelData?: string | false;
  discoverModels?: boolean;
}

/**
 * A provider configured from a vendor preset: an `openai-compatible` provider with the vendor's
 * base URL, key requirement, model data, model discovery and refused fields, each overridable.
 * BYOK is on by default for a hosted vendor the operator holds a key for (as for OpenAI's own API:
 * the vendor checks the keys it receives), never for a local server (it answers any key).
 */
export function presetEntry(kind: PresetKind, o: PresetOverrides): ProviderEntry {
  const preset = presetOf(kind);
  const hosted = preset.auth === 'bearer';
  const modelData = o.modelData ?? preset.modelData;
  return {
    config: {
      slug: o.slug,
      kind: 'openai-compatible',
      baseUrl: (o.baseUrl || preset.baseUrl).replace(/\/+$/, ''),
      apiKey: o.apiKey,
      ...(o.keys ? { keys: o.keys } : {}),
      headers: o.headers,
      preset: kind,
      keyRequired: hosted,
      rejects: preset.rejects,
    },
    byok: o.byok ?? (hosted && o.apiKey !== null),
    zdr: o.zdr ?? false,
    trainsOnData: o.trainsOnData ?? false,
    vendor: o.vendor ?? preset.vendor ?? 'other',
    region: o.region ?? 'global',
    development: false,
    batchConcurrency: o.batchConcurrency ?? null,
    ...(modelData !== undefined ? { modelData } : {}),
    // A hosted vendor answers its model list only with a key: without one, no request is sent.
    discoverModels: o.discoverModels ?? (preset.discover && (!hosted || o.apiKey !== null)),
  };
}

/** The variable a preset's key is read from (`GROQ_API_KEY`). */
export const presetKeyEnv = (kind: PresetKind): string => `${presetOf(kind).env}_API_KEY`;

/** Presets configured by the environment alone: `GROQ_API_KEY` or `GROQ_BASE_URL` → provider `groq`. */
export function envPresetProviders(env: Record<string, string | undefined>): ProviderEntry[] {
  return PRESET_KINDS.flatMap((kind) => {
    const { env: prefix } = presetOf(kind);
    const apiKey = env[presetKeyEnv(kind)] || null;
    const baseUrl = env[`${prefix}_BASE_URL`] || undefined;
    if (!apiKey && !baseUrl) return [];
    return [presetEntry(kind, { slug: kind, apiKey, baseUrl })];
  });
}

/** The capabilities a refused field takes away (a vendor without `tools` cannot call tools). */
const CAPABILITY_OF: Partial<Record<string, Capability>> = { tools: 'tools', logprobs: 'logprobs' };

/**
 * An endpoint's capabilities without those its vendor refuses for its model (Perplexity: no tools;
 * Groq: no logprobs), so `/models` lists only parameters that reach the model and
 * `provider.require_parameters` skips the endpoint instead of its fields being dropped.
 */
export function servedCapabilities(provider: ProviderEntry | undefined, e: ModelEndpoint): Capability[] {
  const lost = (provider?.config.rejects ?? [])
    .filter((q) => !q.accepts && (!q.models || q.models.test(e.upstreamModel)))
    .map((q) => CAPABILITY_OF[q.field]);
  return lost.some(Boolean) ? e.capabilities.filter((c) => !lost.includes(c)) : e.capabilities;
}
