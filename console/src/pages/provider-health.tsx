import { useQuery } from '@tanstack/react-query';
import { api, call, type JsonOk } from '../api/client';
import { ErrorBanner } from '../components/error-banner';
import { Page } from '../components/page';
import { Table } from '../components/table';

type Credential = JsonOk<'/admin/credentials', 'get'>['data'][number];

const STATE_TEXT: Record<Credential['state'], string> = {
  closed: 'healthy',
  'half-open': 'probing (one trial call allowed)',
  open: 'failing: calls skip it',
  disabled: 'breaker off',
};

/** Providers with a credential whose breaker is open: the ones calls are routed around. */
function failing(creds: Credential[]): string[] {
  return [...new Set(creds.filter((c) => c.state === 'open').map((c) => c.provider))];
}

/**
 * Operator-only: the provider credentials' health on this node (GET /admin/credentials) — each
 * operator key and recently failing BYOK credential, with its circuit breaker's state. Refreshed
 * every 15 s while the page is open.
 */
export function ProviderHealthPage() {
  const creds = useQuery({
    queryKey: ['admin', 'credentials'],
    queryFn: () => call(api.GET('/admin/credentials')),
    refetchInterval: 15_000,
  });
  const rows = creds.data?.data ?? [];
  const down = failing(rows);
  return (
    <Page
      title="Provider health"
      actions={
        <button type="button" onClick={() => creds.refetch()} disabled={creds.isFetching}>
          {creds.isFetching ? 'Refreshing…' : 'Refresh'}
        </button>
      }
    >
      <ErrorBanner error={creds.error} />
      {creds.data && (
        <p role="status">
          {rows.length === 0
            ? 'No provider credential is configured on this node (only the built-in models answer).'
            : down.length === 0
              ? `All ${rows.length} credential${rows.length === 1 ? '' : 's'} healthy.`
              : `Failing: ${down.join(', ')}.`}
        </p>
      )}
      <p className="hint">
        This node's view: each gateway keeps its own breakers. A credential whose breaker is open is skipped
        until the time shown, then one call probes it.
      </p>
      {creds.isPending ? (
        <p>Loading…</p>
      ) : (
        <Table
          caption="Provider credentials and their circuit breakers"
          rows={rows}
          rowKey={(c) => `${c.provider}/${c.kind}/${c.name}`}
          empty="No credentials."
          columns={[
            { header: 'Provider', cell: (c) => c.provider },
            { header: 'Kind', cell: (c) => (c.kind === 'byok' ? 'BYOK' : 'operator key') },
            { header: 'Name', cell: (c) => c.name },
            { header: 'Fingerprint', cell: (c) => (c.fingerprint ? <code>{c.fingerprint}</code> : '') },
            { header: 'Weight', numeric: true, cell: (c) => c.weight ?? '' },
            { header: 'State', cell: (c) => STATE_TEXT[c.state] },
            { header: 'Failures in a row', numeric: true, cell: (c) => c.consecutive_failures },
            {
              header: 'Last failure',
              cell: (c) =>
                c.last_error_at
                  ? `${new Date(c.last_error_at).toLocaleString()}${c.last_status !== null ? ` (${c.last_status === 0 ? 'timeout or connection error' : `HTTP ${c.last_status}`})` : ''}`
                  : '',
            },
            {
              header: 'Open until',
              cell: (c) => (c.open_until ? new Date(c.open_until).toLocaleString() : ''),
            },
          ]}
        />
      )}
    </Page>
  );
}
