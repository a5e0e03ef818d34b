/**
 * Web search in every caller format, as the canonical `web_search` request (chat.ts): a gateway has
 * no search engine of its own, so each provider runs its own (Anthropic's `web_search` server tool,
 * OpenAI's `web_search_options`, Gemini's `googleSearch`), and the answer's searches and citations
 * come back in the caller's format.
 *
 * | caller                                              | canonical `web_search`                    |
 * | --------------------------------------------------- | ----------------------------------------- |
 * | Messages tool `web_search_20250305` / `_20260209`    | max_uses, allowed_domains, blocked_domains, |
 * |                                                     | user_location                             |
 * | Chat Completions `web_search_options`               | search_context_size, user_location        |
 * |                                                     | (`approximate` unwrapped)                 |
 * | Responses tool `web_search` / `web_search_preview`  | search_context_size, user_location,        |
 * |                                                     | `filters.allowed_domains`                 |
 * | `openrouter:web_search` tool (chat, Responses)      | `parameters`: max_uses, allowed_domains,   |
 * |                                                     | excluded_domains → blocked_domains,        |
 * |                                                     | search_context_size, user_location (or     |
 * |                                                     | the same beside `type`)                    |
 * | OpenRouter's `web` plugin (`plugins`, or a model id  | max_uses, include_domains →                |
 * | ending in `:online`; chat, Messages, Responses)     | allowed_domains, exclude_domains →         |
 * |                                                     | blocked_domains, user_location             |
 *
 * Parameters with no canonical field (OpenRouter's `engine`, `max_results`, …) are dropped and
 * listed under the caller's path (`engine: native` or `auto` is what every provider does: not
 * listed). For the workspace's `disabled_server_tools`, every spelling is the tool
 * `openrouter:web_search` (serverToolsOf).
 */
import type { WebSearchLocation, WebSearchRequest } from './chat.js';
import { compact, given, isObj, type Obj, obj, oneOf, optNum, optStr, strArray } from './validate.js';

/** The name every spelling of web search has in a workspace's `disabled_server_tools`. */
export const WEB_SEARCH_TOOL = 'openrouter:web_search';

/** OpenRouter's plugin id for web search (`plugins: [{id: 'web'}]`, what `:online` turns on). */
export const WEB_PLUGIN = 'web';

/** Whether a body's `plugins` turn web search on (read leniently: validated in plugins.ts). */
export const asksWebPlugin = (body: Obj): boolean =>
  Array.isArray(body.plugins) &&
  body.plugins.some((p) => isObj(p) && p.id === WEB_PLUGIN && p.enabled !== false);

const CONTEXT_SIZES = ['low', 'medium', 'high'] as const;

/** Anthropic's web search server tool (any version: `web_search_20250305`, `web_search_20260209`). */
export const isAnthropicWebSearch = (type: unknown): boolean =>
  typeof type === 'string' && /^web_search_\d{8}$/.test(type);

/** A Responses web search tool (`web_search`, `web_search_preview`, dated versions of either). */
export const isResponsesWebSearch = (type: unknown): boolean =>
  typeof type === 'string' && /^web_search(_preview)?(_\d{4}_\d{2}_\d{2})?$/.test(type);

function location(v: unknown, path: string): WebSearchLocation | undefined {
  if (!given(v)) return undefined;
  const o = obj(v, path);
  if (given(o.type)) oneOf(o.type, `${path}.type`, ['approximate'] as const);
  // Chat Completions nests the fields under `approximate`.
  const at = isObj(o.approximate) ? o.approximate : o;
  const where = isObj(o.approximate) ? `${path}.approximate` : path;
  return compact({
    type: 'approximate' as const,
    city: optStr(at.city, `${where}.city`),
    region: optStr(at.region, `${where}.region`),
    country: optStr(at.country, `${where}.country`),
    timezone: optStr(at.timezone, `${where}.timezone`),
  });
}

const contextSize = (v: unknown, path: string) => (given(v) ? oneOf(v, path, CONTEXT_SIZES) : undefined);

const domains = (v: unknown, path: string) => (given(v) ? strArray(v, path) : undefined);

/** Anthropic's server tool `{type: 'web_search_…', name: 'web_search', max_uses?, …}`. */
export function anthropicWebSearch(t: Obj, p: string): WebSearchRequest {
  return compact({
    max_uses: optNum(t.max_uses, `${p}.max_uses`, { integer: true, min: 1 }),
    allowed_domains: domains(t.allowed_domains, `${p}.allowed_domains`),
    blocked_domains: domains(t.blocked_domains, `${p}.blocked_domains`),
    user_location: location(t.user_location, `${p}.user_location`),
  });
}

