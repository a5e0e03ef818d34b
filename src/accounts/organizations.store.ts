import type { Db } from '../db/connection.js';
import type { OrgMembersTable, UsersTable } from '../db/schema.js';

export type UserRow = UsersTable;
export type OrgRole = OrgMembersTable['role'];

export async function insertOrganization(db: Db, row: { id: string; name: string; created_at: string }) {
  await db.insertInto('organizations').values(row).execute();
}

export const findOrganization = (db: Db, id: string) =>
  db.selectFrom('organizations').selectAll().where('id', '=', id).executeTakeFirst();

export const listOrganizations = (db: Db) =>
  db.selectFrom('organizations').selectAll().orderBy('created_at').orderBy('id').execute();

export async function insertUser(db: Db, row: UserRow) {
  await db.insertInto('users').values(row).execute();
}

export const findUserByEmail = (db: Db, email: string) =>
  db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();

export const findUser = (db: Db, id: string) =>
  db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();

export async function insertMember(db: Db, row: OrgMembersTable) {
  await db.insertInto('org_members').values(row).execute();
}

export const findMember = (db: Db, organizationId: string, userId: string) =>
  db
    .selectFrom('org_members')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('user_id', '=', userId)
    .executeTakeFirst();

/** Of `userIds`, the ones that are members of the organization. */
export async function membersAmong(db: Db, organizationId: string, userIds: string[]): Promise<Set<string>> {
  if (userIds.length === 0) return new Set();
  const rows = await db
    .selectFrom('org_members')
    .select('user_id')
    .where('organization_id', '=', organizationId)
    .where('user_id', 'in', userIds)
    .execute();
  return new Set(rows.map((r) => r.user_id));
}

export function listMembers(db: Db, organizationId: string, page: { offset: number; limit: number }) {
  return db
    .selectFrom('org_members')
    .innerJoin('users', 'users.id', 'org_members.user_id')
    .select([
      'users.id',
      'users.email',
      'users.first_name',
      'users.last_name',
      'users.interns_programme',
      'org_members.role',
      'org_members.created_at',
    ])
    .where('org_members.organization_id', '=', organizationId)
    .orderBy('org_members.created_at')
    .orderBy('users.id')
    .offset(page.offset)
    .limit(page.limit)
    .execute();
}

export async function countMembers(db: Db, organizationId: string): Promise<number> {
  const r = await db
    .selectFrom('org_members')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('organization_id', '=', organizationId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

export async function updateMemberRole(db: Db, organizationId: string, userId: string, role: OrgRole) {
  await db
    .updateTable('org_members')
    .set({ role })
    .where('organization_id', '=', organizationId)
    .where('user_id', '=', userId)
    .execute();
}

export const findOrganizationsByName = (db: Db, name: string) =>
  db.selectFrom('organizations').selectAll().where('name', '=', name).execute();

/** The user's memberships, oldest first. */
export const membershipsOf = (db: Db, userId: string) =>
  db
    .selectFrom('org_members')
    .selectAll()
    .where('user_id', '=', userId)
    .orderBy('created_at')
    .orderBy('organization_id')
    .execute();
