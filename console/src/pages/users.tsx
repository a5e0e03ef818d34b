import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, call, type JsonBody, type JsonOk } from '../api/client';
import { CopyButton } from '../components/copy-button';
import { ErrorBanner } from '../components/error-banner';
import { Field, SelectField } from '../components/field';
import { Page } from '../components/page';
import { Table } from '../components/table';
import { OrganizationSelect, useOrganizationId } from './operator/org-select';

type User = JsonOk<'/admin/users', 'get'>['data'][number];
type NewUser = JsonBody<'/admin/users', 'post'>;

const ROLES = [
  { value: 'member', label: 'Member' },
  { value: 'admin', label: 'Administrator' },
  { value: 'owner', label: 'Owner' },
];

/** Operator-only: an organization's users — list, add, and give one a key (its secret shown once). */
export function UsersPage() {
  const [picked, setPicked] = useState('');
  const orgId = useOrganizationId(picked);
  const client = useQueryClient();
  const users = useQuery({
    queryKey: ['admin', 'users', orgId],
    enabled: orgId !== undefined,
    queryFn: () =>
      call(api.GET('/admin/users', { params: { query: { organization_id: orgId ?? '', limit: 100 } } })),
  });
  const [secret, setSecret] = useState<{ name: string; key: string } | null>(null);
  const makeKey = useMutation({
    mutationFn: ({ user, management }: { user: User; management: boolean }) =>
      call(
        api.POST('/admin/keys', {
          body: {
            name: `${user.email} ${management ? 'management' : 'api'}`,
            user_id: user.id,
            organization_id: user.organization_id,
            management,
          },
        }),
      ),
    onSuccess: (res) => setSecret({ name: res.data.name, key: res.key }),
  });

  return (
    <Page title="Users">
      <OrganizationSelect value={picked} onChange={setPicked} />
      <ErrorBanner error={users.error} />
      {orgId && (
        <AddUser
          organizationId={orgId}
          onAdded={() => client.invalidateQueries({ queryKey: ['admin', 'users'] })}
        />
      )}
      <ErrorBanner error={makeKey.error} onDismiss={() => makeKey.reset()} />
      {secret && (
        <section className="banner banner-secret" aria-labelledby="user-key">
          <h2 id="user-key">Key “{secret.name}” created</h2>
          <p>Hand it to the user now: it is shown only this once.</p>
          <p>
            <code className="secret" data-testid="new-secret">
              {secret.key}
            </code>{' '}
            <CopyButton text={secret.key} label="Copy key" />
          </p>
          <button type="button" onClick={() => setSecret(null)}>
            I have copied it
          </button>
        </section>
      )}
      <h2>Members</h2>
      {users.isPending && orgId ? (
        <p>Loading…</p>
      ) : (
        <Table
          caption="Users of the organization, in the order they joined"
          rows={users.data?.data ?? []}
          rowKey={(u) => u.id}
          empty="No users in this organization yet."
          columns={[
            { header: 'Email', cell: (u) => u.email },
            { header: 'Name', cell: (u) => [u.first_name, u.last_name].filter(Boolean).join(' ') },
            { header: 'Role', cell: (u) => u.role },
            { header: 'Interns', cell: (u) => (u.interns_programme ? 'yes' : 'no') },
            { header: 'Joined', cell: (u) => new Date(u.created_at).toLocaleString() },
            {
              header: 'Keys',
              cell: (u) => (
                <span className="actions">
                  <button
                    type="button"
                    disabled={makeKey.isPending}
                    onClick={() => makeKey.mutate({ user: u, management: true })}
                    aria-label={`Create a management key for ${u.email}`}
                  >
                    Management key
                  </button>
                  <button
                    type="button"
                    disabled={makeKey.isPending}
                    onClick={() => makeKey.mutate({ user: u, management: false })}
                    aria-label={`Create an API key for ${u.email}`}
                  >
                    API key
                  </button>
                </span>
              ),
            },
          ]}
        />
      )}
    </Page>
  );
}

function AddUser({ organizationId, onAdded }: { organizationId: string; onAdded: () => void }) {
  const [email, setEmail] = useState('');
  const [role, setRole] = useState('member');
  const [first, setFirst] = useState('');
  const [last, setLast] = useState('');
  const [interns, setInterns] = useState(false);
  const add = useMutation({
    mutationFn: (body: NewUser) => call(api.POST('/admin/users', { body })),
    onSuccess: () => {
      setEmail('');
      setFirst('');
      setLast('');
      setInterns(false);
      onAdded();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    add.mutate({
      email: email.trim(),
      organization_id: organizationId,
      role: role as NewUser['role'],
      interns_programme: interns,
      first_name: first.trim() || null,
      last_name: last.trim() || null,
    });
  };
  return (
    <section aria-labelledby="add-user">
      <h2 id="add-user">Add a user</h2>
      <ErrorBanner error={add.error} onDismiss={() => add.reset()} />
      {add.data && <p role="status">User {add.data.data.email} added.</p>}
      <form className="form-row" onSubmit={submit}>
        <Field
          label="Email"
          name="email"
          type="email"
          required
          value={email}
          onChange={(e) => setEmail(e.target.value)}
        />
        <SelectField label="Role" name="role" value={role} onChange={setRole} options={ROLES} />
        <Field
          label="First name"
          name="first_name"
          value={first}
          onChange={(e) => setFirst(e.target.value)}
        />
        <Field label="Last name" name="last_name" value={last} onChange={(e) => setLast(e.target.value)} />
        <div className="field check">
          <label>
            <input type="checkbox" checked={interns} onChange={(e) => setInterns(e.target.checked)} /> In the
            interns programme
          </label>
        </div>
        <button type="submit" disabled={add.isPending}>
          {add.isPending ? 'Adding…' : 'Add user'}
        </button>
      </form>
    </section>
  );
}
