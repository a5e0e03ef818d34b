import type { Db } from '../db/connection.js';
import type { GenerationContentsTable } from '../db/schema.js';

/** SQL of kept generation content. Expired rows (`expires_at <= now`) are never read. */

export type ContentRow = GenerationContentsTable;

/** Who may read a row: an organization, and within it one workspace (API keys) or all (management keys). */
export interface ContentScope {
  organizationId: string;
  workspaceId: string | null;
}

/** Inserts rows; one already there (a retried write) is left as it is. */
export async function insertContents(db: Db, rows: ContentRow[]): Promise<void> {
  if (rows.length === 0) return;
  await db
    .insertInto('generation_contents')
    .values(rows)
    .onConflict((oc) => oc.column('generation_id').doNothing())
    .execute();
}

export function findContent(db: Db, scope: ContentScope, generationId: string, now: number) {
  let q = db
    .selectFrom('generation_contents')
    .selectAll()
    .where('generation_id', '=', generationId)
    .where('organization_id', '=', scope.organizationId)
    .where('expires_at', '>', now);
  if (scope.workspaceId !== null) q = q.where('workspace_id', '=', scope.workspaceId);
  return q.executeTakeFirst();
}

/** The rows of several generations in one query (export batches: up to their batch size). */
export function findContents(db: Db, scope: ContentScope, generationIds: string[], now: number) {
  if (generationIds.length === 0) return Promise.resolve([] as ContentRow[]);
  let q = db
    .selectFrom('generation_contents')
    .selectAll()
    .where('generation_id', 'in', generationIds)
    .where('organization_id', '=', scope.organizationId)
    .where('expires_at', '>', now);
  if (scope.workspaceId !== null) q = q.where('workspace_id', '=', scope.workspaceId);
  return q.execute();
}

/** Deletes up to `limit` expired rows; returns how many. */
export async function purgeExpired(db: Db, now: number, limit: number): Promise<number> {
  const result = await db
    .deleteFrom('generation_contents')
    .where(
      'generation_id',
      'in',
      db
        .selectFrom('generation_contents')
        .select('generation_id')
        .where('expires_at', '<=', now)
        .limit(limit),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** A workspace's content-logging settings (undefined: no such workspace). */
export const workspaceSettings = (db: Db, workspaceId: string) =>
  db
    .selectFrom('workspaces')
    .select(['content_logging', 'content_retention_days'])
    .where('id', '=', workspaceId)
    .executeTakeFirst();

/** Deletes a workspace's kept content (with the workspace, in its transaction). */
export async function deleteWorkspaceContents(db: Db, workspaceId: string): Promise<void> {
  await db.deleteFrom('generation_contents').where('workspace_id', '=', workspaceId).execute();
}
