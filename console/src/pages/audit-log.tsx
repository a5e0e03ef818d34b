import { useInfiniteQuery } from '@tanstack/react-query';
import { type FormEvent, useEffect, useMemo, useRef, useState } from 'react';
import { api, call, type JsonOk, type paths } from '../api/client';
import { detailsColumn } from '../components/details-toggle';
import { ErrorBanner } from '../components/error-banner';
import { Field, SelectField } from '../components/field';
import { FilterActions, FilterProblem } from '../components/filter-actions';
import { LoadMore } from '../components/load-more';
import { Page } from '../components/page';
import { Table } from '../components/table';
import { useSession } from '../session';
import { useOrganizations } from './operator/org-select';

type Query = NonNullable<paths['/admin/audit-log']['get']['parameters']['query']>;
type AuditEvent = JsonOk<'/audit-log', 'get'>['data'][number];

const PAGE_SIZE = 50;
const ALL_ORGS = '';
const OPERATOR_ONLY = 'none';

/** Every management write of the organization (or, for the operator, of the gateway), newest first. */
export function AuditLogPage() {
  const operator = useSession()?.role === 'operator';
  const [filter, setFilter] = useState<Query>({});
  const [open, setOpen] = useState<string | null>(null);

  const list = useInfiniteQuery({
    queryKey: ['audit-log', operator, filter],
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) => {
      const query = { ...filter, limit: PAGE_SIZE, ...(pageParam ? { cursor: pageParam } : {}) };
      if (operator) return call(api.GET('/admin/audit-log', { params: { query } }));
      const { organization_id: _, ...own } = query;
      return call(api.GET('/audit-log', { params: { query: own } }));
    },
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });
  const rows = useMemo(() => list.data?.pages.flatMap((p) => p.data) ?? [], [list.data]);
  const opened = rows.find((e) => e.id === open);

  return (
    <Page title="Audit log">
      <p>
        Every write to the management {operator ? 'and operator APIs' : 'API'}: who made it, what it changed
        (before and after, secrets masked) and how it was answered — refused attempts included.
      </p>
      <AuditFilters
        operator={operator}
        onApply={(q) => {
          setFilter(q);
          setOpen(null);
        }}
      />
      <ErrorBanner error={list.error} />
      {opened && <AuditDetail event={opened} onClose={() => setOpen(null)} />}
      {list.isPending ? (
        <p>Loading…</p>
      ) : (
        <>
          <Table
            caption={`Audit events, newest first (${rows.length} shown${list.hasNextPage ? ', more below' : ''})`}
            rows={rows}
            rowKey={(e) => e.id}
            empty="No audit events match these filters."
            columns={[
              { header: 'Time', cell: (e) => new Date(e.at).toLocaleString() },
              { header: 'Actor', cell: actorOf },
              { header: 'Action', cell: (e) => <code>{e.action}</code> },
              { header: 'Resource', cell: (e) => `${e.resource.type} ${e.resource.id ?? ''}` },
              ...(operator
                ? [{ header: 'Organization', cell: (e: AuditEvent) => e.organization_id ?? 'operator' }]
                : []),
              { header: 'Status', numeric: true, cell: (e) => e.status },
              detailsColumn<AuditEvent>({
                idOf: (e) => e.id,
                label: (e) => `Details of ${e.action} at ${new Date(e.at).toLocaleString()}`,
                open,
                setOpen,
              }),
            ]}
          />
          <LoadMore list={list} />
        </>
      )}
    </Page>
  );
}

const KINDS: Record<string, string> = {
  management_key: 'Management key',
  api_key: 'API key',
  operator: 'Operator',
  system: 'System',
};

function actorOf(e: AuditEvent): string {
  const kind = KINDS[e.actor.kind] ?? e.actor.kind;
  return e.actor.id ? `${kind} ${e.actor.id.slice(0, 10)}…` : kind;
}

interface Draft {
  organization_id: string;
  from: string;
  to: string;
  actor: string;
  action: string;
  resource_type: string;
  resource_id: string;
}
const EMPTY: Draft = {
  organization_id: ALL_ORGS,
  from: '',
  to: '',
  actor: '',
  action: '',
  resource_type: '',
  resource_id: '',
};

