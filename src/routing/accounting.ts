import { randomUUID } from 'node:crypto';
import type SQLite from 'better-sqlite3';
import {
  addToHours,
  SQLITE_HOURS_UPSERT,
  sqliteHoursUpsert,
  sqliteHoursValues,
} from '../activity/hours.store.js';
import type { Db } from '../db/connection.js';
import type { GenerationsTable, UsageEventsTable } from '../db/schema.js';
import type { Log } from '../lib/log.js';
import type { UsageJournal } from './usage-journal.js';

export type GenerationRow = GenerationsTable;

type Listener = (row: GenerationRow) => void;

const GENERATION_COLUMNS = [
  'id',
  'organization_id',
  'workspace_id',
  'key_hash',
  'user_id',
  'endpoint',
  'requested_model',
  'model',
  'provider',
  'upstream_model',
  'status',
  'http_status',
  'streamed',
  'finish_reason',
  'prompt_tokens',
  'completion_tokens',
  'reasoning_tokens',
  'cached_tokens',
  'cache_write_tokens',
  'usage_estimated',
  'pricing_unknown',
  'cost_usd',
  'prompt_cost_usd',
  'completion_cost_usd',
  'is_byok',
  'attempts',
  'latency_ms',
  'generation_time_ms',
  'error_message',
  'created_at',
  'passthrough',
  'upstream_id',
  'web_search_requests',
  'provider_responses',
  'safeguards',
  'gateway_metadata',
  'preset_id',
] as const satisfies readonly (keyof GenerationsTable)[];

/** The columns a generations list reads: all but the detail's JSON (see generationDetailView). */
export const LIST_COLUMNS = GENERATION_COLUMNS.filter(
  (c): c is Exclude<(typeof GENERATION_COLUMNS)[number], 'safeguards' | 'gateway_metadata'> =>
    c !== 'safeguards' && c !== 'gateway_metadata',
);

const USAGE_COLUMNS = [
  'id',
  'organization_id',
  'workspace_id',
  'key_hash',
  'user_id',
  'model',
  'provider',
  'cost_usd',
  'is_byok',
  'created_at',
] as const satisfies readonly (keyof UsageEventsTable)[];

const insertSql = (table: string, columns: readonly string[]) =>
  `insert into "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) values (${columns.map(() => '?').join(', ')})`;

/** The values of `row` in `columns` order, for a positional statement (a missing one is null). */
const valuesOf = (row: object, columns: readonly string[]) =>
  columns.map((c) => (row as Record<string, unknown>)[c] ?? null);

/**
 * A time-ordered UUID (the version 7 layout: 48-bit millisecond timestamp, then random bits) for
 * usage_events rows. Their primary-key index then grows at its end: a random (version 4) id puts
 * every inserted row on a different page of a large index, which SQLite has to read and write back
 * (one WAL frame per row) on each group commit.
 */
export function timeOrderedId(ms: number = Date.now()): string {
  const t = ms.toString(16).padStart(12, '0');
  const r = randomUUID();
  return `${t.slice(0, 8)}-${t.slice(8, 12)}-7${r.slice(15, 18)}-${r.slice(19)}`;
}

/**
 * Records generations off the response's critical path: `record()` only queues (and tells the
 * in-memory spend counters at once); a timer writes the queue in group commits — one transaction
 * per batch, the generation rows and their usage events together. A failed write keeps the rows
 * queued for the next attempt. `close()` writes everything before shutdown completes.
 */
export class Accountant {
  private queue: GenerationRow[] = [];
  /** With a writer thread: each queued row's JSON (its journal line), in queue order. */
  private lines: string[] = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  private readonly listeners: Listener[] = [];
  private closed = false;

  /** The SQLite insert statements, prepared once, and the transaction that runs them. */
  private sqliteInsert: ((rows: GenerationRow[], usage: UsageEventsTable[]) => void) | null = null;

  /**
   * `sqlite`: the better-sqlite3 handle behind `db`, when it is SQLite. Batches are then written
   * with two single-row INSERT statements prepared once and run in one transaction, instead of a
   * multi-row INSERT built by Kysely and compiled by SQLite afresh for every batch (and which needs
   * a temporary statement-journal file each time) — the same rows for about 40 % less time per row.
   */
  constructor(
    private readonly db: Db,
    private readonly log: Pick<Log, 'error' | 'warn'>,
    private readonly opts: { intervalMs: number; maxBatch: number } = { intervalMs: 25, maxBatch: 500 },
    private readonly sqlite: SQLite.Database | null = null,
    /** Rows are journaled on local disk until written, so a killed process loses none. */
    private readonly journal: UsageJournal | null = null,
    /** SQLite: group commits on a thread of their own (generation-writer.ts), off the event loop. */
    private readonly writer: GenerationWriter | null = null,
  ) {}

