import { type Migration, type MigrationProvider, Migrator } from 'kysely';
import type { Db } from './connection.js';
import * as m0001 from './migrations/0001_initial.js';
import * as m0002 from './migrations/0002_generations.js';
import * as m0003 from './migrations/0003_batches.js';

/** Migrations are compiled in (no directory scan) so `dist/` and `tsx` runs behave the same. */
const migrations: Record<string, Migration> = {
  '0001_initial': m0001,
  '0002_generations': m0002,
  '0003_batches': m0003,
};

const provider: MigrationProvider = { getMigrations: async () => migrations };

/** Brings the schema up to date; runs on every start. Throws (and the process exits) on failure. */
export async function migrateToLatest(db: Db, schema?: string): Promise<string[]> {
  // Pin Kysely's own bookkeeping tables to the connection's schema: otherwise, on a database with
  // several schemas, the migrator can find them in another schema and skip creating them here.
  const migrator = new Migrator({ db, provider, ...(schema ? { migrationTableSchema: schema } : {}) });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