/** Chat Completions' `web_search_options`. */
export function chatWebSearchOptions(v: unknown, p = 'web_search_options'): WebSearchRequest {
  const o = obj(v, p);
  return compact({
    search_context_size: contextSize(o.search_context_size, `${p}.search_context_size`),
    user_location: location(o.user_location, `${p}.user_location`),
  });
}

/**
 * A Responses `web_search` / `web_search_preview` tool; `external_web_access: false` (OpenAI's
 * cached-only search, Codex's default) has no equivalent: every provider searches live (listed).
 */
export function responsesWebSearch(t: Obj, p: string, dropped: string[]): WebSearchRequest {
  if (t.external_web_access === false) dropped.push(`${p}.external_web_access`);
  const filters = given(t.filters) ? obj(t.filters, `${p}.filters`) : {};
  return compact({
    search_context_size: contextSize(t.search_context_size, `${p}.search_context_size`),
    user_location: location(t.user_location, `${p}.user_location`),
    allowed_domains: domains(filters.allowed_domains, `${p}.filters.allowed_domains`),
  });
}

const OPENROUTER_MAPPED = new Set([
  'max_uses',
  'allowed_domains',
  'excluded_domains',
  'search_context_size',
  'user_location',
]);

/**
 * The settings of an `openrouter:web_search` tool (`p`: its path), each with its path: under
 * `parameters` as OpenRouter documents them, or beside `type`, where `@openrouter/ai-sdk-provider`
 * 3 puts its `webSearch` tool's arguments (`parameters` wins where both name one).
 */
function openRouterSearchSettings(t: Obj, p: string): { o: Obj; pathOf: (k: string) => string } {
  const { type: _, parameters, ...beside } = t;
  const nested = given(parameters) ? obj(parameters, `${p}.parameters`) : {};
  return {
    o: { ...beside, ...nested },
    pathOf: (k) => (k in nested ? `${p}.parameters.${k}` : `${p}.${k}`),
  };
}

/**
 * OpenRouter's `{type: 'openrouter:web_search', parameters?}` (or its settings beside `type`); the
 * settings with no canonical field (its `engine`, `max_results`, …) are pushed to `dropped` as paths.
 */
export function openRouterWebSearch(t: Obj, p: string, dropped: string[]): WebSearchRequest {
  const { o, pathOf } = openRouterSearchSettings(t, p);
  for (const [k, v] of Object.entries(o)) if (given(v) && !OPENROUTER_MAPPED.has(k)) dropped.push(pathOf(k));
  return compact({
    max_uses: optNum(o.max_uses, pathOf('max_uses'), { integer: true, min: 1 }),
    allowed_domains: domains(o.allowed_domains, pathOf('allowed_domains')),
    blocked_domains: domains(o.excluded_domains, pathOf('excluded_domains')),
    search_context_size: contextSize(o.search_context_size, pathOf('search_context_size')),
    user_location: location(o.user_location, pathOf('user_location')),
  });
}

/** The `web` plugin's settings the canonical web search carries; `id` and `enabled` are the plugin's. */
const PLUGIN_MAPPED = new Set([
  'id',
  'enabled',
  'max_uses',
  'include_domains',
  'exclude_domains',
  'user_location',
]);

/** `engine` values that ask for what Gatehouse does: the provider's own search. */
const NATIVE_ENGINES = new Set(['native', 'auto']);

/**
 * OpenRouter's `web` plugin `{id: 'web', max_uses?, include_domains?, exclude_domains?,
 * user_location?, …}` (`p`: its path); its settings with no canonical field (`max_results`,
 * `search_prompt`, `mode`, another `engine` than the provider's own search, …) are pushed to
 * `dropped` as `plugins.web.<name>`.
 */
export function pluginWebSearch(t: Obj, p: string, dropped: string[]): WebSearchRequest {
  for (const [k, v] of Object.entries(t)) {
    if (!given(v) || PLUGIN_MAPPED.has(k)) continue;
    if (k === 'engine' && typeof v === 'string' && NATIVE_ENGINES.has(v)) continue;
    dropped.push(`plugins.web.${k}`);
  }
  return compact({
    max_uses: optNum(t.max_uses, `${p}.max_uses`, { integer: true, min: 1 }),
    allowed_domains: domains(t.include_domains, `${p}.include_domains`),
    blocked_domains: domains(t.exclude_domains, `${p}.exclude_domains`),
    user_location: location(t.user_location, `${p}.user_location`),
  });
}

