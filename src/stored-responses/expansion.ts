/**
 * Expansion of a Responses request body that names stored state — `previous_response_id`,
 * `conversation` and `item_reference` input items — into a plain body that carries the whole
 * conversation, so that it translates to any provider. Pure: the service loads what the body names and hands it in.
 */
import { isGatehouseReasoningState } from '../formats/reasoning-state.js';
import { ApiError, badRequest } from '../lib/errors.js';

export type Obj = Record<string, unknown>;
/** One Responses item (input or output) as JSON. */
export type Item = Obj;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const given = (v: unknown) => v !== undefined && v !== null;

/** What a body refers to in the store. */
export interface References {
  previousResponseId: string | null;
  /** The conversation whose items come before the input (`conversation`). */
  conversationId: string | null;
  /** Ids of the `item_reference` items of `input`, in order (repeats kept). */
  itemIds: string[];
}

/**
 * An `item_reference` input item: `{type: 'item_reference', id}`, or (as OpenAI accepts) an item
 * with only an id — no type and no role.
 */
function referenceId(item: unknown, path: string): string | null {
  if (!isObj(item)) return null;
  const bare = item.type === undefined && item.role === undefined && item.id !== undefined;
  if (item.type !== 'item_reference' && !bare) return null;
  if (typeof item.id !== 'string' || item.id === '')
    throw badRequest(`${path}.id: must be a non-empty string`);
  return item.id;
}

/** The conversation a `/responses` body names (`"conv_…"` or `{id}`), or null. */
export function conversationOf(body: unknown): string | null {
  if (!isObj(body) || !given(body.conversation)) return null;
  const c = body.conversation;
  const id = isObj(c) ? c.id : c;
  if (typeof id !== 'string' || id === '')
    throw badRequest('conversation: must be a conversation id or an object with its id');
  return id;
}

/**
 * The stored state a body names; 400 for a malformed reference. A body that is not an object, or
 * whose input is not a list, names none (the request parser then says what is wrong with it).
 */
export function referencesOf(body: unknown): References {
  if (!isObj(body)) return { previousResponseId: null, conversationId: null, itemIds: [] };
  let previousResponseId: string | null = null;
  if (given(body.previous_response_id)) {
    if (typeof body.previous_response_id !== 'string' || body.previous_response_id === '')
      throw badRequest('previous_response_id: must be a non-empty string');
    previousResponseId = body.previous_response_id;
  }
  const conversationId = conversationOf(body);
  // As at OpenAI: a turn continues one or the other.
  if (conversationId !== null && previousResponseId !== null)
    throw badRequest('conversation: cannot be used together with previous_response_id');
  const itemIds: string[] = [];
  if (Array.isArray(body.input)) {
    for (const [i, item] of body.input.entries()) {
      const id = referenceId(item, `input[${i}]`);
      if (id !== null) itemIds.push(id);
    }
  }
  return { previousResponseId, conversationId, itemIds };
}

/** Whether the body asks to store its response: `store` not false (OpenAI's default is true). */
export function wantsStore(body: unknown): boolean {
  if (!isObj(body) || !given(body.store)) return true;
  if (typeof body.store !== 'boolean') throw badRequest('store: must be a boolean');
  return body.store;
}

/** The body's `input` as a list of items (a string is one user message); anything else as it is. */
export function inputList(input: unknown): unknown[] | null {
  if (typeof input === 'string') return [{ type: 'message', role: 'user', content: input }];
  return Array.isArray(input) ? input : null;
}

export interface Expansion {
  /** The plain body: no `previous_response_id`, no item references (unless kept, see below). */
  body: Obj;
  /** This turn's own input items, references resolved: what is stored for this turn. */
  input: unknown[];
}

/**
 * `history` (the earlier turns' input and output items, oldest first) followed by this turn's
 * input with each item reference replaced by the item `items` holds for its id.
 *
 * An id `items` lacks is a 404 naming it.
 */
export function expandBody(
  body: Obj,
  history: unknown[],
  items: ReadonlyMap<string, Item | null>,
): Expansion {
  const own = inputList(body.input);
  const input =
    own?.flatMap((item, i) => {
      const id = referenceId(item, `input[${i}]`);
      if (id === null) return [item];
      const found = items.get(id);
      // null: an item held but not to be sent again (see `sendable`).
      if (found === null) return [];
      if (found) return [found];
      throw new ApiError(404, `input[${i}]: no stored item with id '${id}' in this workspace`);
    }) ?? [];
  // A conversation is Gatehouse's: its items are in `history`, its id goes to no provider.
  const { previous_response_id: _previous, conversation: _conversation, ...rest } = body;
  const out: Obj = rest;
  // A body whose input is neither text nor a list is left for the parser to refuse.
  out.input = own ? [...history, ...input] : body.input;
  return { body: out, input };
}

/**
 * Reasoning items of a translated answer go back when they carry the provider's reasoning state
 * (Gatehouse's `encrypted_content`: the translation restores it; an OpenAI lane leaves them out of
 * its request). Those without it (stored before it was carried) are summaries only, which no
 * provider takes back, and OpenAI would look their ids up in its own store and refuse the call:
 * they are left out of an expanded conversation. A provider's own reasoning items (stored upstream
 * too) go back as they came.
 */
export const sendable = (item: unknown, upstreamStored: number): boolean => {
  const i = item as { type?: unknown; encrypted_content?: unknown } | null;
  return upstreamStored === 1 || i?.type !== 'reasoning' || isGatehouseReasoningState(i.encrypted_content);
};
