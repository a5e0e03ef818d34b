import type { Updateable } from 'kysely';
import type { Db } from '../db/connection.js';
import type { GuardrailsTable } from '../db/schema.js';

export type GuardrailRow = GuardrailsTable;

export async function insertGuardrail(db: Db, row: GuardrailRow) {
  await db.insertInto('guardrails').values(row).execute();
}

/** Inserts the row unless one with its id exists (concurrent materialisation of a default guardrail). */
export async function insertGuardrailIfAbsent(db: Db, row: GuardrailRow) {
  await db
    .insertInto('guardrails')
    .values(row)
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
}

/** A guardrail of the organization. */
export const findGuardrail = (db: Db, organizationId: string, id: string) =>
  db
    .selectFrom('guardrails')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .executeTakeFirst();

export function listGuardrails(
  db: Db,
  q: { organizationId: string; workspaceId: string; offset: number; limit: number },
) {
  return db
    .selectFrom('guardrails')
    .selectAll()
    .where('organization_id', '=', q.organizationId)
    .where('workspace_id', '=', q.workspaceId)
    .orderBy('created_at')
    .orderBy('id')
    .offset(q.offset)
    .limit(q.limit)
    .execute();
}

export async function countGuardrails(db: Db, organizationId: string, workspaceId: string): Promise<number> {
  const r = await db
    .selectFrom('guardrails')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('organization_id', '=', organizationId)
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

export async function updateGuardrail(db: Db, id: string, patch: Updateable<GuardrailsTable>) {
  await db.updateTable('guardrails').set(patch).where('id', '=', id).execute();
}

/** Deletes the guardrail and its key and member assignments (call inside a transaction). */
export async function deleteGuardrail(db: Db, id: string) {
  await db.deleteFrom('guardrail_key_assignments').where('guardrail_id', '=', id).execute();
  await db.deleteFrom('guardrail_member_assignments').where('guardrail_id', '=', id).execute();
  await db.deleteFrom('guardrails').where('id', '=', id).execute();
}

/** Ids of the organization's workspaces (to recognise their default guardrail ids). */
export async function workspaceIdsOf(db: Db, organizationId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('workspaces')
    .select('id')
    .where('organization_id', '=', organizationId)
    .execute();
  return rows.map((r) => r.id);
}
