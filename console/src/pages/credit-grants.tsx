import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, call } from '../api/client';
import { ErrorBanner } from '../components/error-banner';
import { Field } from '../components/field';
import { Page } from '../components/page';
import { LedgerTable, Totals, usd } from './credits/ledger-table';
import { OrganizationSelect, useOrganizationId } from './operator/org-select';
import './credits/credits.css';

/** Operator-only: an organization's balance and ledger, and a form to add credits to it. */
export function CreditGrantsPage() {
  const [picked, setPicked] = useState('');
  const orgId = useOrganizationId(picked);
  const client = useQueryClient();
  const credits = useQuery({
    queryKey: ['admin', 'credits', orgId],
    enabled: orgId !== undefined,
    queryFn: () =>
      call(api.GET('/admin/credits', { params: { query: { organization_id: orgId ?? '', limit: 100 } } })),
  });
  const [amount, setAmount] = useState('');
  const [note, setNote] = useState('');
  const grant = useMutation({
    mutationFn: (body: { organization_id: string; amount_usd: number; note: string | null }) =>
      call(api.POST('/admin/credits', { body })),
    onSuccess: () => {
      setAmount('');
      setNote('');
      return client.invalidateQueries({ queryKey: ['admin', 'credits'] });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!orgId) return;
    grant.mutate({ organization_id: orgId, amount_usd: Number(amount), note: note.trim() || null });
  };
  return (
    <Page title="Credit grants">
      <OrganizationSelect value={picked} onChange={setPicked} />
      <ErrorBanner error={credits.error} />
      {credits.data && <Totals credits={credits.data.total_credits} usage={credits.data.total_usage} />}
      <section aria-labelledby="grant">
        <h2 id="grant">Add credits</h2>
        <ErrorBanner error={grant.error} onDismiss={() => grant.reset()} />
        {grant.data && (
          <p role="status">Added {usd(grant.data.data.amount_usd)}. The organization can spend it at once.</p>
        )}
        <form className="form-row" onSubmit={submit}>
          <Field
            label="Amount (USD)"
            name="amount_usd"
            type="number"
            min="0.01"
            step="any"
            required
            value={amount}
            onChange={(e) => setAmount(e.target.value)}
          />
          <Field
            label="Note"
            name="note"
            value={note}
            onChange={(e) => setNote(e.target.value)}
            hint="Optional"
          />
          <button type="submit" disabled={grant.isPending || !orgId}>
            {grant.isPending ? 'Adding…' : 'Add credits'}
          </button>
        </form>
      </section>
      <h2>Ledger</h2>
      {credits.isPending && orgId ? (
        <p>Loading…</p>
      ) : (
        <LedgerTable
          entries={credits.data?.data ?? []}
          caption="Credits added to the organization, newest first"
        />
      )}
    </Page>
  );
}
