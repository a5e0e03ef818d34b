import type { Db } from '../db/connection.js';
import type { WorkspaceBudgetsTable } from '../db/schema.js';

export type BudgetRow = WorkspaceBudgetsTable;

export const listBudgets = (db: Db, workspaceId: string) =>
  db.selectFrom('workspace_budgets').selectAll().where('workspace_id', '=', workspaceId).execute();

export const findBudget = (db: Db, workspaceId: string, interval: string) =>
  db
    .selectFrom('workspace_budgets')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('interval', '=', interval)
    .executeTakeFirst();

/** Inserts the budget, or updates the limit of the workspace's budget for that interval. */
export async function upsertBudget(db: Db, row: BudgetRow) {
  await db
    .insertInto('workspace_budgets')
    .values(row)
    .onConflict((oc) =>
      oc.columns(['workspace_id', 'interval']).doUpdateSet({
        limit_usd: row.limit_usd,
        updated_at: row.updated_at,
      }),
    )
    .execute();
}

/** Deletes the workspace's budget for the interval; returns how many rows went (0 or 1). */
export async function deleteBudget(db: Db, workspaceId: string, interval: string): Promise<number> {
  const r = await db
    .deleteFrom('workspace_budgets')
    .where('workspace_id', '=', workspaceId)
    .where('interval', '=', interval)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** What a workspace spent (USD) since `since` (null: ever), BYOK calls counted only when asked. */
export async function workspaceSpend(
  db: Db,
  w: { organizationId: string; workspaceId: string; since: string | null; includeByok: boolean },
): Promise<number> {
  let q = db
    .selectFrom('usage_events')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('cost_usd'), eb.lit(0)).as('spent'))
    .where('organization_id', '=', w.organizationId)
    .where('workspace_id', '=', w.workspaceId);
  if (w.since !== null) q = q.where('created_at', '>=', w.since);
  if (!w.includeByok) q = q.where('is_byok', '=', 0);
  const row = await q.executeTakeFirst();
  return Number(row?.spent ?? 0);
}
