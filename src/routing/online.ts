import { WEB_PLUGIN } from '../formats/web-search.js';
import type { Body, InferenceCall } from './call.js';
import type { Catalog } from './catalog.js';

/**
 * OpenRouter's `:online` model variant: `openai/gpt-4o:online` is `openai/gpt-4o` with the `web`
 * plugin (web search, formats/plugins.ts). The suffix comes off every model id of the call (`model`
 * and the `models` fallbacks) before anything reads them — the catalog, guardrails, the generation,
 * the answer's `model` all name the base model — and the body asks for web search, for the whole
 * call. A catalog id or alias that itself ends in `:online` is left as it is.
 */
const ONLINE = ':online';

/** The call without `:online` in its model ids, its body with the `web` plugin; `call` when none. */
export function withoutOnline(call: InferenceCall, catalog: Pick<Catalog, 'lookup'>): InferenceCall {
  const strip = (id: string) =>
    id.endsWith(ONLINE) && id.length > ONLINE.length && !catalog.lookup.has(id)
      ? id.slice(0, -ONLINE.length)
      : id;
  const model = strip(call.model);
  const models = call.models?.map(strip);
  const online = model !== call.model || models?.some((m, i) => m !== call.models?.[i]);
  if (!online) return call;
  const body: Body = { ...call.body, plugins: withWebPlugin(call.body.plugins) };
  if (typeof body.model === 'string') body.model = strip(body.model);
  if (models) body.models = models;
  return { ...call, model, ...(models ? { models } : {}), body };
}

/** The caller's plugins with `web` (its own `web` entry, when it sent one, stands). */
function withWebPlugin(plugins: unknown): unknown[] {
  const list = Array.isArray(plugins) ? plugins : [];
  const web = list.some((p) => typeof p === 'object' && p !== null && (p as Body).id === WEB_PLUGIN);
  return web ? list : [...list, { id: WEB_PLUGIN }];
}
