import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, call } from '../api/client';
import { ErrorBanner } from '../components/error-banner';
import { Field } from '../components/field';
import { Page } from '../components/page';
import { Table } from '../components/table';
import { ORGS } from './operator/org-select';

/** Operator-only: the organizations of this gateway (GET /admin/organizations), and a new one. */
export function OrganizationsPage() {
  const client = useQueryClient();
  const orgs = useQuery({ queryKey: ORGS, queryFn: () => call(api.GET('/admin/organizations')) });
  const [name, setName] = useState('');
  const create = useMutation({
    mutationFn: (name: string) => call(api.POST('/admin/organizations', { body: { name } })),
    onSuccess: () => {
      setName('');
      return client.invalidateQueries({ queryKey: ORGS });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate(name.trim());
  };
  return (
    <Page title="Organizations">
      <ErrorBanner error={orgs.error} />
      <section aria-labelledby="create-org">
        <h2 id="create-org">Create an organization</h2>
        <ErrorBanner error={create.error} onDismiss={() => create.reset()} />
        {create.data && (
          <p role="status">
            Organization “{create.data.data.name}” created with its default workspace. Add its first user on
            the Users page.
          </p>
        )}
        <form className="form-row" onSubmit={submit}>
          <Field
            label="Organization name"
            name="name"
            required
            value={name}
            onChange={(e) => setName(e.target.value)}
          />
          <button type="submit" disabled={create.isPending || name.trim() === ''}>
            {create.isPending ? 'Creating…' : 'Create organization'}
          </button>
        </form>
      </section>
      <h2>Organizations</h2>
      {orgs.isPending ? (
        <p>Loading…</p>
      ) : (
        <Table
          caption="Organizations, oldest first"
          rows={orgs.data?.data ?? []}
          rowKey={(o) => o.id}
          columns={[
            { header: 'Name', cell: (o) => o.name },
            { header: 'ID', cell: (o) => <code>{o.id}</code> },
            { header: 'Default workspace', cell: (o) => <code>{o.default_workspace_id}</code> },
            { header: 'Created', cell: (o) => new Date(o.created_at).toLocaleString() },
          ]}
        />
      )}
    </Page>
  );
}
