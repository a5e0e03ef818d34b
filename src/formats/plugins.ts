/**
 * OpenRouter's `plugins` (chat, Messages and Responses bodies): `[{id, enabled?, …settings}]`.
 *
 * The `web` plugin is web search: the canonical `web_search` on a translated call (withPlugins),
 * the serving provider's own search tool on a lane (lanePlugins), as every other spelling of web
 * search (web-search.ts). Gatehouse applies no other plugin (file-parser, moderation,
 * response-healing, context-compression, web-fetch, the routers, …): each is accepted and listed
 * as dropped (`plugins.<id>`), so the caller sees it was not applied. A plugin with
 * `enabled: false` is off: nothing to apply, nothing listed.
 */
import type { ChatRequest, WebSearchRequest } from './chat.js';
import { arr, given, isObj, nonEmptyStr, type Obj, obj, optBool } from './validate.js';
import {
  anthropicSearchTool,
  chatSearchOptions,
  isAnthropicWebSearch,
  isResponsesWebSearch,
  mergeWebSearch,
  pluginWebSearch,
  responsesSearchTool,
  WEB_PLUGIN,
  WEB_SEARCH_TOOL,
} from './web-search.js';

export interface Plugins {
  /** The web search the `web` plugin asks for (absent: none asked, or disabled). */
  web?: WebSearchRequest;
  /** What is not applied, as paths: `plugins.<id>`, `plugins.web.<setting>`. */
  dropped: string[];
}

/**
 * A body's `plugins`, validated: a TranslationError (a 400) unless it is a list of objects with a
 * string `id` and valid web search settings.
 */
export function readPlugins(body: Obj): Plugins {
  const out: Plugins = { dropped: [] };
  if (!given(body.plugins)) return out;
  arr(body.plugins, 'plugins').forEach((raw, i) => {
    const p = `plugins[${i}]`;
    const plugin = obj(raw, p);
    const id = nonEmptyStr(plugin.id, `${p}.id`);
    if (optBool(plugin.enabled, `${p}.enabled`) === false) return;
    if (id === WEB_PLUGIN) out.web = mergeWebSearch(out.web, pluginWebSearch(plugin, p, out.dropped));
    else out.dropped.push(`plugins.${id}`);
  });
  return out;
}

/**
 * A translated request with the `web` plugin's search (a web search tool in the same body adds
 * to it, its settings winning) and the plugins not applied listed in `dropped`.
 */
export function withPlugins(req: ChatRequest, body: Obj): ChatRequest {
  const { web, dropped } = readPlugins(body);
  if (!web && !dropped.length) return req;
  const out: ChatRequest = { ...req };
  if (web) out.web_search = mergeWebSearch(web, req.web_search ?? {});
  if (dropped.length) out.dropped = [...(req.dropped ?? []), ...dropped];
  return out;
}

export type LaneWire = 'chat' | 'responses' | 'messages';

/** The `web` plugin's settings Gatehouse maps, as the request field and the plugin's own name. */
const PLUGIN_SETTINGS: [keyof WebSearchRequest, string][] = [
  ['max_uses', 'max_uses'],
  ['allowed_domains', 'include_domains'],
  ['blocked_domains', 'exclude_domains'],
  ['user_location', 'user_location'],
];

/** Whether a lane's body already asks for the provider's search in its own way (that one stands). */
function searches(body: Obj, wire: LaneWire): boolean {
  const tools = Array.isArray(body.tools) ? body.tools.filter(isObj) : [];
  switch (wire) {
    case 'chat':
      return given(body.web_search_options) || tools.some((t) => t.type === WEB_SEARCH_TOOL);
    case 'responses':
      return tools.some((t) => isResponsesWebSearch(t.type) || t.type === WEB_SEARCH_TOOL);
    case 'messages':
      return tools.some((t) => isAnthropicWebSearch(t.type) || t.type === WEB_SEARCH_TOOL);
  }
}

/**
 * The `web` plugin on a lane, as the provider's own search: `web_search_options` on Chat
 * Completions (OpenAI), a `web_search` tool on Responses, Anthropic's `web_search_20250305` server
 * tool on Messages. Its settings the wire has no field for, and the plugins not applied, are pushed
 * to `dropped`. `body` is not changed (its `plugins` are left for the lane to remove).
 */
export function lanePlugins(body: Obj, wire: LaneWire, dropped: string[] = []): Obj {
  let plugins: Plugins;
  try {
    plugins = readPlugins(body);
  } catch {
    return body; // refused before any lane (inspectBody)
  }
  dropped.push(...plugins.dropped);
  const ws = plugins.web;
  if (!ws) return body;
  const unsent = (field: keyof WebSearchRequest, name: string) => {
    if (ws[field] !== undefined) dropped.push(`plugins.web.${name}`);
  };
  // The body's own search stands: none of the plugin's settings are applied.
  if (searches(body, wire)) {
    for (const [field, name] of PLUGIN_SETTINGS) unsent(field, name);
    return body;
  }
  const tools = Array.isArray(body.tools) ? body.tools : [];
  if (wire === 'messages') {
    if (ws.allowed_domains) unsent('blocked_domains', 'exclude_domains');
    return { ...body, tools: [...tools, anthropicSearchTool(ws)] };
  }
  // OpenAI's search has no cap on uses and no blocked domains.
  unsent('max_uses', 'max_uses');
  unsent('blocked_domains', 'exclude_domains');
  if (wire === 'responses') return { ...body, tools: [...tools, responsesSearchTool(ws)] };
  unsent('allowed_domains', 'include_domains');
  return { ...body, web_search_options: chatSearchOptions(ws) };
}

/** What lanePlugins leaves out of `body`. */
export function lanePluginsDropped(body: Obj, wire: LaneWire): string[] {
  const dropped: string[] = [];
  lanePlugins(body, wire, dropped);
  return dropped;
}
