/**
 * OpenAI's `allowed_tools` tool choice (Chat Completions and Responses): the model may call only
 * the listed tools, though the request declares more (OpenAI keeps the whole list so that its
 * prompt cache holds across calls with different lists). A provider without it gets the same
 * choice from the listed tools alone, with the choice's `mode` (`auto`, `required`) as its tool
 * choice.
 */
import type { ChatRequest, ToolChoice, ToolDefinition } from './chat.js';
import { arr, fail, nonEmptyStr, type Obj, obj, oneOf, optStr } from './validate.js';

/** The names the choice allows, each with the path it was given at (for errors). */
export interface AllowedTools {
  mode: 'auto' | 'required';
  names: { name: string; path: string }[];
}

export const isAllowedToolsChoice = (v: unknown): v is Obj =>
  typeof v === 'object' && v !== null && (v as Obj).type === 'allowed_tools';

/**
 * Chat Completions: `{type: 'allowed_tools', allowed_tools: {mode, tools: [{type: 'function',
 * function: {name}}]}}`.
 */
export function chatAllowedTools(choice: Obj): AllowedTools {
  const path = 'tool_choice.allowed_tools';
  const at = obj(choice.allowed_tools, path);
  const names = arr(at.tools, `${path}.tools`).map((raw, i) => {
    const p = `${path}.tools[${i}]`;
    const t = obj(raw, p);
    if (t.type !== 'function') fail(`${p}.type`, "only 'function' tools can be allowed");
    return {
      name: nonEmptyStr(obj(t.function, `${p}.function`).name, `${p}.function.name`),
      path: `${p}.function.name`,
    };
  });
  return {
    mode: oneOf(at.mode, `${path}.mode`, ['auto', 'required'] as const),
    names: nonEmpty(names, `${path}.tools`),
  };
}

/**
 * Responses: `{type: 'allowed_tools', mode, tools: [{type: 'function' | 'custom', name, namespace?}]}`;
 * `flatName` gives a namespaced tool its name as the request's tools carry it.
 */
export function responsesAllowedTools(
  choice: Obj,
  flatName: (name: string, namespace?: string) => string,
): AllowedTools {
  const names = arr(choice.tools, 'tool_choice.tools').map((raw, i) => {
    const p = `tool_choice.tools[${i}]`;
    const t = obj(raw, p);
    if (t.type !== 'function' && t.type !== 'custom')
      fail(`${p}.type`, `'${String(t.type)}' tools cannot be allowed here (only function and custom tools)`);
    const name = nonEmptyStr(t.name, `${p}.name`);
    return { name: flatName(name, optStr(t.namespace, `${p}.namespace`)), path: `${p}.name` };
  });
  return {
    mode: oneOf(choice.mode, 'tool_choice.mode', ['auto', 'required'] as const),
    names: nonEmpty(names, 'tool_choice.tools'),
  };
}

function nonEmpty<T>(list: T[], path: string): T[] {
  if (list.length === 0) fail(path, 'must not be empty');
  return list;
}

/** The request's tools the choice allows (in their declared order), and the mode as the tool choice. */
export function restrictTools(
  tools: ChatRequest['tools'],
  allowed: AllowedTools,
): { tools: ToolDefinition[]; tool_choice: ToolChoice } {
  const declared = new Map((tools ?? []).map((t) => [t.function.name, t]));
  const kept = new Set<ToolDefinition>();
  for (const { name, path } of allowed.names) {
    const tool = declared.get(name);
    if (!tool) return fail(path, `names no tool of the request ('${name}')`);
    kept.add(tool);
  }
  return { tools: (tools ?? []).filter((t) => kept.has(t)), tool_choice: allowed.mode };
}
