import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, call } from '../../api/client';
import { ErrorBanner } from '../../components/error-banner';
import { SelectField } from '../../components/field';
import { Table } from '../../components/table';
import type { Guardrail } from './form';

/** The keys and members a guardrail applies to: listed, added, removed. */
export function Assignments({ guardrail, workspace }: { guardrail: Guardrail; workspace: string }) {
  const client = useQueryClient();
  const id = guardrail.id;
  const keyAssignments = useQuery({
    queryKey: ['guardrails', id, 'keys'],
    queryFn: () =>
      call(api.GET('/guardrails/{id}/assignments/keys', { params: { path: { id }, query: { limit: 100 } } })),
  });
  const memberAssignments = useQuery({
    queryKey: ['guardrails', id, 'members'],
    queryFn: () =>
      call(
        api.GET('/guardrails/{id}/assignments/members', { params: { path: { id }, query: { limit: 100 } } }),
      ),
  });
  const keys = useQuery({
    queryKey: ['keys', workspace],
    queryFn: () =>
      call(
        api.GET('/keys', {
          params: { query: { workspace_id: workspace || undefined, include_disabled: true } },
        }),
      ),
  });
  const members = useQuery({
    queryKey: ['organization', 'members'],
    queryFn: () => call(api.GET('/organization/members', { params: { query: { limit: 100 } } })),
  });
  const changed = () => client.invalidateQueries({ queryKey: ['guardrails'] });
  const keysChange = useMutation({
    mutationFn: ({ hash, add }: { hash: string; add: boolean }) =>
      call(
        api.POST(add ? '/guardrails/{id}/assignments/keys' : '/guardrails/{id}/assignments/keys/remove', {
          params: { path: { id } },
          body: { key_hashes: [hash] },
        }),
      ),
    onSuccess: changed,
  });
  const membersChange = useMutation({
    mutationFn: ({ user, add }: { user: string; add: boolean }) =>
      call(
        api.POST(
          add ? '/guardrails/{id}/assignments/members' : '/guardrails/{id}/assignments/members/remove',
          {
            params: { path: { id } },
            body: { member_user_ids: [user] },
          },
        ),
      ),
    onSuccess: changed,
  });
  const [key, setKey] = useState('');
  const [member, setMember] = useState('');
  const memberName = (userId: string) => members.data?.data.find((m) => m.id === userId)?.email ?? userId;
  const assignedKeys = new Set(keyAssignments.data?.data.map((a) => a.key_hash));
  const assignedMembers = new Set(memberAssignments.data?.data.map((a) => a.user_id));

  return (
    <section aria-labelledby="assignments">
      <h2 id="assignments">Who “{guardrail.name}” applies to</h2>
      <ErrorBanner error={keyAssignments.error ?? memberAssignments.error ?? keys.error ?? members.error} />
      <ErrorBanner
        error={keysChange.error ?? membersChange.error}
        onDismiss={() => {
          keysChange.reset();
          membersChange.reset();
        }}
      />
      <form
        className="form-row"
        onSubmit={(e: FormEvent) => {
          e.preventDefault();
          if (key) keysChange.mutate({ hash: key, add: true }, { onSuccess: () => setKey('') });
        }}
      >
        <SelectField
          label="API key to assign"
          name="assign_key"
          value={key}
          onChange={setKey}
          options={[
            { value: '', label: 'Choose a key…' },
            ...(keys.data?.data ?? [])
              .filter((k) => !assignedKeys.has(k.hash))
              .map((k) => ({ value: k.hash, label: `${k.name} (${k.label})` })),
          ]}
        />
        <button type="submit" disabled={!key || keysChange.isPending}>
          Assign key
        </button>
      </form>
      <p className="hint">A key holds one guardrail: assigning it here moves it from any other.</p>
      <Table
        caption="Keys assigned"
        rows={keyAssignments.data?.data ?? []}
        rowKey={(a) => a.id}
        empty="No keys assigned."
        columns={[
          { header: 'Key', cell: (a) => a.key_name },
          { header: 'Masked', cell: (a) => <code>{a.key_label}</code> },
          { header: 'Since', cell: (a) => new Date(a.created_at).toLocaleString() },
          {
            header: 'Actions',
            cell: (a) => (
              <button
                type="button"
                disabled={keysChange.isPending}
                onClick={() => keysChange.mutate({ hash: a.key_hash, add: false })}
                aria-label={`Unassign key ${a.key_name}`}
              >
                Unassign
              </button>
            ),
          },
        ]}
      />
      <form
        className="form-row"
        onSubmit={(e: FormEvent) => {
          e.preventDefault();
          if (member) membersChange.mutate({ user: member, add: true }, { onSuccess: () => setMember('') });
        }}
      >
        <SelectField
          label="Member to assign"
          name="assign_member"
          value={member}
          onChange={setMember}
          options={[
            { value: '', label: 'Choose a member…' },
            ...(members.data?.data ?? [])
              .filter((m) => !assignedMembers.has(m.id))
              .map((m) => ({ value: m.id, label: `${m.email} (${m.role})` })),
          ]}
        />
        <button type="submit" disabled={!member || membersChange.isPending}>
          Assign member
        </button>
      </form>
      <p className="hint">A member's guardrails apply to every key they create.</p>
      <Table
        caption="Members assigned"
        rows={memberAssignments.data?.data ?? []}
        rowKey={(a) => a.id}
        empty="No members assigned."
        columns={[
          { header: 'Member', cell: (a) => memberName(a.user_id) },
          { header: 'Since', cell: (a) => new Date(a.created_at).toLocaleString() },
          {
            header: 'Actions',
            cell: (a) => (
              <button
                type="button"
                disabled={membersChange.isPending}
                onClick={() => membersChange.mutate({ user: a.user_id, add: false })}
                aria-label={`Unassign member ${memberName(a.user_id)}`}
              >
                Unassign
              </button>
            ),
          },
        ]}
      />
    </section>
  );
}