  /**
   * Writes the rows journaled by processes that died before writing them (at start-up, before
   * traffic); rows already in the database are skipped. Returns how many were written.
   */
  async replayJournal(): Promise<number> {
    let written = 0;
    for (const { path, rows } of this.journal?.leftovers() ?? []) {
      for (let i = 0; i < rows.length; i += this.opts.maxBatch)
        written += await this.insertMissing(rows.slice(i, i + this.opts.maxBatch));
      this.journal?.discard(path);
    }
    return written;
  }

  /** Called synchronously for every recorded generation (spend counters, metrics). */
  onRecord(listener: Listener): void {
    this.listeners.push(listener);
  }

  /** Queues `row`; the promise resolves once it is journaled (await it before answering the call). */
  record(row: GenerationRow): Promise<void> {
    // One serialization of the row for both its journal line and the writer thread.
    const line = this.writer || this.journal ? JSON.stringify(row) : '';
    const journaled = this.journal?.append(row, line) ?? Promise.resolve();
    this.queue.push(row);
    if (this.writer) this.lines.push(line);
    this.announce(row);
    if (this.queue.length >= this.opts.maxBatch) this.flushInBackground();
    else if (!this.timer && !this.closed) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.flushInBackground();
      }, this.opts.intervalMs);
    }
    return journaled;
  }

  /**
   * A flush nobody awaits: its failure (the database away) is logged and retried by `flush`
   * itself; an unhandled rejection here would end the process and lose the queue.
   */
  private flushInBackground(): void {
    this.flush().catch(() => {});
  }

  /**
   * Tells the listeners about a generation written by someone else (the batch worker writes its
   * rows in the transaction that records the batch result, then announces them).
   */
  announce(row: GenerationRow): void {
    for (const l of this.listeners) {
      try {
        l(row);
      } catch (err) {
        this.log.error({ err }, 'generation listener failed');
      }
    }
  }

  /** A generation still waiting to be written (so GET /generation sees it at once). */
  pending(id: string): GenerationRow | undefined {
    return this.queue.find((r) => r.id === id || r.upstream_id === id);
  }

  /** Writes everything queued so far; resolves when it is durable. */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.queue.length === 0) return;
    const batch = this.queue.slice(0, this.opts.maxBatch);
    this.journal?.rotate();
    this.flushing = this.write(batch, this.lines.slice(0, batch.length))
      .then(() => {
        this.queue = this.queue.slice(batch.length);
        if (this.writer) this.lines = this.lines.slice(batch.length);
        this.journal?.written(batch);
      })
      .catch((err) => {
        this.log.error({ err, queued: this.queue.length }, 'writing generations failed; will retry');
        if (!this.closed && !this.timer) {
          this.timer = setTimeout(() => {
            this.timer = null;
            this.flushInBackground();
          }, 1000);
        }
        throw err;
      })
      .finally(() => {
        this.flushing = null;
      });
    await this.flushing;
    if (this.queue.length > 0) await this.flush();
  }

  private async write(rows: GenerationRow[], lines: string[]): Promise<void> {
    const usage = usageEventsOf(rows);
    if (this.writer?.alive) return this.writer.write(groupCommitValues(lines, rows, usage));
    // A writer thread that died may have committed the batch it was answering: skip what is there.
    if (this.writer) {
      await this.insertMissing(rows, usage);
      return;
    }
    const sqlite = this.sqlite;
    if (sqlite) {
      this.sqliteInsert ??= prepareSqliteInsert(sqlite);
      const insert = this.sqliteInsert;
      // Holding Kysely's connection: no Kysely transaction is open on it while this one runs.
      await this.db.connection().execute(async () => insert(rows, usage));
      return;
    }
    await this.insertMissing(rows, usage);
  }

  /** Inserts the rows not in the database yet, and the usage events of those only. */
  private async insertMissing(rows: GenerationRow[], usage = usageEventsOf(rows)): Promise<number> {
    return this.db.transaction().execute(async (tx) => {
      // A retry after a commit whose answer was lost (the connection died while it came back)
      // finds its generations already there: those are not inserted, nor billed, twice.
      const fresh = await tx
        .insertInto('generations')
        .values(rows)
        .onConflict((oc) => oc.column('id').doNothing())
        .returning('id')
        .execute();
      const ids = new Set(fresh.map((r) => r.id));
      const inserted = fresh.length === rows.length ? rows : rows.filter((r) => ids.has(r.id));
      const billed = inserted === rows ? usage : usageEventsOf(inserted);
      if (billed.length > 0) await tx.insertInto('usage_events').values(billed).execute();
      // The hourly rollup counts each generation once, with its insert.
      await addToHours(tx, inserted);
      return fresh.length;
    });
  }

  /** Stops the timer and writes what is queued, retrying a few times before giving up loudly. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (let attempt = 1; this.queue.length > 0; attempt++) {
      try {
        await this.flush();
      } catch (err) {
        if (attempt >= 5) {
          this.log.error({ err, lost: this.queue.length }, 'could not write generations before shutdown');
          await this.writer?.stop();
          return;
        }
        await new Promise((r) => setTimeout(r, 200 * attempt));
      }
    }
    await this.writer?.stop();
    this.journal?.close();
  }
}

/** The usage_events rows of billed generations (cost above zero). */
export function usageEventsOf(rows: GenerationRow[]): UsageEventsTable[] {
  const now = Date.now();
  return rows
    .filter((r) => r.cost_usd > 0)
    .map((r) => ({
      id: timeOrderedId(now),
      organization_id: r.organization_id,
      workspace_id: r.workspace_id,
      key_hash: r.key_hash,
      user_id: r.user_id,
      model: r.model,
      provider: r.provider,
      cost_usd: r.cost_usd,
      is_byok: r.is_byok,
      created_at: r.created_at,
    }));
}

