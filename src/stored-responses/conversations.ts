/**
 * Conversations: OpenAI's Conversations API over Gatehouse's own store, whichever provider serves
 * each turn. A conversation is a workspace's ordered list of items; `POST /responses` with
 * `conversation` sends them before its input (`history`) and adds the turn's input and output
 * after it (`append`), and the `/conversations` routes create, read, page, add to and delete them.
 */
import type { Db } from '../db/connection.js';
import { ApiError, badRequest } from '../lib/errors.js';
import {
  type ConversationItem,
  type ConversationItemsPage,
  checkItems,
  checkMetadata,
  conversationItem,
  itemId,
  itemsPage,
  newConversationId,
} from './conversation-items.js';
import { type Item, sendable } from './expansion.js';
import type { InputItemsQuery } from './input-items.js';
import {
  appendConversationItems,
  type ConversationRow,
  conversationItems,
  conversationItemsPage,
  deleteConversation,
  deleteConversationItem,
  findConversation,
  findConversationItem,
  insertConversation,
  type NewConversationItem,
  purgeExpiredConversations,
  type Scope,
  updateConversationMetadata,
} from './store.js';

export interface Conversation {
  id: string;
  object: 'conversation';
  created_at: number;
  metadata: Record<string, string>;
}

export interface ConversationsDeps {
  db: Db;
  /** How long a conversation is kept after its last write, ms (the stored responses'); 0: none. */
  retentionMs: number;
  now?: () => number;
}

const PURGE_BATCH = 500;

const notFound = (id: string) => new ApiError(404, `No conversation with id '${id}' in this workspace`);
const itemNotFound = (id: string, conversationId: string) =>
  new ApiError(404, `No item with id '${id}' in conversation '${conversationId}'`);

const conversationOf = (row: ConversationRow): Conversation => ({
  id: row.id,
  object: 'conversation',
  created_at: Math.floor(row.created_at / 1000),
  metadata: JSON.parse(row.metadata_json),
});

/** Items to write: each with its own id or a new one, as it was sent (no id added to it). */
const newItems = (items: readonly unknown[], upstreamStored = false) =>
  items.map(
    (item): NewConversationItem => ({
      id: itemId(item),
      item_json: JSON.stringify(item),
      upstream_stored: upstreamStored ? 1 : 0,
    }),
  );

export class ConversationsService {
  private readonly now: () => number;

