import { sql } from 'kysely';
import type { Db, Dialect } from '../db/connection.js';
import type { GenerationsTable } from '../db/schema.js';
import { LIST_COLUMNS } from '../routing/accounting.js';
import type { Cursor } from './cursor.js';
import { applyFilter, type GenerationFilter } from './filter.js';

/**
 * One page of generations, newest first, after the cursor. Keyset on (created_at, id): a page is
 * an index range walk (0015's indexes end with those columns), and rows written while a caller
 * pages never shift the pages after the one it holds.
 */
export async function listGenerations(
  db: Db,
  dialect: Dialect,
  filter: GenerationFilter,
  limit: number,
  after: Cursor | null,
): Promise<GenerationsTable[]> {
  return listQuery(db, dialect, filter, limit, after).execute();
}

/** The page's query, unexecuted (the plan tests explain it). */
export function listQuery(
  db: Db,
  dialect: Dialect,
  filter: GenerationFilter,
  limit: number,
  after: Cursor | null,
) {
  let q = applyFilter(db.selectFrom('generations').select(LIST_COLUMNS), filter, dialect);
  if (after) q = q.where(sql<boolean>`(created_at, id) < (${after.createdAt}, ${after.id})`);
  return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit);
}
