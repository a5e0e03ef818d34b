/**
 * Output and input limits a provider's Models API gave (Anthropic's `GET /v1/models`), applied to
 * the catalog's endpoints of that provider — the bundled model data has no output limits.
 */
import type { ModelEndpoint, ModelEntry, ModelLimits, ProviderEntry } from './catalog-types.js';

/**
 * An id as its aliases share it: without a trailing snapshot date (`claude-sonnet-4-5-20250929`),
 * `-latest` (`claude-3-5-haiku-latest`) or `-0` (`claude-opus-4-0`, Anthropic's alias of
 * `claude-opus-4-20250514`).
 */
export const aliasRoot = (id: string): string => id.replace(/-(\d{8}|latest)$/, '').replace(/-0$/, '');

/** The limits listed for `upstream`: its own id first, else an alias of it (the same id, dated or not). */
export function limitsFor(listed: ModelLimits[] | undefined, upstream: string): ModelLimits | undefined {
  if (!listed) return undefined;
  const base = aliasRoot(upstream);
  return listed.find((l) => l.id === upstream) ?? listed.find((l) => aliasRoot(l.id) === base);
}

/**
 * Fills what an endpoint does not know from its provider's listing: the output limit unless one is
 * stated (GATEHOUSE_CONFIG's `max_completion_tokens` wins), the context length when it was assumed.
 * Returns the output limit listed for it (null: none).
 */
export function applyLimits(e: ModelEndpoint, listed: ModelLimits[] | undefined): number | null {
  const l = limitsFor(listed, e.upstreamModel);
  if (!l) return null;
  if (e.maxCompletionTokens === null && l.maxOutputTokens !== null) e.maxCompletionTokens = l.maxOutputTokens;
  if (e.contextAssumed && l.maxInputTokens !== null) {
    e.contextLength = l.maxInputTokens;
    delete e.contextAssumed;
  }
  return l.maxOutputTokens;
}

/** Kinds serving Claude under Anthropic's ids' model: the same model, the same output limit. */
const CLAUDE_HOSTS = new Set(['bedrock', 'vertex']);

/**
 * Applies every Anthropic provider's listing to its endpoints; a model's Bedrock and Vertex AI
 * endpoints with no output limit of their own get the one learned for the same model.
 */
export function applyCatalogLimits(
  models: Map<string, ModelEntry>,
  providers: Map<string, ProviderEntry>,
  limits: Map<string, ModelLimits[]>,
): void {
  if (limits.size === 0) return;
  for (const m of models.values()) {
    let learned: number | null = null;
    for (const e of m.endpoints) {
      const listed = limits.get(e.provider);
      if (!listed || providers.get(e.provider)?.config.kind !== 'anthropic') continue;
      // Every Anthropic endpoint takes its own provider's listing; the first limit found is the model's.
      const own = applyLimits(e, listed);
      learned ??= own;
    }
    if (learned === null) continue;
    for (const e of m.endpoints) {
      const kind = providers.get(e.provider)?.config.kind;
      if (kind && CLAUDE_HOSTS.has(kind) && e.maxCompletionTokens === null) e.maxCompletionTokens = learned;
    }
  }
}
