/**
 * Responses tools that are not plain functions, as the canonical request carries them (function
 * tools with an `origin`), and the model's calls mapped back to the item types the caller declared.
 * This is what lets an agent such as Codex CLI, which declares `namespace`, `custom` and
 * `local_shell` tools, run on a provider of another format.
 *
 * | Responses tool                         | canonical function tool                                   |
 * | -------------------------------------- | --------------------------------------------------------- |
 * | `function`                             | same                                                      |
 * | `custom` (freeform, maybe a grammar)   | one string parameter, `input`; the grammar goes into the   |
 * |                                        | description (not enforced: `tools[i].format` is dropped)   |
 * | `namespace` {name, tools}              | each inner function / custom tool, named                  |
 * |                                        | `<namespace>__<name>` (see flatName)                       |
 * | `local_shell`                          | `local_shell`, taking the exec action's fields            |
 * | `web_search` / `web_search_preview`,   | the request's `web_search` (web-search.ts): the serving    |
 * | `openrouter:web_search`                | provider runs its own search                               |
 * | `tool_search`, `execution: 'client'`   | `tool_search` (the caller runs the search: a function with |
 * |                                        | the tool's `parameters`); the tools a `tool_search_output` |
 * |                                        | item loaded are offered from then on                       |
 * | `tool_search` run by OpenAI (hosted)   | dropped (`tools[i]`): only OpenAI runs it; the deferred    |
 * |                                        | functions (`defer_loading`) are offered up front instead   |
 *
 * Tools may also come in `additional_tools` input items (Codex's "lite" dialect); they are read
 * the same way, their paths under that item (`input[i].tools[j]`).
 *
 * Calls come back as `function_call` (with `namespace` for a namespaced tool), `custom_tool_call`
 * (`input` = the call's `input` argument) or `local_shell_call` (`action` = the arguments), and the
 * same items in a later turn's `input` become the canonical tool calls again.
 */
import { createHash } from 'node:crypto';
import type { ToolCall, ToolDefinition, ToolOrigin, WebSearchRequest } from './chat.js';
import { withCacheControl } from './hints.js';
import {
  argumentsObject,
  arr,
  fail,
  given,
  nonEmptyStr,
  type Obj,
  obj,
  optBool,
  optStr,
  str,
} from './validate.js';
import {
  isResponsesWebSearch,
  mergeWebSearch,
  openRouterWebSearch,
  responsesWebSearch,
  WEB_SEARCH_TOOL,
} from './web-search.js';

/** Function names every provider accepts (OpenAI's rule is the strictest: 64 of [A-Za-z0-9_-]). */
const MAX_NAME = 64;

/**
 * The canonical (provider-facing) name of a tool: its own name, or `<namespace>__<name>` for a
 * namespaced one, with characters providers refuse replaced and an over-long name shortened with a
 * hash, so that the same tool always gets the same name (history items map to it without a table).
 */
export function flatName(name: string, namespace?: string): string {
  if (namespace === undefined) return name;
  const flat = `${namespace}__${name}`.replace(/[^A-Za-z0-9_-]/g, '_');
  if (flat.length <= MAX_NAME) return flat;
  const hash = createHash('sha256').update(`${namespace}\0${name}`).digest('hex').slice(0, 8);
  return `${flat.slice(0, MAX_NAME - 9)}_${hash}`;
}

const LOCAL_SHELL_PARAMETERS = {
  type: 'object',
  properties: {
    command: {
      type: 'array',
      items: { type: 'string' },
      description: 'The program and its arguments, e.g. ["bash", "-lc", "ls"].',
    },
    working_directory: { type: 'string' },
    timeout_ms: { type: 'integer' },
    env: { type: 'object', additionalProperties: { type: 'string' } },
    user: { type: 'string' },
  },
  required: ['command'],
};

const customParameters = (description: string) => ({
  type: 'object',
  properties: { input: { type: 'string', description } },
  required: ['input'],
  additionalProperties: false,
});

interface Parsed {
  tools: ToolDefinition[];
  /** Caller paths dropped (hosted tools, unenforced grammars). */
  dropped: string[];
  /** A web search tool's settings, when one is declared. */
  web_search?: WebSearchRequest;
}

function functionTool(t: Obj, p: string, namespace?: string): ToolDefinition {
  const name = nonEmptyStr(t.name, `${p}.name`);
  const fn: ToolDefinition['function'] = { name: flatName(name, namespace) };
  const description = optStr(t.description, `${p}.description`);
  if (description !== undefined) fn.description = description;
  if (given(t.parameters)) fn.parameters = obj(t.parameters, `${p}.parameters`);
  const strict = optBool(t.strict, `${p}.strict`);
  if (strict !== undefined) fn.strict = strict;
  const tool: ToolDefinition = { type: 'function', function: fn };
  if (namespace !== undefined) tool.origin = { type: 'function', name, namespace };
  return tool;
}

