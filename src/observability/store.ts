import type { Updateable } from 'kysely';
import type { Db } from '../db/connection.js';
import type { ObservabilityDestinationsTable } from '../db/schema.js';

export type DestinationRow = ObservabilityDestinationsTable;

export async function insertDestination(db: Db, row: DestinationRow) {
  await db.insertInto('observability_destinations').values(row).execute();
}

/** A live destination of the organization. */
export const findDestination = (db: Db, organizationId: string, id: string) =>
  db
    .selectFrom('observability_destinations')
    .selectAll()
    .where('id', '=', id)
    .where('organization_id', '=', organizationId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();

const live = (db: Db, organizationId: string, workspaceId: string) =>
  db
    .selectFrom('observability_destinations')
    .where('organization_id', '=', organizationId)
    .where('workspace_id', '=', workspaceId)
    .where('deleted_at', 'is', null);

export const listDestinations = (
  db: Db,
  organizationId: string,
  workspaceId: string,
  offset: number,
  limit: number,
) =>
  live(db, organizationId, workspaceId)
    .selectAll()
    .orderBy('created_at')
    .orderBy('id')
    .offset(offset)
    .limit(limit)
    .execute();

export async function countDestinations(db: Db, organizationId: string, workspaceId: string, type?: string) {
  let q = live(db, organizationId, workspaceId);
  if (type !== undefined) q = q.where('type', '=', type);
  const r = await q.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(r.n);
}

/** The enabled destinations a workspace's records go to (for delivery). */
export const enabledDestinations = (db: Db, organizationId: string, workspaceId: string) =>
  live(db, organizationId, workspaceId).selectAll().where('enabled', '=', 1).execute();

export async function updateDestination(
  db: Db,
  id: string,
  patch: Updateable<ObservabilityDestinationsTable>,
) {
  await db.updateTable('observability_destinations').set(patch).where('id', '=', id).execute();
}

/** Soft delete: the row stays, its sealed headers and signing secret are wiped. */
export async function deleteDestination(db: Db, id: string, at: string) {
  await db
    .updateTable('observability_destinations')
    .set({ deleted_at: at, updated_at: at, secret_ciphertext: null, enabled: 0 })
    .where('id', '=', id)
    .execute();
}
