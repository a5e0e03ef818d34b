/**
 * Walkers over a caller's own body: the texts content filters read, as slots that rewrite the body
 * in place. They take any JSON (a body is only checked by the provider on a lane): whatever is not
 * the expected shape is skipped, never an error.
 */
import type { AnswerSlot, Body, TextSlot } from '../../routing/call.js';

type Role = TextSlot['role'];
type Obj = Record<string, unknown>;

export const isObj = (x: unknown): x is Obj => x !== null && typeof x === 'object' && !Array.isArray(x);

/** The slot of `holder[key]` when it is a string (`group`: see TextSlot). */
export function stringSlot(
  out: TextSlot[],
  role: Role,
  holder: Obj | unknown[],
  key: string | number,
  group?: object,
): void {
  const text = (holder as Obj)[key as string];
  if (typeof text !== 'string') return;
  out.push({
    role,
    text,
    set: (next) => {
      (holder as Obj)[key as string] = next;
    },
    ...(group ? { group } : {}),
  });
}

/** Every string inside a JSON value (a tool's input object), however deep. */
export function leafSlots(
  out: TextSlot[],
  role: Role,
  holder: Obj | unknown[],
  key: string | number,
  depth = 0,
): void {
  const v = (holder as Obj)[key as string];
  if (typeof v === 'string') stringSlot(out, role, holder, key);
  else if (depth > 32) return;
  else if (Array.isArray(v)) for (let i = 0; i < v.length; i++) leafSlots(out, role, v, i, depth + 1);
  else if (isObj(v)) for (const k of Object.keys(v)) leafSlots(out, role, v, k, depth + 1);
}

/**
 * A message's `content`: a string, or parts whose text is under `text` (chat `text` parts,
 * Anthropic `text` blocks, Responses `input_text` / `output_text`).
 */
export function contentSlots(out: TextSlot[], role: Role, message: Obj, key = 'content'): void {
  const content = message[key];
  if (typeof content === 'string') stringSlot(out, role, message, key);
  else if (Array.isArray(content))
    for (const part of content) {
      if (!isObj(part)) continue;
      if (typeof part.text === 'string') stringSlot(out, role, part, 'text', content);
      // An assistant's earlier refusal, given back in the history (chat and Responses `refusal` parts).
      else if (typeof part.refusal === 'string') stringSlot(out, role, part, 'refusal', content);
      else documentSlots(out, role, part);
    }
}

const TEXT_DATA_URL = /^(data:text\/[^;,]*(?:;[^;,]*)*;base64,)(.*)$/s;

/** A text file inlined as a base64 `data:` URL: read decoded, rewritten re-encoded. */
function dataUrlTextSlot(out: TextSlot[], role: Role, holder: Obj, key: string): void {
  const v = holder[key];
  const m = typeof v === 'string' ? TEXT_DATA_URL.exec(v) : null;
  if (!m) return;
  const prefix = m[1] as string;
  out.push({
    role,
    text: Buffer.from(m[2] as string, 'base64').toString('utf8'),
    set: (next) => {
      holder[key] = prefix + Buffer.from(next, 'utf8').toString('base64');
    },
  });
}

/**
 * The text of a document part, whichever format gave it: a text file in a Chat Completions `file`
 * part or a Responses `input_file` (base64 `data:` URLs), an Anthropic `document` (a text source,
 * custom content, its title and context) or `search_result`. A PDF's text is not read.
 */
export function documentSlots(out: TextSlot[], role: Role, part: Obj): void {
  if (part.type === 'file' && isObj(part.file)) dataUrlTextSlot(out, role, part.file, 'file_data');
  else if (part.type === 'input_file') dataUrlTextSlot(out, role, part, 'file_data');
  else if (part.type === 'document') {
    stringSlot(out, role, part, 'title');
    stringSlot(out, role, part, 'context');
    const source = part.source;
    if (!isObj(source)) return;
    if (source.type === 'text') stringSlot(out, role, source, 'data');
    else if (source.type === 'content') contentSlots(out, role, source, 'content');
  } else if (part.type === 'search_result') {
    // Anthropic's search results given to the model (in a turn or a tool result): text blocks.
    stringSlot(out, role, part, 'title');
    contentSlots(out, role, part, 'content');
  }
}

