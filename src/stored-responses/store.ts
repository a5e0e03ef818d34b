import { CHUNK, chunks } from '../db/chunks.js';
import type { Db } from '../db/connection.js';
import type { ConversationItemsTable, ConversationsTable, StoredResponsesTable } from '../db/schema.js';

/**
 * SQL of stored responses and their output items, and of conversations and their items. Expired
 * rows (`expires_at <= now`) are never read.
 */

export type StoredResponseRow = StoredResponsesTable;

export interface Scope {
  organizationId: string;
  workspaceId: string;
}

/** The rows of `query` over the distinct `ids`, CHUNK ids a query. */
async function byIds<T>(ids: readonly string[], query: (part: string[]) => Promise<T[]>): Promise<T[]> {
  const rows: T[] = [];
  for (const part of chunks([...new Set(ids)])) rows.push(...(await query(part)));
  return rows;
}

/**
 * Writes a response and its output items in one transaction. An item id already stored (only an
 * upstream that repeats ids could cause it) keeps its first owner: an item is never moved to
 * another response, let alone another workspace.
 */
export async function insertResponse(
  db: Db,
  row: StoredResponseRow,
  items: { id: string; item_json: string }[],
): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await tx.insertInto('stored_responses').values(row).execute();
    for (const part of chunks(items)) {
      await tx
        .insertInto('stored_response_items')
        .values(part.map((i) => ({ ...i, response_id: row.id })))
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
    }
  });
}

/** The scope's unexpired responses among `ids` (in no particular order). */
export async function findResponses(
  db: Db,
  scope: Scope,
  ids: readonly string[],
  now: number,
): Promise<StoredResponseRow[]> {
  return byIds(ids, (part) =>
    db
      .selectFrom('stored_responses')
      .selectAll()
      .where('id', 'in', part)
      .where('workspace_id', '=', scope.workspaceId)
      .where('organization_id', '=', scope.organizationId)
      .where('expires_at', '>', now)
      .execute(),
  );
}

export interface StoredItemRow {
  id: string;
  item_json: string;
  provider: string;
  upstream_stored: number;
}

/** The scope's unexpired output items among `ids`, with what served the response they belong to. */
export async function findItems(
  db: Db,
  scope: Scope,
  ids: readonly string[],
  now: number,
): Promise<StoredItemRow[]> {
  return byIds(ids, (part) =>
    db
      .selectFrom('stored_response_items as i')
      .innerJoin('stored_responses as r', 'r.id', 'i.response_id')
      .select(['i.id', 'i.item_json', 'r.provider', 'r.upstream_stored'])
      .where('i.id', 'in', part)
      .where('r.workspace_id', '=', scope.workspaceId)
      .where('r.organization_id', '=', scope.organizationId)
      .where('r.expires_at', '>', now)
      .execute(),
  );
}

/** Deletes one of the scope's unexpired responses (its items go with it); false if there was none. */
export async function deleteResponse(db: Db, scope: Scope, id: string, now: number): Promise<boolean> {
  const result = await db
    .deleteFrom('stored_responses')
    .where('id', '=', id)
    .where('workspace_id', '=', scope.workspaceId)
    .where('organization_id', '=', scope.organizationId)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Deletes up to `limit` expired responses (and their items); returns how many. */
export async function purgeExpired(db: Db, now: number, limit: number): Promise<number> {
  const result = await db
    .deleteFrom('stored_responses')
    .where(
      'id',
      'in',
      db.selectFrom('stored_responses').select('id').where('expires_at', '<=', now).limit(limit),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

// ── Conversations ─────────────────────────────────────────────────────────────────────────────

export type ConversationRow = ConversationsTable;
export type ConversationItemRow = ConversationItemsTable;
/** An item to append: its id, the item as JSON, whether its provider stores it too. */
export type NewConversationItem = Pick<ConversationItemRow, 'id' | 'item_json' | 'upstream_stored'>;

/** The scope's unexpired conversation `id`, if any. */
export async function findConversation(
  db: Db,
  scope: Scope,
  id: string,
  now: number,
): Promise<ConversationRow | undefined> {
  return db
    .selectFrom('conversations')
    .selectAll()
    .where('id', '=', id)
    .where('workspace_id', '=', scope.workspaceId)
    .where('organization_id', '=', scope.organizationId)
    .where('expires_at', '>', now)
    .executeTakeFirst();
}

/** Writes a conversation and its first items in one transaction. */
export async function insertConversation(
  db: Db,
  row: ConversationRow,
  items: readonly NewConversationItem[],
): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await tx.insertInto('conversations').values(row).execute();
    await insertItems(tx, row.id, 0, items, row.created_at);
  });
}

