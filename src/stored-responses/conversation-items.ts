/**
 * What the Conversations API takes and answers, checked and shaped: a conversation's `metadata`,
 * the items a caller adds, the ids Gatehouse gives items that have none, an item as OpenAI lists
 * it. Pure: the service reads and writes the rows.
 */
import { badRequest } from '../lib/errors.js';
import { randomHex } from '../lib/random-pool.js';
import type { Item } from './expansion.js';
import { asListed, type ListedItem } from './input-items.js';

/** OpenAI's limits: items per create or add call; metadata pairs, key and value lengths. */
export const MAX_ITEMS = 20;
const MAX_METADATA = 16;
const MAX_KEY = 64;
const MAX_VALUE = 512;

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** `metadata`: up to 16 string pairs (null or absent: none). */
export function checkMetadata(raw: unknown): Record<string, string> {
  if (raw === undefined || raw === null) return {};
  if (!isObj(raw)) throw badRequest('metadata: must be an object of string values');
  const entries = Object.entries(raw);
  if (entries.length > MAX_METADATA) throw badRequest(`metadata: at most ${MAX_METADATA} keys`);
  for (const [key, value] of entries) {
    if (key.length > MAX_KEY) throw badRequest(`metadata: keys are at most ${MAX_KEY} characters`);
    if (typeof value !== 'string') throw badRequest(`metadata.${key}: must be a string`);
    if (value.length > MAX_VALUE) throw badRequest(`metadata.${key}: at most ${MAX_VALUE} characters`);
  }
  return raw as Record<string, string>;
}

const MAX_ID = 256;
/** An id kept as an item's key: what OpenAI's and Gatehouse's look like, nothing a database minds. */
const usableId = (id: unknown): id is string =>
  typeof id === 'string' && id.length <= MAX_ID && /^[\x21-\x7e]+$/.test(id);

const ROLES = new Set(['user', 'assistant', 'system', 'developer']);

/**
 * `items` as a caller adds them (at most 20): input items as `/responses` takes them. A message
 * needs its role and content; other items are kept as sent (a later `/responses` call says what a
 * provider cannot take). An `item_reference` names nothing here: send the item itself.
 */
export function checkItems(raw: unknown, path = 'items', opts: { required?: boolean } = {}): Item[] {
  if (raw === undefined || raw === null) {
    if (opts.required) throw badRequest(`${path}: required (a list of items)`);
    return [];
  }
  if (!Array.isArray(raw)) throw badRequest(`${path}: must be a list of items`);
  if (raw.length > MAX_ITEMS) throw badRequest(`${path}: at most ${MAX_ITEMS} items a call`);
  return raw.map((item, i) => {
    const p = `${path}[${i}]`;
    if (!isObj(item)) throw badRequest(`${p}: must be an object`);
    if (item.type !== undefined && typeof item.type !== 'string')
      throw badRequest(`${p}.type: must be a string`);
    if (item.type === 'item_reference' || (item.type === undefined && item.role === undefined))
      throw badRequest(`${p}: item references are not taken here; send the item itself`);
    if (item.id !== undefined && item.id !== null && !usableId(item.id))
      throw badRequest(`${p}.id: must be 1–${MAX_ID} printable ASCII characters without spaces`);
    if (item.type === undefined || item.type === 'message') {
      if (typeof item.role !== 'string' || !ROLES.has(item.role))
        throw badRequest(`${p}.role: must be one of ${[...ROLES].join(', ')}`);
      if (typeof item.content !== 'string' && !Array.isArray(item.content))
        throw badRequest(`${p}.content: must be text or a list of content parts`);
    }
    return item;
  });
}

/** Id prefixes as OpenAI gives them, by item type. */
const PREFIX: Record<string, string> = {
  message: 'msg',
  function_call: 'fc',
  function_call_output: 'fco',
  custom_tool_call: 'ctc',
  custom_tool_call_output: 'ctco',
  reasoning: 'rs',
};

/** The item's own id (when usable as one), else a new one for it (`msg_…`, `fc_…`, …). */
export function itemId(item: unknown): string {
  const it = isObj(item) ? item : {};
  if (usableId(it.id)) return it.id;
  const type = typeof it.type === 'string' ? it.type : 'message';
  return `${PREFIX[type] ?? 'item'}_${randomHex(24)}`;
}

/** An item as the Conversations API lists it. */
export type ConversationItem = ListedItem & { type: string };

/** An item as the Conversations API returns it: OpenAI's shape, its id, a message's status. */
export function conversationItem(item: unknown, id: string): ConversationItem {
  const it = asListed(item);
  if (it.type === 'message' && it.status === undefined) it.status = 'completed';
  return { ...it, id, type: typeof it.type === 'string' ? it.type : 'message' };
}

/** A cursor page of conversation items. */
export interface ConversationItemsPage {
  object: 'list';
  data: ConversationItem[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/** The page of `data`, the next one there or not. */
export const itemsPage = (data: ConversationItem[], hasMore: boolean): ConversationItemsPage => ({
  object: 'list',
  data,
  first_id: data[0]?.id ?? null,
  last_id: data[data.length - 1]?.id ?? null,
  has_more: hasMore,
});

export const newConversationId = (): string => `conv_${randomHex(24)}`;