function AuditFilters({ operator, onApply }: { operator: boolean; onApply: (q: Query) => void }) {
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
    const q: Query = {};
    if (d.from) q.from = new Date(d.from).toISOString();
    if (d.to) q.to = new Date(d.to).toISOString();
    if (q.from && q.to && q.from >= q.to) return setProblem('“From” must be before “To”.');
    for (const f of ['actor', 'action', 'resource_type', 'resource_id'] as const)
      if (d[f].trim()) q[f] = d[f].trim();
    if (operator && d.organization_id) q.organization_id = d.organization_id;
    setProblem(null);
    onApply(q);
  };

  return (
    <form onSubmit={submit} aria-label="Filters" noValidate>
      <fieldset className="filters">
        <legend>Filters</legend>
        <div className="form-row">
          {operator && <OrganizationFilter value={d.organization_id} onChange={set('organization_id')} />}
          <Field label="From" type="datetime-local" {...input('from')} />
          <Field label="To" type="datetime-local" {...input('to')} />
          <Field label="Actor" placeholder="key hash or user id" {...input('actor')} />
          <Field label="Action" placeholder="e.g. key.update" {...input('action')} />
          <Field label="Resource type" placeholder="e.g. guardrail" {...input('resource_type')} />
          <Field label="Resource id" {...input('resource_id')} />
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

/** Operator only: the organization list comes from /admin (a management key would be refused). */
function OrganizationFilter({ value, onChange }: { value: string; onChange: (v: string) => void }) {
  const orgs = useOrganizations();
  return (
    <SelectField
      label="Organization"
      name="organization_id"
      value={value}
      onChange={onChange}
      options={[
        { value: ALL_ORGS, label: 'All' },
        { value: OPERATOR_ONLY, label: 'Operator-level only' },
        ...(orgs.data?.data ?? []).map((o) => ({ value: o.id, label: o.name })),
      ]}
    />
  );
}

/** `{a: {b: 1}}` as `[['a.b', 1]]`: the leaves of a JSON value by path (arrays as whole values). */
function leaves(value: unknown, prefix = ''): [string, unknown][] {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return prefix ? [[prefix, value]] : value === null ? [] : [['(value)', value]];
  return Object.entries(value).flatMap(([k, v]) => leaves(v, prefix ? `${prefix}.${k}` : k));
}

const show = (v: unknown) => (v === undefined ? '—' : JSON.stringify(v));

/** The fields a write changed: before and after side by side (only those that differ). */
export function diffOf(before: unknown, after: unknown): { field: string; before: string; after: string }[] {
  const b = new Map(leaves(before));
  const a = new Map(leaves(after));
  const fields = [...new Set([...b.keys(), ...a.keys()])].sort();
  return fields
    .map((field) => ({ field, before: show(b.get(field)), after: show(a.get(field)) }))
    .filter((r) => r.before !== r.after);
}

function AuditDetail({ event: e, onClose }: { event: AuditEvent; onClose: () => void }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    heading.current?.focus();
  }, []);
  const changes = diffOf(e.before, e.after);
  const pairs: [string, string][] = [
    ['When', new Date(e.at).toLocaleString()],
    ['Actor', `${KINDS[e.actor.kind] ?? e.actor.kind}${e.actor.id ? ` (key ${e.actor.id})` : ''}`],
    ['User', e.actor.user_id ?? '—'],
    ['Resource', `${e.resource.type} ${e.resource.id ?? ''}`],
    ['Status', String(e.status)],
    ['Workspace', e.workspace_id ?? '—'],
    ['Request id', e.request_id ?? '—'],
    ['Address', e.remote_address ?? '—'],
  ];
  return (
    <section className="detail" aria-labelledby="audit-detail">
      <div className="page-head">
        <h2 id="audit-detail" ref={heading} tabIndex={-1}>
          <code>{e.action}</code>
        </h2>
        <button type="button" onClick={onClose}>
          Close details
        </button>
      </div>
      <dl>
        {pairs.map(([k, v]) => (
          <div key={k} className="pair">
            <dt>{k}</dt>
            <dd>{v}</dd>
          </div>
        ))}
      </dl>
      <Table
        caption="Changes (before → after)"
        rows={changes}
        rowKey={(r) => r.field}
        empty={e.status >= 400 ? 'Refused: nothing changed.' : 'No field changed.'}
        columns={[
          { header: 'Field', cell: (r) => <code>{r.field}</code> },
          { header: 'Before', cell: (r) => <code>{r.before}</code> },
          { header: 'After', cell: (r) => <code>{r.after}</code> },
        ]}
      />
      <h3>Request</h3>
      <pre>{JSON.stringify(e.request, null, 2) ?? 'null'}</pre>
    </section>
  );
}
