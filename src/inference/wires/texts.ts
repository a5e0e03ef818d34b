/**
 * Walkers over a caller's own body: the texts content filters read, as slots that rewrite the body
 * in place. They take any JSON (a body is only checked by the provider on a lane): whatever is not
 * the expected shape is skipped, never an error.
 */
import type { Body, TextSlot } from '../../routing/call.js';

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
    for (const part of content)
      if (isObj(part) && typeof part.text === 'string') stringSlot(out, role, part, 'text', content);
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
