import { sql } from 'kysely';
import type { Db } from '../db/connection.js';
import type { CreditLedgerTable } from '../db/schema.js';

export type LedgerRow = CreditLedgerTable;

export async function insertLedgerEntry(db: Db, row: LedgerRow) {
  await db.insertInto('credit_ledger').values(row).execute();
}

/** Sum of purchases and grants (USD). */
export async function totalCredits(db: Db, organizationId: string): Promise<number> {
  const r = await db
    .selectFrom('credit_ledger')
    .select(sql<number>`coalesce(sum(amount_usd), 0)`.as('total'))
    .where('organization_id', '=', organizationId)
    .executeTakeFirstOrThrow();
  return Number(r.total);
}

/** One organization's ledger entries, newest first. */
export function listLedger(db: Db, organizationId: string, page: { offset: number; limit: number }) {
  return db
    .selectFrom('credit_ledger')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .offset(page.offset)
    .limit(page.limit)
    .execute();
}

export async function countLedger(db: Db, organizationId: string): Promise<number> {
  const r = await db
    .selectFrom('credit_ledger')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('organization_id', '=', organizationId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}
