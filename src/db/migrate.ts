import { type Migration, type MigrationProvider, Migrator, sql } from 'kysely';
import type { DbHandle } from './connection.js';
import * as m0001 from './migrations/0001_initial.js';
import * as m0002 from './migrations/0002_generations.js';
import * as m0003 from './migrations/0003_batches.js';
import * as m0004 from './migrations/0004_interns.js';
import * as m0005 from './migrations/0005_usage_events_index.js';
import * as m0006 from './migrations/0006_generation_lanes.js';
import * as m0007 from './migrations/0007_pricing_unknown.js';
import * as m0008 from './migrations/0008_stored_responses.js';
import * as m0009 from './migrations/0009_web_searches.js';
import * as m0010 from './migrations/0010_vault_secret_transport.js';
import * as m0011 from './migrations/0011_generation_attempts.js';
import * as m0012 from './migrations/0012_usage_limits.js';
import * as m0013 from './migrations/0013_byok_weights.js';
import * as m0014 from './migrations/0014_native_batches.js';
import * as m0015 from './migrations/0015_generation_filters.js';
import * as m0016 from './migrations/0016_generation_content.js';
import * as m0017 from './migrations/0017_generation_safeguards.js';
import * as m0018 from './migrations/0018_generation_hours.js';
import * as m0019 from './migrations/0019_audit_events.js';
import * as m0020 from './migrations/0020_observability_destinations.js';
import * as m0021 from './migrations/0021_console_sign_ins.js';
import * as m0022 from './migrations/0022_conversations.js';
import * as m0023 from './migrations/0023_batch_files.js';
import * as m0024 from './migrations/0024_batch_file_expiry.js';
import * as m0025 from './migrations/0025_batch_headers.js';
import * as m0026 from './migrations/0026_presets.js';
import * as m0027 from './migrations/0027_generation_feedback.js';
import * as m0028 from './migrations/0028_batch_results_cleared.js';
import * as m0029 from './migrations/0029_message_threads.js';
import * as m0030 from './migrations/0030_media_video_jobs.js';
import * as m0031 from './migrations/0031_media_video_job_callbacks.js';
import * as m0032 from './migrations/0032_workspace_video_webhooks.js';
import * as m0033 from './migrations/0033_input_files.js';

/** Migrations are compiled in (no directory scan) so `dist/` and `tsx` runs behave the same. */
const migrations: Record<string, Migration> = {
  '0001_initial': m0001,
  '0002_generations': m0002,
  '0003_batches': m0003,
  '0004_interns': m0004,
  '0005_usage_events_index': m0005,
  '0006_generation_lanes': m0006,
  '0007_pricing_unknown': m0007,
  '0008_stored_responses': m0008,
  '0009_web_searches': m0009,
  '0010_vault_secret_transport': m0010,
  '0011_generation_attempts': m0011,
  '0012_usage_limits': m0012,
  '0013_byok_weights': m0013,
  '0014_native_batches': m0014,
  '0015_generation_filters': m0015,
  '0016_generation_content': m0016,
  '0017_generation_safeguards': m0017,
  '0018_generation_hours': m0018,
  '0019_audit_events': m0019,
  '0020_observability_destinations': m0020,
  '0021_console_sign_ins': m0021,
  '0022_conversations': m0022,
  '0023_batch_files': m0023,
  '0024_batch_file_expiry': m0024,
  '0025_batch_headers': m0025,
  '0026_presets': m0026,
  '0027_generation_feedback': m0027,
  '0028_batch_results_cleared': m0028,
  '0029_message_threads': m0029,
  '0030_media_video_jobs': m0030,
  '0031_media_video_job_callbacks': m0031,
  '0032_workspace_video_webhooks': m0032,
  '0033_input_files': m0033,
};

const provider: MigrationProvider = { getMigrations: async () => migrations };

/**
 * Brings the schema up to date; runs on every start. Throws (and the process exits) on failure.
 *
 * Several processes may start on one database at once (a gateway and its workers). On PostgreSQL
 * Kysely's migrator takes an advisory lock; on SQLite it takes none and runs DDL outside a
 * transaction, so two processes on a fresh file would both create the tables and one would fail.
 * There the whole run is one `BEGIN IMMEDIATE` transaction: the second process waits for the
 * first's commit (busy_timeout) and then finds nothing to do — and a failed migration leaves nothing
 * half-applied.
 */
export async function migrateToLatest(
  handle: Pick<DbHandle, 'db' | 'dialect' | 'schema' | 'sqlite'>,
): Promise<string[]> {
  const { db, sqlite } = handle;
  // Pin Kysely's own bookkeeping tables to the connection's schema (the search_path's first, when
  // the URL sets one): otherwise, on a database with several schemas, the migrator can find them
  // in another schema and skip creating them here.
  const schema =
    handle.schema ??
    (handle.dialect === 'postgres'
      ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]?.schema
      : undefined);
  const migrator = new Migrator({ db, provider, ...(schema ? { migrationTableSchema: schema } : {}) });
  if (sqlite) await beginImmediate(sqlite);
  let outcome: Awaited<ReturnType<Migrator['migrateToLatest']>>;
  try {
    outcome = await migrator.migrateToLatest();
  } catch (err) {
    if (sqlite?.inTransaction) sqlite.exec('ROLLBACK');
    throw err;
  }
  const { error, results } = outcome;
  if (sqlite?.inTransaction) sqlite.exec(error ? 'ROLLBACK' : 'COMMIT');
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/**
 * Takes SQLite's write lock for the migration, waiting for another process's migration (or any
 * long write) without blocking the event loop beyond the connection's own busy timeout per try.
 */
async function beginImmediate(sqlite: NonNullable<DbHandle['sqlite']>, waitMs = 60_000): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      sqlite.exec('BEGIN IMMEDIATE');
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
