import type { Db } from '../db/connection.js';
import { badRequest } from '../lib/errors.js';
import { newId } from '../lib/ids.js';
import { nowIso } from '../lib/time.js';
import * as ledger from './ledger.store.js';
import type { UsageService } from './usage.service.js';

export const LEDGER_KINDS = ['purchase', 'grant'] as const;
export type LedgerKind = (typeof LEDGER_KINDS)[number];

/** The credits ledger: purchases and grants in, recorded usage out. */
export class CreditsService {
  constructor(
    private readonly db: Db,
    private readonly usage: UsageService,
    /** Told when the ledger changes, so the cached balance is reloaded (SpendTracker). */
    private readonly spend?: { creditsChanged(organizationId: string): void },
  ) {}

  async add(
    organizationId: string,
    amountUsd: number,
    opts: { kind?: LedgerKind; note?: string | null } = {},
  ) {
    if (!Number.isFinite(amountUsd) || amountUsd <= 0)
      throw badRequest('amount_usd must be a positive number');
    const row: ledger.LedgerRow = {
      id: newId(),
      organization_id: organizationId,
      kind: opts.kind ?? 'grant',
      amount_usd: amountUsd,
      note: opts.note ?? null,
      created_at: nowIso(),
    };
    await ledger.insertLedgerEntry(this.db, row);
    this.spend?.creditsChanged(organizationId);
    return row;
  }

  async totals(organizationId: string) {
    const [total_credits, total_usage] = await Promise.all([
      ledger.totalCredits(this.db, organizationId),
      this.usage.totalForOrganization(organizationId),
    ]);
    return { total_credits, total_usage };
  }

  /** The ledger's entries (purchases and grants), newest first, with their count. */
  async ledger(organizationId: string, page: { offset: number; limit: number }) {
    const [rows, total] = await Promise.all([
      ledger.listLedger(this.db, organizationId, page),
      ledger.countLedger(this.db, organizationId),
    ]);
    return {
      data: rows.map((r) => ({ ...r, amount_usd: Number(r.amount_usd) })),
      total_count: total,
    };
  }

  /** Credits left to spend (may be negative after usage that raced a top-up). */
  async balance(organizationId: string): Promise<number> {
    const t = await this.totals(organizationId);
    return t.total_credits - t.total_usage;
  }
}
