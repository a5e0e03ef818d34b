import type { JsonOk } from '../../api/client';
import { Table } from '../../components/table';

export type LedgerEntry = JsonOk<'/credits/ledger', 'get'>['data'][number];

export const usd = (n: number) => `$${n.toFixed(n !== 0 && Math.abs(n) < 0.01 ? 4 : 2)}`;

/** The credits ledger: what was added to an organization, newest first. */
export function LedgerTable({ entries, caption }: { entries: LedgerEntry[]; caption: string }) {
  return (
    <Table
      caption={caption}
      rows={entries}
      rowKey={(e) => e.id}
      empty="No credits have been added yet."
      columns={[
        { header: 'Added', cell: (e) => new Date(e.created_at).toLocaleString() },
        { header: 'Kind', cell: (e) => e.kind },
        { header: 'Amount', numeric: true, cell: (e) => usd(e.amount_usd) },
        { header: 'Note', cell: (e) => e.note ?? '' },
      ]}
    />
  );
}

/** Credits, usage and what is left, as a small definition list. */
export function Totals({ credits, usage }: { credits: number; usage: number }) {
  return (
    <dl className="totals" aria-label="Credits">
      <div>
        <dt>Balance</dt>
        <dd data-testid="balance">{usd(credits - usage)}</dd>
      </div>
      <div>
        <dt>Credits added</dt>
        <dd>{usd(credits)}</dd>
      </div>
      <div>
        <dt>Used</dt>
        <dd>{usd(usage)}</dd>
      </div>
    </dl>
  );
}
