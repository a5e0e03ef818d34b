import { useQuery } from '@tanstack/react-query';
import { api, call } from '../api/client';
import { ErrorBanner } from '../components/error-banner';
import { Page } from '../components/page';
import { Table } from '../components/table';

/** Operator-only: the organizations of this gateway (GET /admin/organizations). */
export function OrganizationsPage() {
  const orgs = useQuery({
    queryKey: ['admin', 'organizations'],
    queryFn: () => call(api.GET('/admin/organizations')),
  });
  return (
    <Page title="Organizations">
      <ErrorBanner error={orgs.error} />
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