/** Two requests for web search in one body (a tool and `web_search_options`): one, the later wins. */
export const mergeWebSearch = (a: WebSearchRequest | undefined, b: WebSearchRequest): WebSearchRequest => ({
  ...a,
  ...b,
});

/**
 * The server tools a caller's body asks for, by the names `disabled_server_tools` uses: any
 * spelling of web search (the `web` plugin included) is `openrouter:web_search`; another
 * `openrouter:` tool is its own name.
 * Read from the raw body, so a lane's call is checked before it is forwarded.
 */
export function serverToolsOf(body: Obj): string[] {
  const out = new Set<string>();
  if (given(body.web_search_options) || asksWebPlugin(body)) out.add(WEB_SEARCH_TOOL);
  const tools = Array.isArray(body.tools) ? body.tools : [];
  for (const t of tools) {
    if (!isObj(t) || typeof t.type !== 'string') continue;
    if (isAnthropicWebSearch(t.type) || isResponsesWebSearch(t.type)) out.add(WEB_SEARCH_TOOL);
    else if (t.type.startsWith('openrouter:')) out.add(t.type);
  }
  return [...out];
}

/**
 * A canonical web search in each lane wire's own form (a lane's body carries the provider's own
 * search): Anthropic's server tool takes one domain list (the allowed, when both are given)...
 */
export const anthropicSearchTool = (ws: WebSearchRequest): Obj =>
  compact({
    type: 'web_search_20250305',
    name: 'web_search',
    max_uses: ws.max_uses,
    allowed_domains: ws.allowed_domains,
    blocked_domains: ws.allowed_domains ? undefined : ws.blocked_domains,
    user_location: ws.user_location,
  });

/** …a Responses `web_search` tool (its allowed domains as `filters`)… */
export const responsesSearchTool = (ws: WebSearchRequest): Obj =>
  compact({
    type: 'web_search',
    search_context_size: ws.search_context_size,
    user_location: ws.user_location,
    filters: ws.allowed_domains ? { allowed_domains: ws.allowed_domains } : undefined,
  });

/** …and Chat Completions' `web_search_options` (its location nested under `approximate`). */
export function chatSearchOptions(ws: WebSearchRequest): Obj {
  const location = ws.user_location;
  const { type, ...approximate } = location ?? { type: 'approximate' as const };
  return compact({
    search_context_size: ws.search_context_size,
    user_location: location ? { type, approximate } : undefined,
  });
}

/**
 * OpenRouter's `openrouter:web_search` tool on a lane (the provider does not know it): the
 * provider's own search instead — `web_search_options` on Chat Completions, a `web_search` tool on
 * Responses, Anthropic's `web_search_20250305` server tool on Messages. Its parameters the provider
 * has no field for are listed in `dropped`. `body` is not changed.
 */
export function laneWebSearch(
  body: Obj,
  wire: 'chat' | 'responses' | 'messages',
  dropped: string[] = [],
): Obj {
  if (!Array.isArray(body.tools)) return body;
  const at = body.tools.findIndex((t) => isObj(t) && t.type === WEB_SEARCH_TOOL);
  if (at < 0) return body;
  const tool = body.tools[at] as Obj;
  let ws: WebSearchRequest;
  let pathOf: (k: string) => string;
  try {
    ws = openRouterWebSearch(tool, `tools[${at}]`, dropped);
    pathOf = openRouterSearchSettings(tool, `tools[${at}]`).pathOf;
  } catch {
    return body; // invalid parameters: the upstream refuses the call as it came
  }
  const tools = body.tools.filter((_, i) => i !== at);
  const out: Obj = { ...body, tools };
  if (wire === 'messages') {
    if (ws.search_context_size) dropped.push(pathOf('search_context_size'));
    if (ws.allowed_domains && ws.blocked_domains) dropped.push(pathOf('excluded_domains'));
    tools.splice(at, 0, anthropicSearchTool(ws));
    return out;
  }
  if (ws.max_uses !== undefined) dropped.push(pathOf('max_uses'));
  if (ws.blocked_domains) dropped.push(pathOf('excluded_domains'));
  if (wire === 'chat') {
    if (ws.allowed_domains) dropped.push(pathOf('allowed_domains'));
    if (tools.length === 0) delete out.tools;
    if (!given(body.web_search_options)) out.web_search_options = chatSearchOptions(ws);
    return out;
  }
  tools.splice(at, 0, responsesSearchTool(ws));
  return out;
}

/** What laneWebSearch drops of `body`. */
export function laneSearchDropped(body: Obj, wire: 'chat' | 'responses' | 'messages'): string[] {
  const dropped: string[] = [];
  laneWebSearch(body, wire, dropped);
  return dropped;
}
