import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
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

// COUNT/SUM come back from PostgreSQL as strings (int8/numeric); parse them as JS numbers. Counts
// and USD sums here stay far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => Number(v));

/**
 * Opens the database named by `url`: `postgres://…` / `postgresql://…` for PostgreSQL,
 * `sqlite:<path>` (or a bare path, or `:memory:`) for the embedded SQLite file in WAL mode.
 * `schema` (PostgreSQL only) selects a search_path, used by tests to isolate runs.
 */
export function openDatabase(url: string, opts: { schema?: string } = {}): DbHandle {
  if (/^postgres(ql)?:\/\//.test(url)) {
    const pool = new pg.Pool({
      connectionString: url,
      max: 10,
      ...(opts.schema ? { options: `-c search_path=${opts.schema}` } : {}),
    });
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, dialect: 'postgres', schema: opts.schema, close: () => db.destroy() };
  }
  const path = url.replace(/^sqlite:(\/\/)?/, '');
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const file = new SQLite(path);
  file.pragma('journal_mode = WAL');
  file.pragma('synchronous = NORMAL');
  file.pragma('foreign_keys = ON');
  file.pragma('busy_timeout = 5000');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: file }) });
  return { db, dialect: 'sqlite', sqlite: file, close: () => db.destroy() };
}

/** Readiness probe: one round trip to the database. */
export async function ping(db: Db): Promise<void> {
  await sql`select 1`.execute(db);
}
