/**
 * `GET /responses/{id}/input_items` over Gatehouse's own store: the items a stored response was
 * generated from, as OpenAI lists them — a cursor page `{object: 'list', data, first_id, last_id,
 * has_more}` of items that each carry an id. Pure: the service loads the rows.
 */
import { createHash } from 'node:crypto';
import { badRequest } from '../lib/errors.js';
import type { Item } from './expansion.js';

export interface InputItemsQuery {
  /** 1–100, default 20. */
  limit: number;
  /** Default `desc` (OpenAI's): the newest item first. */
  order: 'asc' | 'desc';
  after?: string;
  /** OpenAI's `include[]`: Gatehouse keeps every item whole, so there is nothing more to add. */
  include: string[];
}

/** A listed item: always with an id (the page's cursor). */
export type ListedItem = Item & { id: string };

export interface InputItemsPage {
  object: 'list';
  data: ListedItem[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The query string as sent (`include` or `include[]`, once or repeated) → a checked query. */
export function inputItemsQuery(raw: Record<string, unknown>): InputItemsQuery {
  const limitRaw = raw.limit;
  let limit = 20;
  if (limitRaw !== undefined && limitRaw !== '') {
    limit = Number(limitRaw);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100)
      throw badRequest('limit: must be an integer from 1 to 100');
  }
  const order = raw.order ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw badRequest("order: must be 'asc' or 'desc'");
  const after = raw.after;
  if (after !== undefined && (typeof after !== 'string' || after === ''))
    throw badRequest('after: must be an item id');
  const include = [raw.include, raw['include[]']].flat().filter((v) => v !== undefined);
  if (include.some((v) => typeof v !== 'string')) throw badRequest('include: must be a list of strings');
  return { limit, order, ...(after ? { after } : {}), include: include as string[] };
}

/** One stored item and where it comes from: the response whose row holds it, and its place there. */
export interface HeldItem {
  item: unknown;
  /** The id of the response whose row holds the item (its input or its output). */
  owner: string;
  /** `in` (the owner's input) or `out` (its output), and the index there. */
  place: string;
}

/**
 * An item as listed: with an id (a caller's input message rarely has one; it gets an id derived
 * from where it is stored, the same on every listing, so `after` pages through it), a message
 * with `type` and its content as a list of parts, as OpenAI returns them.
 */
export function listedItem({ item, owner, place }: HeldItem): ListedItem {
  const it = asListed(item);
  if (typeof it.id === 'string' && it.id !== '') return { ...it, id: it.id };
  const hash = createHash('sha256').update(`${owner}:${place}`).digest('hex').slice(0, 40);
  return { ...it, id: `${it.type === 'message' ? 'msg' : 'item'}_${hash}` };
}

/** An item in the shape OpenAI lists it: a message with `type` and its content a list of parts. */
export function asListed(item: unknown): Item {
  const it: Item = isObj(item) ? { ...item } : { type: 'message', role: 'user', content: String(item) };
  if ((it.type === undefined || it.type === 'message') && typeof it.role === 'string') {
    it.type = 'message';
    if (typeof it.content === 'string')
      it.content =
        it.role === 'assistant'
          ? [{ type: 'output_text', text: it.content, annotations: [] }]
          : [{ type: 'input_text', text: it.content }];
  }
  return it;
}

/** One page of `items` (oldest first) for `query`; 400 for an `after` that is not among them. */
export function inputItemsPage(items: ListedItem[], query: InputItemsQuery): InputItemsPage {
  const ordered = query.order === 'asc' ? items : [...items].reverse();
  let start = 0;
  if (query.after !== undefined) {
    const at = ordered.findIndex((i) => i.id === query.after);
    if (at < 0) throw badRequest(`after: no input item with id '${query.after}' in this response`);
    start = at + 1;
  }
  const data = ordered.slice(start, start + query.limit);
  return {
    object: 'list',
    data,
    first_id: data[0]?.id ?? null,
    last_id: data[data.length - 1]?.id ?? null,
    has_more: start + data.length < ordered.length,
  };
}
