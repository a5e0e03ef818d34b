import type SQLite from 'better-sqlite3';
import type { Db } from '../db/connection.js';

/**
 * SQL of batch ingestion: writing a batch's requests as its body is read, and reading back those
 * that arrived before `endpoint`. On SQLite, requests are written through the better-sqlite3
 * handle behind Kysely (`SqliteItemWriter`); on PostgreSQL with Kysely (`insertItems`).
 */

export interface NewItem {
  idx: number;
  custom_id: string;
  item: string;
}

/** A request whose custom_id an earlier request of the batch already holds. */
export interface Duplicate {
  idx: number;
  custom_id: string;
  /** The index of the earlier request (null only if it vanished meanwhile). */
  earlier: number | null;
}

/**
 * Inserts items with one multi-row INSERT (PostgreSQL); returns the first item whose custom_id was
 * already taken (by an earlier chunk or an earlier item of this one), or null.
 */
export async function insertItems(db: Db, batchId: string, items: NewItem[]): Promise<Duplicate | null> {
  if (items.length === 0) return null;
  const rows = await db
    .insertInto('batch_requests')
    .values(items.map((i) => ({ batch_id: batchId, idx: i.idx, custom_id: i.custom_id, item: i.item })))
    .onConflict((oc) => oc.columns(['batch_id', 'custom_id']).doNothing())
    .returning('idx')
    .execute();
  if (rows.length === items.length) return null;
  const inserted = new Set(rows.map((r) => r.idx));
  const dup = items.find((i) => !inserted.has(i.idx)) as NewItem;
  return {
    idx: dup.idx,
    custom_id: dup.custom_id,
    earlier: await indexOfCustomId(db, batchId, dup.custom_id),
  };
}

/** The index of the earlier request that holds `customId`. */
export async function indexOfCustomId(db: Db, batchId: string, customId: string): Promise<number | null> {
  const row = await db
    .selectFrom('batch_requests')
    .select('idx')
    .where('batch_id', '=', batchId)
    .where('custom_id', '=', customId)
    .executeTakeFirst();
  return row?.idx ?? null;
}

/** Marks the batch as still being read (an ingestion cut off by a crash is swept by its age). */
export async function touchBatch(db: Db, id: string, nowMs: number): Promise<void> {
  await db.updateTable('batches').set({ updated_at_ms: nowMs }).where('id', '=', id).execute();
}

/** Stored items in index order after `afterIdx` (validation of items read before `endpoint`). */
export async function itemsAfter(db: Db, batchId: string, afterIdx: number, limit: number) {
  return db
    .selectFrom('batch_requests')
    .select(['idx', 'custom_id', 'item'])
    .where('batch_id', '=', batchId)
    .where('idx', '>', afterIdx)
    .orderBy('idx')
    .limit(limit)
    .execute();
}

/**
 * Writes a batch's requests on SQLite: one single-row INSERT prepared once and run per request,
 * in one transaction per chunk that also bumps the batch's `updated_at_ms`. Against Kysely's
 * multi-row INSERT … RETURNING this skips building and compiling a 4,000-parameter statement per
 * chunk (SQLite compiled it afresh each time, and materialized its RETURNING rows): about half the
 * time per row. A duplicate custom_id is an insert that changes nothing (ON CONFLICT DO NOTHING);
 * the first one stops the chunk, and the earlier index is read in the same transaction.
 *
 * The transaction runs synchronously while Kysely's connection is held (`write`), so it never
 * interleaves with a Kysely transaction open on the same handle.
 */
export class SqliteItemWriter {
  private readonly insert: SQLite.Statement<[string, number, string, string]>;
  private readonly earlier: SQLite.Statement<[string, string], { idx: number }>;
  private readonly touch: SQLite.Statement<[number, string]>;
  private readonly tx: (batchId: string, items: readonly NewItem[], nowMs: number) => Duplicate | null;

  constructor(
    private readonly db: Db,
    sqlite: SQLite.Database,
  ) {
    this.insert = sqlite.prepare(
      'insert into "batch_requests" ("batch_id", "idx", "custom_id", "item") values (?, ?, ?, ?) on conflict ("batch_id", "custom_id") do nothing',
    );
    this.earlier = sqlite.prepare(
      'select "idx" from "batch_requests" where "batch_id" = ? and "custom_id" = ?',
    );
    this.touch = sqlite.prepare('update "batches" set "updated_at_ms" = ? where "id" = ?');
    this.tx = sqlite.transaction((batchId: string, items: readonly NewItem[], nowMs: number) => {
      const insert = this.insert;
      for (let i = 0; i < items.length; i++) {
        const it = items[i] as NewItem;
        if (insert.run(batchId, it.idx, it.custom_id, it.item).changes === 0) {
          const row = this.earlier.get(batchId, it.custom_id);
          return { idx: it.idx, custom_id: it.custom_id, earlier: row?.idx ?? null };
        }
      }
      this.touch.run(nowMs, batchId);
      return null;
    });
  }

  /** Inserts `items` in order; returns the first duplicate (nothing after it is written), or null. */
  async write(batchId: string, items: readonly NewItem[], nowMs: number): Promise<Duplicate | null> {
    if (items.length === 0) return null;
    return this.db.connection().execute(async () => this.tx(batchId, items, nowMs));
  }
}
