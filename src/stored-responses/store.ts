import type { Db } from '../db/connection.js';
import type { StoredResponsesTable } from '../db/schema.js';

/** SQL of stored responses and their output items. Expired rows (`expires_at <= now`) are never read. */

export type StoredResponseRow = StoredResponsesTable;

export interface Scope {
  organizationId: string;
  workspaceId: string;
}

/** Ids per `in (…)` list: far below either database's limit on bound parameters. */
const CHUNK = 500;

const chunks = <T>(list: readonly T[]): T[][] =>
  Array.from({ length: Math.ceil(list.length / CHUNK) }, (_, i) => list.slice(i * CHUNK, (i + 1) * CHUNK));

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
