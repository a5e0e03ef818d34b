import type { Caller } from '../accounts/caller.js';
import type { WorkspacesService } from '../accounts/workspaces.service.js';
import type { Db } from '../db/connection.js';
import { badRequest, notFound } from '../lib/errors.js';
import { newId } from '../lib/ids.js';
import { nowIso, type ResetInterval, windowStart } from '../lib/time.js';
import * as store from './budgets.store.js';

export const BUDGET_INTERVALS = ['daily', 'weekly', 'monthly', 'lifetime'] as const;
export type BudgetInterval = (typeof BUDGET_INTERVALS)[number];

/** Longest first: each budget's limit must be strictly below the limit of every longer one. */
const LONGEST_FIRST: readonly BudgetInterval[] = ['lifetime', 'monthly', 'weekly', 'daily'];

export interface BudgetInput {
  limit_usd: number;
  /** The workspace-wide flag; omitted = unchanged. */
  include_byok_in_budgets?: boolean;
}

/** The WorkspaceBudget wire object: a lifetime budget has `reset_interval: null`. */
export function budgetView(row: store.BudgetRow, spentUsd: number) {
  return {
    id: row.id,
    workspace_id: row.workspace_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
    limit_usd: row.limit_usd,
    reset_interval: row.interval === 'lifetime' ? null : (row.interval as ResetInterval),
    spent_usd: spentUsd,
  };
}
export type BudgetView = ReturnType<typeof budgetView>;

function checkInterval(interval: string): asserts interval is BudgetInterval {
  if (!(BUDGET_INTERVALS as readonly string[]).includes(interval)) {
    throw badRequest(`interval must be one of ${BUDGET_INTERVALS.join(', ')}`);
  }
}

/** 400 unless limits strictly decrease lifetime > monthly > weekly > daily among those set. */
function checkOrdering(limits: Map<BudgetInterval, number>) {
  let longer: { interval: BudgetInterval; limit: number } | null = null;
  for (const interval of LONGEST_FIRST) {
    const limit = limits.get(interval);
    if (limit === undefined) continue;
    if (longer && limit >= longer.limit) {
      throw badRequest(
        `Budget limits must strictly decrease from lifetime to monthly to weekly to daily: the ${interval} limit (${limit} USD) must be less than the ${longer.interval} limit (${longer.limit} USD)`,
      );
    }
    longer = { interval, limit };
  }
}

const byShortestFirst = (a: store.BudgetRow, b: store.BudgetRow) =>
  BUDGET_INTERVALS.indexOf(a.interval as BudgetInterval) -
  BUDGET_INTERVALS.indexOf(b.interval as BudgetInterval);

/**
 * Spending budgets of a workspace, one per interval. Only storage: enforcement belongs to the
 * inference path.
 */
export class BudgetsService {
  constructor(
    private readonly db: Db,
    private readonly workspaces: WorkspacesService,
  ) {}

  async list(caller: Pick<Caller, 'organizationId'>, workspaceRef: string) {
    const ws = await this.workspaces.get(caller, workspaceRef);
    const rows = await store.listBudgets(this.db, ws.id);
    const includeByok = ws.include_byok_in_budgets === 1;
    const data = await Promise.all(
      rows.sort(byShortestFirst).map((row) => this.view(this.db, caller, row, includeByok)),
    );
    return { data, include_byok_in_budgets: includeByok };
  }

  async get(caller: Pick<Caller, 'organizationId'>, workspaceRef: string, interval: string) {
    checkInterval(interval);
    const ws = await this.workspaces.get(caller, workspaceRef);
    const row = await store.findBudget(this.db, ws.id, interval);
    if (!row) throw notFound(`The ${interval} budget of this workspace`);
    const includeByok = ws.include_byok_in_budgets === 1;
    return { data: await this.view(this.db, caller, row, includeByok), include_byok_in_budgets: includeByok };
  }

  /** Creates or replaces the budget for `interval` (and sets the workspace-wide BYOK flag if given). */
  async put(
    caller: Pick<Caller, 'organizationId'>,
    workspaceRef: string,
    interval: string,
    input: BudgetInput,
  ) {
    checkInterval(interval);
    if (!Number.isFinite(input.limit_usd) || input.limit_usd <= 0) {
      throw badRequest('limit_usd must be a number greater than 0');
    }
    const ws = await this.workspaces.get(caller, workspaceRef);
    return this.db.transaction().execute(async (tx) => {
      // Locks the workspace so concurrent budget writes cannot break the ordering together.
      const includeByok = await this.workspaces.lockForBudgets(tx, ws.id, input.include_byok_in_budgets);
      const existing = await store.listBudgets(tx, ws.id);
      const limits = new Map(existing.map((b) => [b.interval as BudgetInterval, b.limit_usd]));
      limits.set(interval, input.limit_usd);
      checkOrdering(limits);
      const now = nowIso();
      await store.upsertBudget(tx, {
        id: newId(),
        workspace_id: ws.id,
        interval,
        limit_usd: input.limit_usd,
        created_at: now,
        updated_at: now,
      });
      const row = await store.findBudget(tx, ws.id, interval);
      if (!row) throw new Error('budget vanished after upsert');
      return { data: await this.view(tx, caller, row, includeByok), include_byok_in_budgets: includeByok };
    });
  }

  /** The budget with what its workspace spent in the current window (UTC), as the budget counts it. */
  private async view(
    db: Db,
    caller: Pick<Caller, 'organizationId'>,
    row: store.BudgetRow,
    includeByok: boolean,
  ) {
    const since =
      row.interval === 'lifetime' ? null : windowStart(row.interval as ResetInterval).toISOString();
    const spent = await store.workspaceSpend(db, {
      organizationId: caller.organizationId,
      workspaceId: row.workspace_id,
      since,
      includeByok,
    });
    return budgetView(row, spent);
  }

  async delete(caller: Pick<Caller, 'organizationId'>, workspaceRef: string, interval: string) {
    checkInterval(interval);
    const ws = await this.workspaces.get(caller, workspaceRef);
    if ((await store.deleteBudget(this.db, ws.id, interval)) === 0) {
      throw notFound(`The ${interval} budget of this workspace`);
    }
  }
}
