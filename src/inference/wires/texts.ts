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

/** Tool descriptions (`tools[].description`, or `tools[].function.description`) as system text. */
export function toolDescriptionSlots(out: TextSlot[], body: Body): void {
  if (!Array.isArray(body.tools)) return;
  for (const t of body.tools) {
    if (!isObj(t)) continue;
    stringSlot(out, 'system', t, 'description');
    if (isObj(t.function)) stringSlot(out, 'system', t.function, 'description');
  }
}