/** The name a client tool search has upstream (and back: its calls become `tool_search_call` items). */
export const TOOL_SEARCH = 'tool_search';

const TOOL_SEARCH_PARAMETERS = {
  type: 'object',
  properties: { query: { type: 'string', description: 'What the tools to load should do' } },
  required: ['query'],
};

/**
 * A tool search the caller runs itself (`execution: 'client'`): to any model it is a function —
 * the model calls it, the caller answers with a `tool_search_output` whose tools are then offered.
 */
function toolSearchTool(t: Obj, p: string): ToolDefinition {
  const description =
    optStr(t.description, `${p}.description`) ??
    'Searches for more tools. The tools it finds can be called from the next step on.';
  const parameters = given(t.parameters) ? obj(t.parameters, `${p}.parameters`) : TOOL_SEARCH_PARAMETERS;
  return {
    type: 'function',
    function: { name: TOOL_SEARCH, description, parameters },
    origin: { type: 'tool_search', name: TOOL_SEARCH },
  };
}

function customTool(t: Obj, p: string, dropped: string[], namespace?: string): ToolDefinition {
  const name = nonEmptyStr(t.name, `${p}.name`);
  let description = optStr(t.description, `${p}.description`) ?? '';
  let input = 'The raw input for the tool.';
  if (given(t.format)) {
    const f = obj(t.format, `${p}.format`);
    if (f.type === 'grammar') {
      // Providers without constrained decoding get the grammar to follow, not an enforced one.
      const syntax = optStr(f.syntax, `${p}.format.syntax`) ?? 'lark';
      const definition = str(f.definition, `${p}.format.definition`);
      input = `The raw input for the tool. It must follow this ${syntax} grammar:\n${definition}`;
      dropped.push(`${p}.format`);
    } else if (f.type !== 'text') fail(`${p}.format.type`, "must be 'text' or 'grammar'");
  }
  if (!description) description = `Takes one string, \`input\`.`;
  const origin: ToolOrigin = { type: 'custom', name };
  if (namespace !== undefined) origin.namespace = namespace;
  return {
    type: 'function',
    function: { name: flatName(name, namespace), description, parameters: customParameters(input) },
    origin,
  };
}

/**
 * Responses tools as canonical function tools (see the file comment); `path` is where the list is
 * in the caller's body (`tools`, or an `additional_tools` item's `input[i].tools`).
 */
export function responsesTools(v: unknown, path = 'tools'): Parsed {
  const out: Parsed = { tools: [], dropped: [] };
  const withCache = (tool: ToolDefinition, t: Obj, p: string) =>
    out.tools.push(withCacheControl(tool, t.cache_control, `${p}.cache_control`));
  for (const [i, raw] of arr(v, path).entries()) {
    const p = `${path}[${i}]`;
    const t = obj(raw, p);
    switch (t.type) {
      case 'function':
        withCache(functionTool(t, p), t, p);
        break;
      case 'custom':
        withCache(customTool(t, p, out.dropped), t, p);
        break;
      case 'namespace': {
        const namespace = nonEmptyStr(t.name, `${p}.name`);
        for (const [j, rawInner] of arr(t.tools, `${p}.tools`).entries()) {
          const ip = `${p}.tools[${j}]`;
          const inner = obj(rawInner, ip);
          if (inner.type === 'custom') out.tools.push(customTool(inner, ip, out.dropped, namespace));
          else if (inner.type === 'function' || !given(inner.type))
            out.tools.push(functionTool(inner, ip, namespace));
          else fail(`${ip}.type`, `'${String(inner.type)}' tools are not supported in a namespace`);
        }
        break;
      }
      case 'local_shell':
        out.tools.push({
          type: 'function',
          function: {
            name: 'local_shell',
            description: "Runs a command on the user's machine and returns its output.",
            parameters: LOCAL_SHELL_PARAMETERS,
          },
          origin: { type: 'local_shell', name: 'local_shell' },
        });
        break;
      case 'tool_search':
        if (t.execution === 'client') out.tools.push(toolSearchTool(t, p));
        else out.dropped.push(p);
        break;
      case WEB_SEARCH_TOOL:
        out.web_search = mergeWebSearch(out.web_search, {
          ...openRouterWebSearch(t, p, out.dropped),
          origin: WEB_SEARCH_TOOL,
        });
        break;
      default:
        if (isResponsesWebSearch(t.type))
          out.web_search = mergeWebSearch(out.web_search, {
            ...responsesWebSearch(t, p, out.dropped),
            origin: t.type as string,
          });
        else fail(`${p}.type`, `built-in tool '${String(t.type)}' is not supported`);
    }
  }
  return out;
}

