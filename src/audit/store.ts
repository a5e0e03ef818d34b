import { sql } from 'kysely';
import type { Db } from '../db/connection.js';
import type { AuditEventsTable } from '../db/schema.js';

export type AuditRow = AuditEventsTable;

/** What a list may be narrowed to; every field ANDs. `organizationId` undefined: every organization. */
export interface AuditFilter {
  /** An organization, or null for operator-level events only. */
  organizationId?: string | null;
  actorId?: string;
  actorKind?: AuditRow['actor_kind'];
  action?: string;
  resourceType?: string;
  resourceId?: string;
  from?: string;
  to?: string;
}

export interface AuditCursor {
  at: string;
  id: string;
}

export async function insertAuditEvent(db: Db, row: AuditRow): Promise<void> {
  await db.insertInto('audit_events').values(row).execute();
}

/**
 * One page newest first, after the cursor. Keyset on (at, id), so events written while a caller
 * pages never shift the pages after the one it holds (the 0019 indexes end with those columns).
 */
export async function listAuditEvents(
  db: Db,
  filter: AuditFilter,
  limit: number,
  after: AuditCursor | null,
): Promise<AuditRow[]> {
  let q = db.selectFrom('audit_events').selectAll();
  if (filter.organizationId === null) q = q.where('organization_id', 'is', null);
  else if (filter.organizationId !== undefined) q = q.where('organization_id', '=', filter.organizationId);
  const actor = filter.actorId;
  if (actor !== undefined)
    q = q.where((eb) => eb.or([eb('actor_id', '=', actor), eb('actor_user_id', '=', actor)]));
  if (filter.actorKind !== undefined) q = q.where('actor_kind', '=', filter.actorKind);
  if (filter.action !== undefined) q = q.where('action', '=', filter.action);
  if (filter.resourceType !== undefined) q = q.where('resource_type', '=', filter.resourceType);
  if (filter.resourceId !== undefined) q = q.where('resource_id', '=', filter.resourceId);
  if (filter.from !== undefined) q = q.where('at', '>=', filter.from);
  if (filter.to !== undefined) q = q.where('at', '<', filter.to);
  if (after) q = q.where(sql<boolean>`(at, id) < (${after.at}, ${after.id})`);
  return q.orderBy('at', 'desc').orderBy('id', 'desc').limit(limit).execute();
}

/** Deletes up to `limit` events older than `before`; returns how many. */
export async function purgeAuditEvents(db: Db, before: string, limit: number): Promise<number> {
  const result = await db
    .deleteFrom('audit_events')
    .where('id', 'in', db.selectFrom('audit_events').select('id').where('at', '<', before).limit(limit))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** The organization a workspace belongs to, or null when there is no such workspace. */
export async function organizationOfWorkspace(db: Db, workspaceId: string): Promise<string | null> {
  const row = await db
    .selectFrom('workspaces')
    .select('organization_id')
    .where('id', '=', workspaceId)
    .executeTakeFirst();
  return row?.organization_id ?? null;
}