  constructor(private readonly deps: ConversationsDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** `POST /conversations`: a new conversation, with up to 20 items and up to 16 metadata pairs. */
  async create(scope: Scope, body: unknown): Promise<Conversation> {
    const b = (body ?? {}) as Record<string, unknown>;
    if (typeof b !== 'object' || Array.isArray(b)) throw badRequest('body: must be a JSON object');
    const metadata = checkMetadata(b.metadata);
    const items = checkItems(b.items);
    if (this.deps.retentionMs <= 0)
      throw badRequest('conversations are not kept on this gateway (stored responses are off)');
    const now = this.now();
    const row: ConversationRow = {
      id: newConversationId(),
      organization_id: scope.organizationId,
      workspace_id: scope.workspaceId,
      metadata_json: JSON.stringify(metadata),
      created_at: now,
      expires_at: now + this.deps.retentionMs,
    };
    await insertConversation(this.deps.db, row, newItems(items));
    return conversationOf(row);
  }

  /** `GET /conversations/{id}`. */
  async get(scope: Scope, id: string): Promise<Conversation> {
    return conversationOf(await this.row(scope, id));
  }

  /** `POST /conversations/{id}`: its metadata replaced. */
  async update(scope: Scope, id: string, body: unknown): Promise<Conversation> {
    const b = body as Record<string, unknown> | null;
    if (typeof b !== 'object' || b === null || Array.isArray(b) || !('metadata' in b))
      throw badRequest('metadata: required (an object of string values, or null)');
    const metadata = checkMetadata(b.metadata);
    if (!(await updateConversationMetadata(this.deps.db, scope, id, JSON.stringify(metadata), this.now())))
      throw notFound(id);
    return this.get(scope, id);
  }

  /** `DELETE /conversations/{id}`: it and its items, at once. */
  async delete(scope: Scope, id: string) {
    if (!(await deleteConversation(this.deps.db, scope, id, this.now()))) throw notFound(id);
    return { id, object: 'conversation.deleted' as const, deleted: true as const };
  }

  /** `GET /conversations/{id}/items`: a cursor page, newest first unless `order=asc`. */
  async items(scope: Scope, id: string, query: InputItemsQuery): Promise<ConversationItemsPage> {
    await this.row(scope, id);
    let after: number | undefined;
    if (query.after !== undefined) {
      const at = await findConversationItem(this.deps.db, id, query.after);
      if (!at) throw badRequest(`after: no item with id '${query.after}' in this conversation`);
      after = at.position;
    }
    const rows = await conversationItemsPage(this.deps.db, id, {
      order: query.order,
      ...(after !== undefined ? { after } : {}),
      limit: query.limit + 1,
    });
    const data = rows.slice(0, query.limit).map((r) => conversationItem(JSON.parse(r.item_json), r.id));
    return itemsPage(data, rows.length > query.limit);
  }

  /** `POST /conversations/{id}/items`: up to 20 items added at its end, returned as listed. */
  async addItems(scope: Scope, id: string, body: unknown): Promise<ConversationItemsPage> {
    const items = checkItems((body as Record<string, unknown> | null)?.items, 'items', { required: true });
    const rows = newItems(items);
    const now = this.now();
    if (!(await appendConversationItems(this.deps.db, scope, id, rows, now, now + this.deps.retentionMs)))
      throw notFound(id);
    return itemsPage(
      rows.map((r, i) => conversationItem(items[i], r.id)),
      false,
    );
  }

  /** `GET /conversations/{id}/items/{item_id}`. */
  async item(scope: Scope, id: string, itemId: string): Promise<ConversationItem> {
    await this.row(scope, id);
    const row = await findConversationItem(this.deps.db, id, itemId);
    if (!row) throw itemNotFound(itemId, id);
    return conversationItem(JSON.parse(row.item_json), row.id);
  }

  /** `DELETE /conversations/{id}/items/{item_id}`: answers the conversation, as OpenAI does. */
  async deleteItem(scope: Scope, id: string, itemId: string): Promise<Conversation> {
    const row = await this.row(scope, id);
    if (!(await deleteConversationItem(this.deps.db, id, itemId))) throw itemNotFound(itemId, id);
    return conversationOf(row);
  }

  /**
   * The items a `/responses` turn in conversation `id` is sent before its input, oldest first: all
   * of them but reasoning items no provider takes back (see `sendable`). 404 naming the field for
   * a conversation the workspace does not hold.
   */
  async history(scope: Scope, id: string): Promise<Item[]> {
    const now = this.now();
    if (!(await findConversation(this.deps.db, scope, id, now)))
      throw new ApiError(404, `conversation: no conversation with id '${id}' in this workspace`);
    return (await conversationItems(this.deps.db, id)).flatMap((r) => {
      const item = JSON.parse(r.item_json) as Item;
      return sendable(item, r.upstream_stored) ? [item] : [];
    });
  }

  /**
   * Adds a turn's input and output items to conversation `id` (the provider's own output items
   * marked `upstreamStored`); false when the conversation is gone (deleted since, or expired).
   */
  async append(
    scope: Scope,
    id: string,
    input: readonly unknown[],
    output: readonly unknown[],
    upstreamStored: boolean,
  ): Promise<boolean> {
    const now = this.now();
    const rows = [...newItems(input), ...newItems(output, upstreamStored)];
    return appendConversationItems(this.deps.db, scope, id, rows, now, now + this.deps.retentionMs);
  }

  /** Deletes every expired conversation (in batches); returns how many. */
  async purgeExpired(): Promise<number> {
    const now = this.now();
    let total = 0;
    for (;;) {
      const n = await purgeExpiredConversations(this.deps.db, now, PURGE_BATCH);
      total += n;
      if (n < PURGE_BATCH) return total;
    }
  }

  private async row(scope: Scope, id: string): Promise<ConversationRow> {
    const row = await findConversation(this.deps.db, scope, id, this.now());
    if (!row) throw notFound(id);
    return row;
  }
}