/** Refuses two tools that reach the provider under one name (e.g. `a__b` and `b` in namespace `a`). */
export function assertUniqueNames(tools: ToolDefinition[]): void {
  const seen = new Set<string>();
  for (const t of tools) {
    if (seen.has(t.function.name)) fail('tools', `two tools are named '${t.function.name}'`);
    seen.add(t.function.name);
  }
}

// ---------------------------------------------------------------------------------------------
// History: the caller's tool-call items → canonical tool calls

/**
 * A `function_call`, `custom_tool_call`, `local_shell_call` or (client) `tool_search_call` input item as the canonical tool
 * call the model made (named as its tool is named upstream).
 */
export function historyToolCall(item: Obj, p: string): ToolCall {
  const id = nonEmptyStr(item.call_id, `${p}.call_id`);
  const namespace = optStr(item.namespace, `${p}.namespace`);
  const call = (name: string, args: string): ToolCall => ({
    id,
    type: 'function',
    function: { name, arguments: args },
  });
  switch (item.type) {
    case 'custom_tool_call':
      return call(
        flatName(nonEmptyStr(item.name, `${p}.name`), namespace),
        JSON.stringify({ input: str(item.input, `${p}.input`) }),
      );
    case 'local_shell_call': {
      const { type: _, ...action } = obj(item.action, `${p}.action`);
      return call('local_shell', JSON.stringify(action));
    }
    case 'tool_search_call':
      return call(TOOL_SEARCH, JSON.stringify(item.arguments ?? {}));
    default:
      return call(
        flatName(nonEmptyStr(item.name, `${p}.name`), namespace),
        str(item.arguments, `${p}.arguments`),
      );
  }
}

// ---------------------------------------------------------------------------------------------
// Answers: the model's calls → the caller's item types

export interface ResponsesFunctionCallItem {
  type: 'function_call';
  id: string;
  call_id: string;
  name: string;
  arguments: string;
  status: 'in_progress' | 'completed' | 'incomplete';
  namespace?: string;
}

export interface ResponsesCustomToolCallItem {
  type: 'custom_tool_call';
  id: string;
  call_id: string;
  name: string;
  input: string;
  status: 'in_progress' | 'completed' | 'incomplete';
  namespace?: string;
}

export interface ResponsesLocalShellCallItem {
  type: 'local_shell_call';
  id: string;
  call_id: string;
  status: 'in_progress' | 'completed' | 'incomplete';
  action: { type: 'exec'; command: string[] } & Obj;
}

export interface ResponsesToolSearchCallItem {
  type: 'tool_search_call';
  id: string;
  call_id: string;
  execution: 'client';
  arguments: unknown;
  status: 'in_progress' | 'completed' | 'incomplete';
}

export type ResponsesToolCallItem =
  | ResponsesFunctionCallItem
  | ResponsesCustomToolCallItem
  | ResponsesLocalShellCallItem
  | ResponsesToolSearchCallItem;

/** Tool name upstream → how the caller declared it (only tools that are not plain functions). */
export type ToolOrigins = Map<string, ToolOrigin>;

export function toolOrigins(tools: ToolDefinition[] | undefined): ToolOrigins {
  const origins: ToolOrigins = new Map();
  for (const t of tools ?? []) if (t.origin) origins.set(t.function.name, t.origin);
  return origins;
}

/** A finished (or, with empty arguments, just opened) tool call as the item the caller expects. */
export function toolCallItem(
  call: { id: string; call_id: string; name: string; arguments: string },
  status: ResponsesToolCallItem['status'],
  origins: ToolOrigins,
): ResponsesToolCallItem {
  const origin = origins.get(call.name);
  const ns = origin?.namespace !== undefined ? { namespace: origin.namespace } : {};
  const { id, call_id } = call;
  if (origin?.type === 'custom') {
    const args = argumentsObject(call.arguments);
    const input = args && typeof args.input === 'string' ? args.input : call.arguments;
    return { type: 'custom_tool_call', id, call_id, name: origin.name, input, status, ...ns };
  }
  if (origin?.type === 'tool_search') {
    const args = argumentsObject(call.arguments) ?? {};
    return { type: 'tool_search_call', id, call_id, execution: 'client', arguments: args, status };
  }
  if (origin?.type === 'local_shell') {
    const args = argumentsObject(call.arguments) ?? {};
    const command = Array.isArray(args.command) ? args.command.map(String) : [];
    return { type: 'local_shell_call', id, call_id, status, action: { ...args, type: 'exec', command } };
  }
  return {
    type: 'function_call',
    id,
    call_id,
    name: origin?.name ?? call.name,
    arguments: call.arguments,
    status,
    ...ns,
  };
}
