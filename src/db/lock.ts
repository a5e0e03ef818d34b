import { sql } from 'kysely';
import type { Db, Dialect } from './connection.js';

/**
 * Runs `fn` while holding a lock named `name` across every process on the database: on PostgreSQL
 * a session advisory lock (keyed by the schema too, so deployments in other schemas of the same
 * database don't wait on each other), held by one pooled connection while `fn` uses the others.
 * On SQLite `fn` just runs (one node; its writes are serialised by the file lock anyway).
 */
export async function exclusively<T>(
  db: Db,
  dialect: Dialect,
  name: string,
  fn: () => Promise<T>,
): Promise<T> {
  if (dialect !== 'postgres') return fn();
  return db.connection().execute(async (conn) => {
    const key = sql`hashtext(current_schema() || ':' || ${name})`;
    await sql`select pg_advisory_lock(${key})`.execute(conn);
    try {
      return await fn();
    } finally {
      await sql`select pg_advisory_unlock(${key})`.execute(conn);
    }
  });
}
