import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { type DbHandle, openDatabase } from '../../src/db/connection.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { type DbKind, postgresUrl } from './gateway.js';

/**
 * A migrated database for a store's tests: SQLite in memory, or a fresh schema of the test
 * PostgreSQL server (dropped by `drop`).
 */
export async function openTestDatabase(
  kind: DbKind,
): Promise<{ handle: DbHandle; drop: () => Promise<void> }> {
  if (kind === 'sqlite') {
    const handle = openDatabase('sqlite::memory:');
    await migrateToLatest(handle);
    return { handle, drop: () => handle.close() };
  }
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const admin = async (q: string) => {
    const c = new pg.Client({ connectionString: postgresUrl as string });
    await c.connect();
    await c.query(q);
    await c.end();
  };
  await admin(`create schema ${schema}`);
  const handle = openDatabase(postgresUrl as string, { schema });
  await migrateToLatest(handle);
  return {
    handle,
    drop: async () => {
      await handle.close();
      await admin(`drop schema if exists ${schema} cascade`);
    },
  };
}