/** The role a filter scope sees for a caller's role name. */
export function roleOf(role: unknown): Role {
  switch (role) {
    case 'user':
      return 'user';
    case 'assistant':
      return 'assistant';
    case 'tool':
    case 'function':
      return 'tool';
    default:
      return 'system';
  }
}

/**
 * A JSON schema the provider shows the model (tool parameters, a response format): every string
 * in it (descriptions, enums, titles, examples) and the names of its properties, as system text.
 */
export function schemaSlots(out: TextSlot[], holder: Obj, key: string, depth = 0): void {
  const v = holder[key];
  if (typeof v === 'string') stringSlot(out, 'system', holder, key);
  else if (depth > 32) return;
  else if (Array.isArray(v))
    for (let i = 0; i < v.length; i++) schemaSlots(out, v as never, String(i), depth + 1);
  else if (isObj(v)) {
    if (key === 'properties' || key === 'patternProperties' || key === '$defs' || key === 'definitions')
      for (const name of Object.keys(v)) propertyNameSlot(out, v, name);
    for (const k of Object.keys(v)) schemaSlots(out, v, k, depth + 1);
  }
}

/** A property name; a rewrite renames the property where it stands (the order of keys kept). */
function propertyNameSlot(out: TextSlot[], map: Obj, name: string): void {
  out.push({
    role: 'system',
    text: name,
    set(next) {
      if (next === name || !(name in map)) return;
      const entries = Object.entries(map).map(([k, v]): [string, unknown] => [k === name ? next : k, v]);
      for (const k of Object.keys(map)) delete map[k];
      for (const [k, v] of entries) map[k] = v;
    },
  });
}

/**
 * Tools as the provider shows them to the model: descriptions and parameter schemas
 * (`tools[]` in the chat form `{function: {description, parameters}}`, Anthropic's
 * `{description, input_schema}`, Responses' `{description, parameters}`; chat's legacy
 * `functions[]`), as system text. Tool names are identifiers the model calls back with: not read.
 */
export function toolSlots(out: TextSlot[], body: Body): void {
  for (const list of [body.tools, body.functions]) {
    if (!Array.isArray(list)) continue;
    for (const t of list) {
      if (!isObj(t)) continue;
      for (const holder of isObj(t.function) ? [t, t.function] : [t]) {
        stringSlot(out, 'system', holder, 'description');
        for (const key of ['parameters', 'input_schema']) schemaSlots(out, holder, key);
      }
    }
  }
}

/** A structured-output format (`{name?, description?, schema}`, or chat's `json_schema` wrapper). */
export function formatSlots(out: TextSlot[], format: unknown): void {
  if (!isObj(format)) return;
  const inner = isObj(format.json_schema) ? format.json_schema : format;
  stringSlot(out, 'system', inner, 'description');
  schemaSlots(out, inner, 'schema');
}

// ---------------------------------------------------------------------------------------------
// The model's answer (content filters with apply_to response or both)

/** A delta of a streamed text: the slot of `holder[key]` in channel `channel`. */
function deltaSlot(out: AnswerSlot[], holder: Obj, key: string, channel: string): void {
  const before = out.length;
  stringSlot(out, 'assistant', holder, key);
  if (out.length > before) (out[before] as AnswerSlot).channel = channel;
}

/** A chat completion (a lane's body, or a translated call's answer): message contents, tool-call arguments. */
export function chatAnswerSlots(json: unknown): AnswerSlot[] {
  const out: AnswerSlot[] = [];
  if (!isObj(json) || !Array.isArray(json.choices)) return out;
  for (const c of json.choices) {
    if (!isObj(c) || !isObj(c.message)) continue;
    contentSlots(out, 'assistant', c.message);
    if (Array.isArray(c.message.tool_calls))
      for (const tc of c.message.tool_calls)
        if (isObj(tc) && isObj(tc.function)) stringSlot(out, 'assistant', tc.function, 'arguments');
  }
  return out;
}

/** A chat stream chunk: content and tool-call argument deltas, one channel per choice and call. */
export function chatChunkSlots(json: unknown): AnswerSlot[] {
  const out: AnswerSlot[] = [];
  if (!isObj(json) || !Array.isArray(json.choices)) return out;
  for (const c of json.choices) {
    if (!isObj(c) || !isObj(c.delta)) continue;
    deltaSlot(out, c.delta, 'content', `${c.index}`);
    if (Array.isArray(c.delta.tool_calls))
      for (const tc of c.delta.tool_calls)
        if (isObj(tc) && isObj(tc.function))
          deltaSlot(out, tc.function, 'arguments', `${c.index}:${tc.index}`);
  }
  return out;
}

