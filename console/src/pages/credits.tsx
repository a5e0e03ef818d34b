import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { api, call } from '../api/client';
import { ErrorBanner } from '../components/error-banner';
import { Page } from '../components/page';
import { LedgerTable, Totals } from './credits/ledger-table';
import './credits/credits.css';

const PAGE = 50;

/** The organization's credits: balance, what was added (the ledger) and what was used. */
export function CreditsPage() {
  const [offset, setOffset] = useState(0);
  const totals = useQuery({ queryKey: ['credits'], queryFn: () => call(api.GET('/credits')) });
  const ledger = useQuery({
    queryKey: ['credits', 'ledger', offset],
    queryFn: () => call(api.GET('/credits/ledger', { params: { query: { offset, limit: PAGE } } })),
  });
  const count = ledger.data?.total_count ?? 0;
  return (
    <Page title="Credits">
      <ErrorBanner error={totals.error ?? ledger.error} />
      {totals.data && (
        <Totals credits={totals.data.data.total_credits} usage={totals.data.data.total_usage} />
      )}
      <p className="hint">
        Credits are added by the gateway's operator. Whether calls need them depends on the gateway's setting
        (GATEHOUSE_CREDITS); usage is recorded either way.
      </p>
      <h2>Ledger</h2>
      {ledger.isPending ? (
        <p>Loading…</p>
      ) : (
        <>
          <LedgerTable entries={ledger.data?.data ?? []} caption="Credits added, newest first" />
          {count > PAGE && (
            <nav className="pager" aria-label="Ledger pages">
              <button
                type="button"
                disabled={offset === 0}
                onClick={() => setOffset(Math.max(0, offset - PAGE))}
              >
                Newer
              </button>
              <span>
                {offset + 1}–{Math.min(offset + PAGE, count)} of {count}
              </span>
              <button
                type="button"
                disabled={offset + PAGE >= count}
                onClick={() => setOffset(offset + PAGE)}
              >
                Older
              </button>
            </nav>
          )}
        </>
      )}
    </Page>
  );
}
