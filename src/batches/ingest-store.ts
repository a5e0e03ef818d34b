import type SQLite from 'better-sqlite3';
import type { Db } from '../db/connection.js';

/**
 * SQL of batch ingestion: writing a batch's requests as its body is read, and reading back those
 * that arrived before `endpoint`. On SQLite, requests are written through the better-sqlite3
 * handle behind Kysely (`SqliteItemWriter`); on PostgreSQL with Kysely (`insertItems`).
 */

/**
 * Requests to write: indexes `first`, `first + 1`, … with their custom_ids and JSON texts, as
 * parallel arrays. Not an object per request: objects that a chunk keeps alive until it is written
 * are mostly still alive at the next scavenge, and V8 then pretenures their allocation site — every
 * later one is allocated in the old generation and keeps its (young) JSON text alive until the next
 * mark-compact, so the old generation grows by the body's size (the bimodal RSS of issue 4).
 */
export interface ItemChunk {
  first: number;
  customIds: string[];
  items: string[];
}

/** A request whose custom_id an earlier request of the batch already holds. */
export interface Duplicate {
  idx: number;
  custom_id: string;
  /** The index of the earlier request (null only if it vanished meanwhile). */
  earlier: number | null;
}

/**
 * Inserts a chunk with one multi-row INSERT (PostgreSQL); returns the first request whose custom_id
 * was already taken (by an earlier chunk or an earlier request of this one), or null.
 */
export async function insertItems(db: Db, batchId: string, chunk: ItemChunk): Promise<Duplicate | null> {
  const { first, customIds, items } = chunk;
  if (items.length === 0) return null;
  const rows = await db
    .insertInto('batch_requests')
    .values(
      items.map((item, i) => ({
        batch_id: batchId,
        idx: first + i,
        custom_id: customIds[i] as string,
        item,
      })),
    )
    .onConflict((oc) => oc.columns(['batch_id', 'custom_id']).doNothing())
    .returning('idx')
    .execute();
  if (rows.length === items.length) return null;
  const inserted = new Set(rows.map((r) => r.idx));
  let i = 0;
  while (inserted.has(first + i)) i++;
  const customId = customIds[i] as string;
  return { idx: first + i, custom_id: customId, earlier: await indexOfCustomId(db, batchId, customId) };
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
 * Pages of WAL between automatic checkpoints while batch bodies are being written (SQLite's
 * default, and this connection's otherwise, is 1,000 pages = 4 MB). A checkpoint copies the WAL
 * into the database file and fsyncs both; a 200 MB body writes ~320 MB of WAL, so at 1,000 pages
 * that is ~75 checkpoints and ~150 fsyncs on the event loop, ~20 % of the ingestion's time. At
 * 10,000 pages there are ~8: about 0.4 s less per 200 MB on a 2-core VM (fewer fsyncs, pages
 * written by several chunks copied once), for a WAL file of up to ~40 MB (it keeps that size) and
 * a longer stall per checkpoint (~120–150 ms instead of ~30 ms, every ~30 chunks). What is left in
 * the WAL when the last ingestion ends (≤ 40 MB) is checkpointed by the next commit after it.
 */
const INGEST_WAL_AUTOCHECKPOINT = 10_000;

/** Ingestions writing through each handle, and its wal_autocheckpoint before the first began. */
const ingesting = new WeakMap<SQLite.Database, { count: number; previous: number | null }>();

/**
 * Writes a batch's requests on SQLite: one single-row INSERT prepared once and run per request,
 * in one transaction per chunk that also bumps the batch's `updated_at_ms`. Against Kysely's
 * multi-row INSERT … RETURNING this skips building and compiling a 4,000-parameter statement per
 * chunk (SQLite compiled it afresh each time, and materialized its RETURNING rows): about half the
 * time per row. A duplicate custom_id is an INSERT that changes nothing (ON CONFLICT DO NOTHING):
 * the first one stops the chunk, its earlier index is read in the same transaction, and what
 * precedes it commits (the caller refuses the batch, which deletes it).
 *
 * The transaction runs synchronously while Kysely's connection is held (`write`), so it never
 * interleaves with a Kysely transaction open on the same handle. Between the first `write` and
 * `close`, the handle checkpoints every INGEST_WAL_AUTOCHECKPOINT pages; `close` must be called
 * whatever the outcome.
 */
export class SqliteItemWriter {
  private readonly insert: SQLite.Statement<[string, number, string, string]>;
  private readonly earlier: SQLite.Statement<[string, string], { idx: number }>;
  private readonly touch: SQLite.Statement<[number, string]>;
  private readonly tx: (batchId: string, chunk: ItemChunk, nowMs: number) => Duplicate | null;
  private checkpointing: 'default' | 'ingesting' | 'closed' = 'default';

  constructor(
    private readonly db: Db,
    private readonly sqlite: SQLite.Database,
  ) {
    this.insert = sqlite.prepare(
      'insert into "batch_requests" ("batch_id", "idx", "custom_id", "item") values (?, ?, ?, ?) on conflict ("batch_id", "custom_id") do nothing',
    );
    this.earlier = sqlite.prepare(
      'select "idx" from "batch_requests" where "batch_id" = ? and "custom_id" = ?',
    );
    this.touch = sqlite.prepare('update "batches" set "updated_at_ms" = ? where "id" = ?');
    // Immediate: the file may have other writers (see ImmediateSqliteDialect in db/connection.ts).
    this.tx = sqlite.transaction((batchId: string, chunk: ItemChunk, nowMs: number) => {
      const { first, customIds, items } = chunk;
      const insert = this.insert;
      for (let i = 0; i < items.length; i++) {
        const customId = customIds[i] as string;
        if (insert.run(batchId, first + i, customId, items[i] as string).changes === 0) {
          const row = this.earlier.get(batchId, customId);
          return { idx: first + i, custom_id: customId, earlier: row?.idx ?? null };
        }
      }
      this.touch.run(nowMs, batchId);
      return null;
    }).immediate;
  }

  /** Inserts the chunk in order; returns the first duplicate (nothing after it is written), or null. */
  async write(batchId: string, chunk: ItemChunk, nowMs: number): Promise<Duplicate | null> {
    if (chunk.items.length === 0) return null;
    if (this.checkpointing === 'default') this.beginIngesting();
    return this.db.connection().execute(async () => this.tx(batchId, chunk, nowMs));
  }

  /** Ends this ingestion's hold on the checkpoint interval (restored when no other one is running). */
  close(): void {
    if (this.checkpointing === 'ingesting') {
      const state = ingesting.get(this.sqlite);
      if (state && --state.count === 0) {
        ingesting.delete(this.sqlite);
        if (state.previous !== null) this.sqlite.pragma(`wal_autocheckpoint = ${state.previous}`);
      }
    }
    this.checkpointing = 'closed';
  }

  private beginIngesting(): void {
    this.checkpointing = 'ingesting';
    const state = ingesting.get(this.sqlite);
    if (state) {
      state.count++;
      return;
    }
    // Left alone when it is off (≤ 0) or already as large.
    const current = Number(this.sqlite.pragma('wal_autocheckpoint', { simple: true }));
    const raise = current > 0 && current < INGEST_WAL_AUTOCHECKPOINT;
    ingesting.set(this.sqlite, { count: 1, previous: raise ? current : null });
    if (raise) this.sqlite.pragma(`wal_autocheckpoint = ${INGEST_WAL_AUTOCHECKPOINT}`);
  }
}
