import { useState } from 'react';
import { api, call, type JsonOk } from '../../api/client';
import { ErrorBanner } from '../../components/error-banner';
import { Field } from '../../components/field';
import { useResource } from '../../lib/use-resource';
import { CheckField, usd } from '../guardrails/inputs';

type Workspace = JsonOk<'/workspaces/{id}', 'get'>['data'];
type Budget = JsonOk<'/workspaces/{workspace_ref}/budgets', 'get'>['data'][number];
type Interval = 'daily' | 'weekly' | 'monthly' | 'lifetime';
const INTERVALS: { interval: Interval; label: string }[] = [
  { interval: 'daily', label: 'Daily' },
  { interval: 'weekly', label: 'Weekly' },
  { interval: 'monthly', label: 'Monthly' },
  { interval: 'lifetime', label: 'Lifetime' },
];
const intervalOf = (b: Budget): Interval => b.reset_interval ?? 'lifetime';

/** A workspace's budgets, one per period: limit and current spend; set, change, remove. */
export function Budgets({ workspace }: { workspace: Workspace }) {
  const ref = workspace.id;
  const resource = useResource({
    queryKey: ['workspaces', ref, 'budgets'],
    list: () =>
      call(api.GET('/workspaces/{workspace_ref}/budgets', { params: { path: { workspace_ref: ref } } })),
    update: (interval, { limit, byok }: { limit: number; byok?: boolean }) =>
      call(
        api.PUT('/workspaces/{workspace_ref}/budgets/{interval}', {
          params: { path: { workspace_ref: ref, interval: interval as Interval } },
          body: { limit_usd: limit, ...(byok !== undefined ? { include_byok_in_budgets: byok } : {}) },
        }),
      ),
    remove: (interval) =>
      call(
        api.DELETE('/workspaces/{workspace_ref}/budgets/{interval}', {
          params: { path: { workspace_ref: ref, interval: interval as Interval } },
        }),
      ),
  });
  const { list: budgets, update: put, remove } = resource;
  const byInterval = new Map((budgets.data?.data ?? []).map((b) => [intervalOf(b), b]));
  const includeByok = budgets.data?.include_byok_in_budgets ?? false;
  return (
    <>
      <h3>Budgets</h3>
      <p className="hint">
        Periods restart at midnight UTC (weeks on Monday, months on the 1st). A shorter period's limit must be
        below a longer one's.
      </p>
      <ErrorBanner error={budgets.error} />
      <ErrorBanner error={resource.actionError} onDismiss={resource.dismissActionError} />
      {budgets.data && (
        <>
          {budgets.data.data.length === 0 && (
            <p className="hint">No budget yet: the workspace's spend is not capped.</p>
          )}
          <div className="table-wrap">
            <table>
              <caption>Budgets of {workspace.name}</caption>
              <thead>
                <tr>
                  <th scope="col">Period</th>
                  <th scope="col" className="num">
                    Spent
                  </th>
                  <th scope="col">Limit (USD)</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {INTERVALS.map(({ interval, label }) => (
                  <BudgetRow
                    key={`${interval}-${byInterval.get(interval)?.updated_at ?? 'none'}`}
                    label={label}
                    budget={byInterval.get(interval)}
                    busy={resource.busy}
                    onSave={(limit) => put.mutate({ id: interval, body: { limit } })}
                    onDelete={() => remove.mutate(interval)}
                  />
                ))}
              </tbody>
            </table>
          </div>
          <CheckField
            label="BYOK spend counts against these budgets"
            disabled={budgets.data.data.length === 0 || put.isPending}
            checked={includeByok}
            onChange={(byok) => {
              // The flag travels with a budget write; without a budget there is nothing it applies to.
              const any = budgets.data.data[0];
              if (any) put.mutate({ id: intervalOf(any), body: { limit: any.limit_usd, byok } });
            }}
          />
        </>
      )}
    </>
  );
}

function BudgetRow(props: {
  label: string;
  budget: Budget | undefined;
  busy: boolean;
  onSave: (limit: number) => void;
  onDelete: () => void;
}) {
  const b = props.budget;
  const [limit, setLimit] = useState(b ? String(b.limit_usd) : '');
  return (
    <tr>
      <th scope="row">{props.label}</th>
      <td className="num">{b ? `${usd(b.spent_usd)} of ${usd(b.limit_usd)}` : '—'}</td>
      <td>
        <form
          className="form-row"
          aria-label={`${props.label} budget`}
          onSubmit={(e) => {
            e.preventDefault();
            props.onSave(Number(limit));
          }}
        >
          <Field
            label={`${props.label} limit (USD)`}
            type="number"
            min="0.01"
            step="any"
            required
            value={limit}
            onChange={(e) => setLimit(e.target.value)}
          />
          <button type="submit" disabled={props.busy || limit === ''}>
            {b ? 'Save' : 'Set budget'}
          </button>
        </form>
      </td>
      <td>
        {b ? (
          <button
            type="button"
            className="danger"
            disabled={props.busy}
            onClick={props.onDelete}
            aria-label={`Remove the ${props.label.toLowerCase()} budget`}
          >
            Remove
          </button>
        ) : (
          'no budget'
        )}
      </td>
    </tr>
  );
}
