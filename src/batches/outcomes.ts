import type SQLite from 'better-sqlite3';
import type { Db } from '../db/connection.js';
import {
  type Accountant,
  type GenerationRow,
  insertGenerations,
  sqliteGenerationInserts,
  usageEventsOf,
} from '../routing/accounting.js';
import type { ResultError } from './model.js';
import * as store from './store.js';

/** The batch worker's logger (pino's shape; tests pass a recorder). */
export interface WorkerLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

interface Pending {
  outcome: store.Outcome;
  rows: GenerationRow[];
}

/** Most outcomes per transaction, and how long one waits for company. */
const MAX_GROUP = 256;
const GROUP_MS = 5;
/** Failed group writes retried this many times before the outcomes are dropped (leases then run out). */
const MAX_TRIES = 6;

/**
 * Writes the worker's outcomes in group commits: every few milliseconds, one transaction records
 * the queued results (each only if its lease is still this worker's), adds them to their batches'
 * counters, and inserts the generation rows and usage events of those that counted — so a request
 * is billed exactly when its result is recorded. The spend counters hear about them after the
 * commit. If the database stays away, the outcomes are dropped after a few tries: their requests
 * keep their (expiring) leases and run again later; nothing is billed twice.
 */
export class OutcomeWriter {
  private queue: Pending[] = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  private tries = 0;
  /** On SQLite: the whole group write as one better-sqlite3 transaction of prepared statements. */
  private readonly sqliteWrite:
    | ((group: Pending[], at: { now: number; by: string }) => GenerationRow[])
    | null;

  constructor(
    private readonly db: Db,
    private readonly accountant: Pick<Accountant, 'announce'>,
    private readonly workerId: string,
    private readonly log: WorkerLog,
    sqlite: SQLite.Database | null = null,
  ) {
    this.sqliteWrite = sqlite ? sqliteGroupWrite(sqlite) : null;
  }

  /** Queues an outcome; it is written within a few milliseconds. */
  add(outcome: store.Outcome, rows: GenerationRow[]): void {
    this.queue.push({ outcome, rows });
    if (this.queue.length >= MAX_GROUP) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), GROUP_MS);
  }

  /** Batches with outcomes not yet written (their leases must still be extended). */
  batchIds(): string[] {
    return this.queue.map((p) => p.outcome.ref.batchId);
  }

  /** Writes everything queued; resolves once it is durable (or dropped after MAX_TRIES). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    while (this.flushing) await this.flushing;
    if (this.queue.length === 0) return;
    const group = this.queue.slice(0, MAX_GROUP);
    this.flushing = this.write(group).finally(() => {
      this.flushing = null;
    });
    await this.flushing;
    if (this.queue.length > 0) {
      if (this.tries === 0) await this.flush();
      else this.timer ??= setTimeout(() => void this.flush(), 100 * 2 ** this.tries);
    }
  }

  private async write(group: Pending[]): Promise<void> {
    try {
      const at = { now: Date.now(), by: this.workerId };
      const write = this.sqliteWrite;
      const counted = write
        ? // Holding Kysely's connection: no Kysely transaction is open on it while this one runs.
          await this.db.connection().execute(async () => write(group, at))
        : await this.db.transaction().execute(async (tx) => {
            const ok = await store.recordOutcomes(
              tx,
              group.map((p) => p.outcome),
              at,
            );
            const rows = group.flatMap((p, i) => (ok[i] ? p.rows : []));
            if (rows.length > 0) await insertGenerations(tx, rows);
            return rows;
          });
      this.queue = this.queue.slice(group.length);
      this.tries = 0;
      for (const r of counted) this.accountant.announce(r);
    } catch (err) {
      this.tries++;
      if (this.tries >= MAX_TRIES) {
        this.log.error(
          { err, dropped: group.length },
          'could not record batch outcomes; their requests will run again',
        );
        this.queue = this.queue.slice(group.length);
        this.tries = 0;
      } else this.log.warn({ err, tries: this.tries }, 'recording batch outcomes failed; retrying');
    }
  }

  /** Writes what is queued (retrying as flush does) before the worker stops. */
  async close(): Promise<void> {
    while (this.queue.length > 0) {
      await this.flush();
      if (this.queue.length > 0) await new Promise((r) => setTimeout(r, 100 * 2 ** this.tries));
    }
  }
}

function sqliteGroupWrite(sqlite: SQLite.Database) {
  const record = store.sqliteOutcomeRecorder(sqlite);
  const insert = sqliteGenerationInserts(sqlite);
  // Immediate: the file may have other writers (see ImmediateSqliteDialect in db/connection.ts).
  return sqlite.transaction((group: Pending[], at: { now: number; by: string }): GenerationRow[] => {
    const ok = record(
      group.map((p) => p.outcome),
      at,
    );
    const rows = group.flatMap((p, i) => (ok[i] ? p.rows : []));
    if (rows.length > 0) insert(rows, usageEventsOf(rows));
    return rows;
  }).immediate;
}

/** The result of a request that ended with an error: no answer, no usage. */
export function failedResult(error: ResultError): store.RequestResult {
  return {
    status_code: null,
    generation_id: null,
    response_body: null,
    error_json: JSON.stringify(error),
    prompt_tokens: 0,
    completion_tokens: 0,
    reasoning_tokens: 0,
    cached_tokens: 0,
    cache_write_tokens: 0,
    cost_usd: 0,
    prompt_cost_usd: 0,
    completion_cost_usd: 0,
    upstream_cost_usd: 0,
    is_byok: 0,
  };
}
