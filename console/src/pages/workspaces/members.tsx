import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, call, type JsonOk } from '../../api/client';
import { ErrorBanner } from '../../components/error-banner';
import { SelectField } from '../../components/field';
import { Table } from '../../components/table';

type Workspace = JsonOk<'/workspaces/{id}', 'get'>['data'];
const ORG_MEMBERS = ['organization', 'members'] as const;
const fetchOrgMembers = () => call(api.GET('/organization/members', { params: { query: { limit: 100 } } }));
const personName = (m: { first_name: string | null; last_name: string | null }) =>
  [m.first_name, m.last_name].filter(Boolean).join(' ') || '—';

/** The organization's members and their roles (managed by the operator). */
export function OrganizationMembers() {
  const members = useQuery({ queryKey: ORG_MEMBERS, queryFn: fetchOrgMembers });
  return (
    <section aria-labelledby="org-members">
      <h2 id="org-members">Organization members</h2>
      <ErrorBanner error={members.error} />
      <Table
        caption="Members of the organization and their roles"
        rows={members.data?.data ?? []}
        rowKey={(m) => m.id}
        empty="No members."
        columns={[
          { header: 'Email', cell: (m) => m.email },
          { header: 'Name', cell: personName },
          { header: 'Role', cell: (m) => m.role },
          { header: 'User id', cell: (m) => <code>{m.id}</code> },
        ]}
      />
    </section>
  );
}

/** A workspace's members: listed, added from the organization, removed. */
export function Members({ workspace }: { workspace: Workspace }) {
  const client = useQueryClient();
  const id = workspace.id;
  const key = ['workspaces', id, 'members'];
  const members = useQuery({
    queryKey: key,
    queryFn: () =>
      call(api.GET('/workspaces/{id}/members', { params: { path: { id }, query: { limit: 100 } } })),
  });
  const org = useQuery({ queryKey: ORG_MEMBERS, queryFn: fetchOrgMembers });
  const change = useMutation({
    mutationFn: ({ user, add }: { user: string; add: boolean }) =>
      call(
        api.POST(add ? '/workspaces/{id}/members/add' : '/workspaces/{id}/members/remove', {
          params: { path: { id } },
          body: { user_ids: [user] },
        }),
      ),
    onSuccess: () => client.invalidateQueries({ queryKey: key }),
  });
  const [user, setUser] = useState('');
  const email = (userId: string) => org.data?.data.find((m) => m.id === userId)?.email ?? userId;
  const inside = new Set(members.data?.data.map((m) => m.user_id));
  return (
    <>
      <h3>Members</h3>
      <ErrorBanner error={members.error ?? org.error} />
      <ErrorBanner error={change.error} onDismiss={() => change.reset()} />
      {workspace.is_default ? (
        <p className="hint">Every member of the organization is a member of the default workspace.</p>
      ) : (
        <form
          className="form-row"
          onSubmit={(e) => {
            e.preventDefault();
            if (user) change.mutate({ user, add: true }, { onSuccess: () => setUser('') });
          }}
        >
          <SelectField
            label="Member to add"
            name="add_member"
            value={user}
            onChange={setUser}
            options={[
              { value: '', label: 'Choose a member…' },
              ...(org.data?.data ?? [])
                .filter((m) => !inside.has(m.id))
                .map((m) => ({ value: m.id, label: m.email })),
            ]}
          />
          <button type="submit" disabled={!user || change.isPending}>
            Add member
          </button>
        </form>
      )}
      <Table
        caption={`Members of ${workspace.name}`}
        rows={members.data?.data ?? []}
        rowKey={(m) => m.id}
        empty="No members yet."
        columns={[
          { header: 'Member', cell: (m) => email(m.user_id) },
          { header: 'Role', cell: (m) => m.role },
          {
            header: 'Actions',
            cell: (m) =>
              workspace.is_default ? (
                '—'
              ) : (
                <button
                  type="button"
                  disabled={change.isPending}
                  onClick={() => change.mutate({ user: m.user_id, add: false })}
                  aria-label={`Remove ${email(m.user_id)} from ${workspace.name}`}
                >
                  Remove
                </button>
              ),
          },
        ]}
      />
    </>
  );
}
