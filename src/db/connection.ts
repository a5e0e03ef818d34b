import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  Kysely,
  SqliteDialect,
  type SqliteDialectConfig,
  SqliteDriver,
  sql,
} from 'kysely';
import { LRUCache } from 'lru-cache';
import pg from 'pg';
import { startCheckpointer } from './checkpointer.js';
import { PostgresSearchPathDialect } from './pg-introspector.js';
import type { Database } from './schema.js';

export type Db = Kysely<Database>;
export type Dialect = 'sqlite' | 'postgres';

export interface DbHandle {
  db: Db;
  dialect: Dialect;
  /** PostgreSQL schema the connection is pinned to (search_path), when one was given. */
  schema?: string;
  /** The better-sqlite3 handle behind `db` (SQLite only), for statements prepared once (accounting). */
  sqlite?: SQLite.Database;
  /** Closes the pool / file handle. */
  close(): Promise<void>;
}

/** How long opening a PostgreSQL connection, or waiting for a pooled one, may take. */
export const PG_CONNECT_TIMEOUT_MS = 5_000;

// COUNT/SUM come back from PostgreSQL as strings (int8/numeric); parse them as JS numbers. Counts
// and USD sums here stay far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => Number(v));

/**
 * Opens the database named by `url`: `postgres://…` / `postgresql://…` for PostgreSQL,
 * `sqlite:<path>` (or a bare path, or `:memory:`) for the embedded SQLite file in WAL mode.
 * `schema` (PostgreSQL only) selects a search_path, used by tests to isolate runs.
 */
export function openDatabase(
  url: string,
  opts: {
    schema?: string;
    /** SQLite: checkpoint the WAL on a thread of its own (long-running processes; see checkpointer.ts). */
    backgroundCheckpoints?: boolean;
  } = {},
): DbHandle {
  if (/^postgres(ql)?:\/\//.test(url)) {
    const pool = new pg.Pool({
      connectionString: url,
      max: 10,
      // A database that is away must fail requests (503), not hang them: bounds both opening a
      // connection and waiting for a free one from the pool.
      connectionTimeoutMillis: PG_CONNECT_TIMEOUT_MS,
      keepAlive: true,
      ...(opts.schema ? { options: `-c search_path=${opts.schema}` } : {}),
    });
    // When the server restarts, every client gets an error (57P01, then the socket closes). An
    // unheard 'error' event would end the process: the pool reports idle clients' errors (and drops
    // them), a client checked out between two queries reports its own. The queries that meet a
    // broken client fail and answer 503; the pool reconnects on the next use.
    pool.on('error', () => {});
    pool.on('connect', (client) => client.on('error', () => {}));
    const db = new Kysely<Database>({ dialect: new PostgresSearchPathDialect({ pool }) });
    return { db, dialect: 'postgres', schema: opts.schema, close: () => db.destroy() };
  }
  const path = url.replace(/^sqlite:(\/\/)?/, '');
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const file = new SQLite(path);
  walMode(file);
  file.pragma('synchronous = NORMAL');
  file.pragma('foreign_keys = ON');
  file.pragma('busy_timeout = 5000');
  file.pragma('wal_autocheckpoint = 10000');
  const db = new Kysely<Database>({
    dialect: new ImmediateSqliteDialect({ database: withStatementCache(file) }),
  });
  const checkpointer =
    opts.backgroundCheckpoints && path !== ':memory:'
      ? startCheckpointer(path, {
          onError: (message) => process.emitWarning(`background WAL checkpoint failed: ${message}`),
        })
      : null;
  const close = async () => {
    await checkpointer?.stop();
    await db.destroy();
  };
  return { db, dialect: 'sqlite', sqlite: file, close };
}

/**
 * Puts the file in WAL mode. Two processes opening a new file at once (`serve` and `worker`
 * started together) both convert it, and SQLite answers one of them SQLITE_BUSY at once rather
 * than waiting — neither can wait for the other — so the conversion is tried again for a while.
 */
export function walMode(file: Pick<SQLite.Database, 'pragma'>, waitMs = 10_000): void {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      file.pragma('journal_mode = WAL');
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() > deadline) throw err;
      // Synchronous: the file is being opened, nothing else runs on it yet.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20 + Math.random() * 30);
    }
  }
}

/**
 * Kysely's SQLite dialect with transactions opened by `BEGIN IMMEDIATE`. The file can have other
 * writers (a `gatehouse worker` process beside the gateway): a deferred transaction that has read
 * and then writes after another connection committed fails at once with SQLITE_BUSY_SNAPSHOT (its
 * snapshot is stale, and the busy timeout does not apply), whereas an immediate one waits for the
 * write lock up front. (better-sqlite3 transactions of Gatehouse's use `.immediate` likewise.)
 */
class ImmediateSqliteDialect extends SqliteDialect {
  constructor(private readonly settings: SqliteDialectConfig) {
    super(settings);
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.settings);
  }
}

class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

/** Most prepared statements kept per SQLite connection (by SQL text, least recently used out). */
const STATEMENT_CACHE = 500;

/**
 * The SQLite handle as Kysely sees it, with its prepared statements reused: Kysely prepares every
 * query afresh, and on the batch worker's path compiling the same few statements again was 13 %
 * of its CPU. Queries differ only in their parameters, so the SQL text is the key. (A statement
 * being iterated by a streaming query cannot run twice at once; Gatehouse streams none.)
 */
function withStatementCache(file: SQLite.Database) {
  const cache = new LRUCache<string, SQLite.Statement>({ max: STATEMENT_CACHE });
  return {
    close: () => file.close(),
    prepare(sql: string) {
      let stmt = cache.get(sql);
      if (!stmt) {
        stmt = file.prepare(sql);
        cache.set(sql, stmt);
      }
      return stmt;
    },
  };
}

/** Readiness probe: one round trip to the database. */
export async function ping(db: Db): Promise<void> {
  await sql`select 1`.execute(db);
}