/**
 * A legacy completion: each choice's `text` (a lane's body), or the chat answer a translated call
 * was made of (its message contents).
 */
export function completionAnswerSlots(json: unknown): AnswerSlot[] {
  const out: AnswerSlot[] = [];
  if (!isObj(json) || !Array.isArray(json.choices)) return out;
  for (const c of json.choices) {
    if (!isObj(c)) continue;
    if (isObj(c.message)) contentSlots(out, 'assistant', c.message);
    else stringSlot(out, 'assistant', c, 'text');
  }
  return out;
}

/** A legacy completion's stream chunk (or a translated chat chunk): the text deltas, one channel per choice. */
export function completionChunkSlots(json: unknown): AnswerSlot[] {
  const out: AnswerSlot[] = [];
  if (!isObj(json) || !Array.isArray(json.choices)) return out;
  for (const c of json.choices) {
    if (!isObj(c)) continue;
    if (isObj(c.delta)) deltaSlot(out, c.delta, 'content', `${c.index}`);
    else deltaSlot(out, c, 'text', `${c.index}`);
  }
  return out;
}

/** An Anthropic message: text blocks and tool inputs. */
export function messagesAnswerSlots(json: unknown): AnswerSlot[] {
  const out: AnswerSlot[] = [];
  if (!isObj(json) || !Array.isArray(json.content)) return out;
  for (const block of json.content) {
    if (!isObj(block)) continue;
    if (block.type === 'text') stringSlot(out, 'assistant', block, 'text');
    else if (block.type === 'tool_use') leafSlots(out, 'assistant', block, 'input');
  }
  return out;
}

/** An Anthropic stream event: text and tool-input deltas, one channel per content block. */
export function messagesFrameSlots(json: unknown): AnswerSlot[] {
  const out: AnswerSlot[] = [];
  if (!isObj(json)) return out;
  if (json.type === 'content_block_delta' && isObj(json.delta)) {
    const key = json.delta.type === 'input_json_delta' ? 'partial_json' : 'text';
    deltaSlot(out, json.delta, key, `${json.index}`);
  } else if (json.type === 'content_block_start' && isObj(json.content_block))
    stringSlot(out, 'assistant', json.content_block, 'text');
  return out;
}

/** One Responses output item: message texts, function-call arguments, custom-tool inputs. */
function responsesItemSlots(out: AnswerSlot[], item: unknown): void {
  if (!isObj(item)) return;
  if (item.type === 'message') contentSlots(out, 'assistant', item);
  else if (item.type === 'function_call') stringSlot(out, 'assistant', item, 'arguments');
  else if (item.type === 'custom_tool_call') stringSlot(out, 'assistant', item, 'input');
}

/** A Responses object: its output items and `output_text`. */
export function responsesAnswerSlots(json: unknown): AnswerSlot[] {
  const out: AnswerSlot[] = [];
  if (!isObj(json)) return out;
  if (Array.isArray(json.output)) for (const item of json.output) responsesItemSlots(out, item);
  stringSlot(out, 'assistant', json, 'output_text');
  return out;
}

/**
 * A Responses stream event: text and argument deltas (one channel per output item and part), and
 * the whole texts repeated by the `done` events and the response object.
 */
export function responsesFrameSlots(json: unknown): AnswerSlot[] {
  const out: AnswerSlot[] = [];
  if (!isObj(json) || typeof json.type !== 'string') return out;
  const channel = `${json.output_index}:${json.content_index ?? ''}`;
  switch (json.type) {
    case 'response.output_text.delta':
    case 'response.function_call_arguments.delta':
    case 'response.custom_tool_call_input.delta':
      deltaSlot(out, json, 'delta', channel);
      break;
    case 'response.output_text.done':
      stringSlot(out, 'assistant', json, 'text');
      break;
    case 'response.function_call_arguments.done':
      stringSlot(out, 'assistant', json, 'arguments');
      break;
    case 'response.custom_tool_call_input.done':
      stringSlot(out, 'assistant', json, 'input');
      break;
    default:
      if (isObj(json.part)) stringSlot(out, 'assistant', json.part, 'text');
      responsesItemSlots(out, json.item);
      if (isObj(json.response)) out.push(...responsesAnswerSlots(json.response));
  }
  return out;
}