async function insertItems(
  tx: Db,
  conversationId: string,
  from: number,
  items: readonly NewConversationItem[],
  now: number,
): Promise<void> {
  for (const [c, part] of chunks([...items]).entries()) {
    await tx
      .insertInto('conversation_items')
      .values(
        part.map((item, i) => ({
          ...item,
          conversation_id: conversationId,
          position: from + c * CHUNK + i,
          created_at: now,
        })),
      )
      // An id already in the conversation keeps its place: the item is not added twice.
      .onConflict((oc) => oc.columns(['conversation_id', 'id']).doNothing())
      .execute();
  }
}

/**
 * Appends items to the end of one of the scope's unexpired conversations and keeps it until
 * `expiresAt`; false if there is none. The conversation's row is written first: on PostgreSQL that
 * locks it, so concurrent appends to one conversation take their places one after the other
 * (SQLite runs one write transaction at a time).
 */
export async function appendConversationItems(
  db: Db,
  scope: Scope,
  conversationId: string,
  items: readonly NewConversationItem[],
  now: number,
  expiresAt: number,
): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const touched = await tx
      .updateTable('conversations')
      .set({ expires_at: expiresAt })
      .where('id', '=', conversationId)
      .where('workspace_id', '=', scope.workspaceId)
      .where('organization_id', '=', scope.organizationId)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    if (Number(touched.numUpdatedRows) === 0) return false;
    const last = await tx
      .selectFrom('conversation_items')
      .select((eb) => eb.fn.max('position').as('position'))
      .where('conversation_id', '=', conversationId)
      .executeTakeFirst();
    const from = last?.position === null || last?.position === undefined ? 0 : Number(last.position) + 1;
    await insertItems(tx, conversationId, from, items, now);
    return true;
  });
}

/** Sets a scope's unexpired conversation's metadata; false if there is none. */
export async function updateConversationMetadata(
  db: Db,
  scope: Scope,
  id: string,
  metadataJson: string,
  now: number,
): Promise<boolean> {
  const result = await db
    .updateTable('conversations')
    .set({ metadata_json: metadataJson })
    .where('id', '=', id)
    .where('workspace_id', '=', scope.workspaceId)
    .where('organization_id', '=', scope.organizationId)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Deletes one of the scope's unexpired conversations (its items go with it); false if none. */
export async function deleteConversation(db: Db, scope: Scope, id: string, now: number): Promise<boolean> {
  const result = await db
    .deleteFrom('conversations')
    .where('id', '=', id)
    .where('workspace_id', '=', scope.workspaceId)
    .where('organization_id', '=', scope.organizationId)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Every item of a conversation, oldest first (its scope checked by the caller). */
export async function conversationItems(db: Db, conversationId: string): Promise<ConversationItemRow[]> {
  return db
    .selectFrom('conversation_items')
    .selectAll()
    .where('conversation_id', '=', conversationId)
    .orderBy('position', 'asc')
    .execute();
}

/** One item of a conversation (its scope checked by the caller). */
export async function findConversationItem(
  db: Db,
  conversationId: string,
  itemId: string,
): Promise<ConversationItemRow | undefined> {
  return db
    .selectFrom('conversation_items')
    .selectAll()
    .where('conversation_id', '=', conversationId)
    .where('id', '=', itemId)
    .executeTakeFirst();
}

/**
 * Up to `limit` items of a conversation in `order` of position, after the position `after` when
 * given (its scope checked by the caller).
 */
export async function conversationItemsPage(
  db: Db,
  conversationId: string,
  q: { order: 'asc' | 'desc'; after?: number; limit: number },
): Promise<ConversationItemRow[]> {
  let query = db.selectFrom('conversation_items').selectAll().where('conversation_id', '=', conversationId);
  if (q.after !== undefined) query = query.where('position', q.order === 'asc' ? '>' : '<', q.after);
  return query.orderBy('position', q.order).limit(q.limit).execute();
}

/** Deletes one item of a conversation (its scope checked by the caller); false if there was none. */
export async function deleteConversationItem(db: Db, conversationId: string, itemId: string) {
  const result = await db
    .deleteFrom('conversation_items')
    .where('conversation_id', '=', conversationId)
    .where('id', '=', itemId)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Deletes up to `limit` expired conversations (and their items); returns how many. */
export async function purgeExpiredConversations(db: Db, now: number, limit: number): Promise<number> {
  const result = await db
    .deleteFrom('conversations')
    .where(
      'id',
      'in',
      db.selectFrom('conversations').select('id').where('expires_at', '<=', now).limit(limit),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
