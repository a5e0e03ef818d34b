import { chunks } from '../db/chunks.js';
import type { Db } from '../db/connection.js';
import type { GuardrailKeyAssignmentsTable, GuardrailMemberAssignmentsTable } from '../db/schema.js';

export type KeyAssignmentRow = GuardrailKeyAssignmentsTable;
export type MemberAssignmentRow = GuardrailMemberAssignmentsTable;

interface Scope {
  organizationId: string;
  /** One guardrail's assignments; all of the organization's when omitted. */
  guardrailId?: string;
}

interface Page {
  offset: number;
  limit: number;
}

/** Key assignments with the key's name and label, oldest first. */
export function listKeyAssignments(db: Db, scope: Scope, page: Page) {
  let q = db
    .selectFrom('guardrail_key_assignments as a')
    .innerJoin('api_keys as k', 'k.hash', 'a.key_hash')
    .select([
      'a.id',
      'a.key_hash',
      'k.name as key_name',
      'k.label as key_label',
      'a.guardrail_id',
      'a.created_at',
      'a.assigned_by',
    ])
    .where('a.organization_id', '=', scope.organizationId);
  if (scope.guardrailId !== undefined) q = q.where('a.guardrail_id', '=', scope.guardrailId);
  return q.orderBy('a.created_at').orderBy('a.id').offset(page.offset).limit(page.limit).execute();
}

export async function countKeyAssignments(db: Db, scope: Scope): Promise<number> {
  let q = db
    .selectFrom('guardrail_key_assignments as a')
    .innerJoin('api_keys as k', 'k.hash', 'a.key_hash')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('a.organization_id', '=', scope.organizationId);
  if (scope.guardrailId !== undefined) q = q.where('a.guardrail_id', '=', scope.guardrailId);
  return Number((await q.executeTakeFirstOrThrow()).n);
}

export function listMemberAssignments(db: Db, scope: Scope, page: Page) {
  let q = db
    .selectFrom('guardrail_member_assignments')
    .selectAll()
    .where('organization_id', '=', scope.organizationId);
  if (scope.guardrailId !== undefined) q = q.where('guardrail_id', '=', scope.guardrailId);
  return q.orderBy('created_at').orderBy('id').offset(page.offset).limit(page.limit).execute();
}

export async function countMemberAssignments(db: Db, scope: Scope): Promise<number> {
  let q = db
    .selectFrom('guardrail_member_assignments')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('organization_id', '=', scope.organizationId);
  if (scope.guardrailId !== undefined) q = q.where('guardrail_id', '=', scope.guardrailId);
  return Number((await q.executeTakeFirstOrThrow()).n);
}

/** Of `hashes` (distinct), the ones assigned to the guardrail. */
export async function keysAssignedTo(db: Db, guardrailId: string, hashes: string[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (const part of chunks(hashes)) {
    const rows = await db
      .selectFrom('guardrail_key_assignments')
      .select('key_hash')
      .where('guardrail_id', '=', guardrailId)
      .where('key_hash', 'in', part)
      .execute();
    for (const r of rows) out.add(r.key_hash);
  }
  return out;
}

/** Of `userIds` (distinct), the ones assigned to the guardrail. */
export async function membersAssignedTo(
  db: Db,
  guardrailId: string,
  userIds: string[],
): Promise<Set<string>> {
  const out = new Set<string>();
  for (const part of chunks(userIds)) {
    const rows = await db
      .selectFrom('guardrail_member_assignments')
      .select('user_id')
      .where('guardrail_id', '=', guardrailId)
      .where('user_id', 'in', part)
      .execute();
    for (const r of rows) out.add(r.user_id);
  }
  return out;
}

/**
 * Assigns keys (distinct hashes): a key without a guardrail gets a new row, a key on another
 * guardrail is moved here (a new assignment replacing the old one), a key already here is left
 * alone. Returns how many keys changed. One upsert per chunk, so concurrent writers cannot break
 * the one-guardrail-per-key rule.
 */
export async function upsertKeyAssignments(db: Db, rows: KeyAssignmentRow[]): Promise<number> {
  let changed = 0;
  for (const part of chunks(rows)) {
    const r = await db
      .insertInto('guardrail_key_assignments')
      .values(part)
      .onConflict((oc) =>
        oc
          .column('key_hash')
          .doUpdateSet((eb) => ({
            id: eb.ref('excluded.id'),
            guardrail_id: eb.ref('excluded.guardrail_id'),
            organization_id: eb.ref('excluded.organization_id'),
            assigned_by: eb.ref('excluded.assigned_by'),
            created_at: eb.ref('excluded.created_at'),
          }))
          .whereRef('guardrail_key_assignments.guardrail_id', '<>', 'excluded.guardrail_id'),
      )
      .executeTakeFirst();
    changed += Number(r.numInsertedOrUpdatedRows ?? 0);
  }
  return changed;
}

/** Assigns members (distinct users); members already on the guardrail are left alone. */
export async function insertMemberAssignments(db: Db, rows: MemberAssignmentRow[]): Promise<number> {
  let inserted = 0;
  for (const part of chunks(rows)) {
    const r = await db
      .insertInto('guardrail_member_assignments')
      .values(part)
      .onConflict((oc) => oc.columns(['guardrail_id', 'user_id']).doNothing())
      .executeTakeFirst();
    inserted += Number(r.numInsertedOrUpdatedRows ?? 0);
  }
  return inserted;
}

export async function deleteKeyAssignments(db: Db, guardrailId: string, hashes: string[]): Promise<number> {
  let removed = 0;
  for (const part of chunks(hashes)) {
    const r = await db
      .deleteFrom('guardrail_key_assignments')
      .where('guardrail_id', '=', guardrailId)
      .where('key_hash', 'in', part)
      .executeTakeFirst();
    removed += Number(r.numDeletedRows);
  }
  return removed;
}

export async function deleteMemberAssignments(
  db: Db,
  guardrailId: string,
  userIds: string[],
): Promise<number> {
  let removed = 0;
  for (const part of chunks(userIds)) {
    const r = await db
      .deleteFrom('guardrail_member_assignments')
      .where('guardrail_id', '=', guardrailId)
      .where('user_id', 'in', part)
      .executeTakeFirst();
    removed += Number(r.numDeletedRows);
  }
  return removed;
}