/**
 * Inserts generations, their usage events and their share of the hourly rollup with `db` (a
 * transaction the caller holds).
 */
export async function insertGenerations(
  db: Db,
  rows: GenerationRow[],
  usage: UsageEventsTable[] = usageEventsOf(rows),
): Promise<void> {
  if (rows.length > 0) await db.insertInto('generations').values(rows).execute();
  if (usage.length > 0) await db.insertInto('usage_events').values(usage).execute();
  await addToHours(db, rows);
}

/**
 * Inserts generations, usage events and the rollup's share through statements prepared once on
 * `sqlite`; run it inside a better-sqlite3 transaction (the batch worker's outcome writes do, with
 * their own statements).
 */
export function sqliteGenerationInserts(sqlite: SQLite.Database) {
  const generations = sqlite.prepare(insertSql('generations', GENERATION_COLUMNS));
  const usageEvents = sqlite.prepare(insertSql('usage_events', USAGE_COLUMNS));
  const hours = sqliteHoursUpsert(sqlite);
  return (rows: GenerationRow[], usage: UsageEventsTable[]) => {
    for (const r of rows) generations.run(valuesOf(r, GENERATION_COLUMNS));
    for (const u of usage) usageEvents.run(valuesOf(u, USAGE_COLUMNS));
    hours(rows);
  };
}

function prepareSqliteInsert(sqlite: SQLite.Database) {
  return sqlite.transaction(sqliteGenerationInserts(sqlite));
}

/** The statements of a group commit on SQLite, positional (`groupCommitValues` gives their values). */
export const SQLITE_GROUP_COMMIT = {
  /** The generation columns, in the statement's order (the thread reads them from each line). */
  generationColumns: GENERATION_COLUMNS,
  generations: insertSql('generations', GENERATION_COLUMNS),
  usageEvents: insertSql('usage_events', USAGE_COLUMNS),
  hours: SQLITE_HOURS_UPSERT,
};

/**
 * A group commit as the writer thread (generation-writer.ts) inserts it: the generations as their
 * JSON lines (the journal's; one string is far cheaper to hand over than a structured clone of a
 * row's 36 values), the usage events and rollup cells as positional values.
 */
export interface GroupCommitValues {
  /** One JSON line per generation row. */
  generations: string;
  usageEvents: unknown[][];
  hours: unknown[][];
}

/** What runs group commits off the event loop (generation-writer.ts's thread). */
export interface GenerationWriter {
  /** Inserts one group commit in one transaction; rejects (nothing written) when it failed. */
  write(values: GroupCommitValues): Promise<void>;
  /** False once the thread is gone (it failed to start or crashed): write on the loop instead. */
  readonly alive: boolean;
  stop(): Promise<void>;
}

/** `lines`: the rows' JSON (`JSON.stringify(row)` each), in the order of `rows`. */
export const groupCommitValues = (
  lines: string[],
  rows: GenerationRow[],
  usage: UsageEventsTable[],
): GroupCommitValues => ({
  generations: lines.join('\n'),
  usageEvents: usage.map((u) => valuesOf(u, USAGE_COLUMNS)),
  hours: sqliteHoursValues(rows),
});
