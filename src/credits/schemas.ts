import { Type } from '@sinclair/typebox';
import { Nullable } from '../server/schemas.js';

/** Totals of an organization's credits: `total_credits − total_usage` is its balance. */
export const CreditTotals = Type.Object(
  { total_credits: Type.Number(), total_usage: Type.Number() },
  { title: 'CreditTotals' },
);

/** One entry of the credits ledger: credits added to an organization. */
export const LedgerEntry = Type.Object(
  {
    id: Type.String(),
    organization_id: Type.String(),
    kind: Type.String({ description: 'purchase (operator API, CLI) or grant' }),
    amount_usd: Type.Number(),
    note: Nullable(Type.String()),
    created_at: Type.String(),
  },
  { title: 'CreditLedgerEntry' },
);
