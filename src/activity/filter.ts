import { type ExpressionBuilder, type SelectQueryBuilder, sql } from 'kysely';
import type { Dialect } from '../db/connection.js';
import type { Database } from '../db/schema.js';

/** Which generations a list or an aggregate covers; every bound is optional but the organization. */
export interface GenerationFilter {
  organizationId: string;
  workspaceId?: string;
  keyHash?: string;
  userId?: string;
  /** The model the generation view shows: the served one, else the one asked for. */
  model?: string;
  provider?: string;
  status?: 'success' | 'error' | 'cancelled';
  streamed?: boolean;
  lane?: 'passthrough' | 'translated';
  minCost?: number;
  maxCost?: number;
  /** Inclusive, as stored `created_at` text. */
  from?: string;
  /** Exclusive. */
  to?: string;
}

/** The model column as the generation view shows it; the same expression as its index (0015). */
export const shownModel = sql<string>`coalesce(model, requested_model)`;

/** Narrows a query over `generations` to the filter. */
export function applyFilter<O>(
  q: SelectQueryBuilder<Database, 'generations', O>,
  f: GenerationFilter,
  /** The database the query runs on, when it filters on status (see below). */
  dialect?: Dialect,
): SelectQueryBuilder<Database, 'generations', O> {
  let out = q.where('organization_id', '=', f.organizationId);
  if (f.workspaceId !== undefined) out = out.where('workspace_id', '=', f.workspaceId);
  if (f.keyHash !== undefined) out = out.where('key_hash', '=', f.keyHash);
  if (f.userId !== undefined) out = out.where('user_id', '=', f.userId);
  if (f.model !== undefined)
    out = out.where((eb: ExpressionBuilder<Database, 'generations'>) =>
      eb(shownModel, '=', f.model as string),
    );
  if (f.provider !== undefined) out = out.where('provider', '=', f.provider);
  if (f.status !== undefined) {
    // SQLite uses the partial index generations_org_status only for a query that repeats its
    // term; PostgreSQL proves it from status = 'error' itself, and the repeated term would halve
    // its row estimate (two terms taken as independent) and mislead its plan.
    if (f.status !== 'success' && dialect === 'sqlite') out = out.where(sql<boolean>`status <> 'success'`);
    out = out.where('status', '=', f.status);
  }
  if (f.streamed !== undefined) out = out.where('streamed', '=', f.streamed ? 1 : 0);
  if (f.lane !== undefined) out = out.where('passthrough', '=', f.lane === 'passthrough' ? 1 : 0);
  if (f.minCost !== undefined) out = out.where('cost_usd', '>=', f.minCost);
  if (f.maxCost !== undefined) out = out.where('cost_usd', '<=', f.maxCost);
  if (f.from !== undefined) out = out.where('created_at', '>=', f.from);
  if (f.to !== undefined) out = out.where('created_at', '<', f.to);
  return out;
}
