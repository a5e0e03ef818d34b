import { type FormEvent, useState } from 'react';
import type { paths } from '../../api/client';
import { Field, SelectField } from '../../components/field';
import { FilterActions, FilterProblem } from '../../components/filter-actions';
import type { ApiKey } from './workspace-keys';

export type ListQuery = NonNullable<paths['/generations']['get']['parameters']['query']>;

/** The form's fields as typed (strings), before they become the list's query. */
interface Draft {
  from: string;
  to: string;
  key: string;
  user: string;
  model: string;
  provider: string;
  status: string;
  streamed: string;
  lane: string;
  min_cost: string;
  max_cost: string;
}
const EMPTY: Draft = {
  from: '',
  to: '',
  key: '',
  user: '',
  model: '',
  provider: '',
  status: '',
  streamed: '',
  lane: '',
  min_cost: '',
  max_cost: '',
};

/** A datetime-local value (the browser's time zone) as ISO 8601 UTC. */
const isoOf = (local: string) => new Date(local).toISOString();

/** The query of a draft, or the message saying what is wrong with it. */
export function queryOf(d: Draft): ListQuery | string {
  const q: ListQuery = {};
  if (d.from) q.from = isoOf(d.from);
  if (d.to) q.to = isoOf(d.to);
  if (q.from && q.to && q.from >= q.to) return '“From” must be before “To”.';
  for (const f of ['key', 'user', 'model', 'provider'] as const) if (d[f].trim()) q[f] = d[f].trim();
  if (d.status) q.status = d.status as ListQuery['status'];
  if (d.streamed) q.streamed = d.streamed as ListQuery['streamed'];
  if (d.lane) q.lane = d.lane as ListQuery['lane'];
  for (const f of ['min_cost', 'max_cost'] as const) {
    if (!d[f].trim()) continue;
    const n = Number(d[f]);
    if (!Number.isFinite(n) || n < 0)
      return `${f === 'min_cost' ? 'Minimum' : 'Maximum'} cost must be a number of dollars, 0 or more.`;
    q[f] = n;
  }
  if (q.min_cost !== undefined && q.max_cost !== undefined && q.min_cost > q.max_cost)
    return 'The minimum cost is above the maximum cost.';
  return q;
}

const ANY = { value: '', label: 'Any' };

/** The list's filters: applied on submit; Clear resets them all. */
export function Filters({ keys, onApply }: { keys: ApiKey[]; onApply: (q: ListQuery) => void }) {
  const [d, setD] = useState<Draft>(EMPTY);
  const [problem, setProblem] = useState<string | null>(null);
  const set = (f: keyof Draft) => (v: string) => setD((old) => ({ ...old, [f]: v }));
  const input = (f: keyof Draft) => ({
    name: f,
    value: d[f],
    onChange: (e: { target: { value: string } }) => set(f)(e.target.value),
  });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const q = queryOf(d);
    if (typeof q === 'string') return setProblem(q);
    setProblem(null);
    onApply(q);
  };

  return (
    <form onSubmit={submit} aria-label="Filters" noValidate>
      <fieldset className="filters">
        <legend>Filters</legend>
        <div className="form-row">
          <Field label="From" type="datetime-local" {...input('from')} />
          <Field label="To" type="datetime-local" {...input('to')} />
          <SelectField
            label="API key"
            name="key"
            value={d.key}
            onChange={set('key')}
            options={[ANY, ...keys.map((k) => ({ value: k.hash, label: k.name }))]}
          />
          <Field label="User id" {...input('user')} />
          <Field label="Model" placeholder="e.g. openai/gpt-4o" {...input('model')} />
          <Field label="Provider" placeholder="e.g. openai" {...input('provider')} />
        </div>
        <div className="form-row">
          <SelectField
            label="Status"
            name="status"
            value={d.status}
            onChange={set('status')}
            options={[
              ANY,
              { value: 'success', label: 'Success' },
              { value: 'error', label: 'Error' },
              { value: 'cancelled', label: 'Cancelled' },
            ]}
          />
          <SelectField
            label="Streamed"
            name="streamed"
            value={d.streamed}
            onChange={set('streamed')}
            options={[ANY, { value: 'true', label: 'Streamed' }, { value: 'false', label: 'Not streamed' }]}
          />
          <SelectField
            label="Lane"
            name="lane"
            value={d.lane}
            onChange={set('lane')}
            options={[
              ANY,
              { value: 'passthrough', label: 'Passed through' },
              { value: 'translated', label: 'Translated' },
            ]}
          />
          <Field label="Min cost (USD)" type="number" min="0" step="any" {...input('min_cost')} />
          <Field label="Max cost (USD)" type="number" min="0" step="any" {...input('max_cost')} />
          <FilterActions
            onClear={() => {
              setD(EMPTY);
              setProblem(null);
              onApply({});
            }}
          />
        </div>
        <FilterProblem problem={problem} />
      </fieldset>
    </form>
  );
}
