import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { api, call } from '../api/client';
import { ErrorBanner } from '../components/error-banner';
import { Page } from '../components/page';
import { RowActions } from '../components/row-actions';
import { Table } from '../components/table';
import { WorkspacePicker } from '../components/workspace-picker';
import { useResource } from '../lib/use-resource';
import { useWorkspaceParam } from '../lib/use-workspace';
import { Assignments } from './guardrails/assignments';
import { EffectivePolicy } from './guardrails/effective';
import { type Guardrail, type GuardrailBody, GuardrailForm } from './guardrails/form';
import { usd } from './guardrails/inputs';

const GUARDRAILS = ['guardrails'] as const;

function summary(g: Guardrail): string {
  const parts = [
    g.allowed_models && `models: ${g.allowed_models.join(', ')}`,
    g.allowed_providers && `providers: ${g.allowed_providers.join(', ')}`,
    g.limit_usd !== null && `budget ${usd(g.limit_usd)} ${g.reset_interval ?? ''}`.trim(),
    g.rpm_limit !== null && `${g.rpm_limit} rpm`,
    (g.content_filters?.length || g.content_filter_builtins?.length) &&
      `${(g.content_filters?.length ?? 0) + (g.content_filter_builtins?.length ?? 0)} filters`,
  ].filter(Boolean);
  return parts.length ? parts.join('; ') : 'no restriction';
}

/**
 * Guardrails of a workspace: every policy field, create/edit/delete, the keys and members each one
 * applies to, and the policy a chosen key ends up with.
 */
export function GuardrailsPage() {
  const [workspace, setWorkspace] = useWorkspaceParam();
  const [creating, setCreating] = useState(false);
  const [editing, setEditing] = useState<string | null>(null);
  const [assigning, setAssigning] = useState<string | null>(null);
  const guardrails = useResource({
    queryKey: [...GUARDRAILS, 'list', workspace],
    scope: GUARDRAILS,
    list: () =>
      call(
        api.GET('/guardrails', { params: { query: { workspace_id: workspace || undefined, limit: 100 } } }),
      ),
    update: (id, body: GuardrailBody) =>
      call(api.PATCH('/guardrails/{id}', { params: { path: { id } }, body })),
    remove: (id) => call(api.DELETE('/guardrails/{id}', { params: { path: { id } } })),
    onUpdated: () => setEditing(null),
  });
  const { list, update, remove } = guardrails;
  const create = useMutation({
    mutationFn: (body: GuardrailBody & { name: string }) =>
      call(api.POST('/guardrails', { body: { ...body, workspace_id: workspace || undefined } })),
    onSuccess: () => {
      setCreating(false);
      return guardrails.invalidate();
    },
  });
  const rows = list.data?.data ?? [];
  const edited = rows.find((g) => g.id === editing);
  const assigned = rows.find((g) => g.id === assigning);

  return (
    <Page title="Guardrails">
      <ErrorBanner error={list.error} />
      <ErrorBanner
        error={create.error ?? guardrails.actionError}
        onDismiss={() => {
          create.reset();
          guardrails.dismissActionError();
        }}
      />
      <div className="toolbar">
        <WorkspacePicker
          value={workspace}
          onChange={(w) => {
            setWorkspace(w);
            setEditing(null);
            setAssigning(null);
          }}
        />
        {!creating && (
          <button type="button" onClick={() => setCreating(true)}>
            New guardrail
          </button>
        )}
      </div>
      {creating && (
        <section aria-labelledby="new-guardrail">
          <h2 id="new-guardrail">New guardrail</h2>
          <GuardrailForm
            submitLabel="Create guardrail"
            pending={create.isPending}
            onSubmit={(body) => create.mutate(body)}
            onCancel={() => setCreating(false)}
          />
        </section>
      )}
      <h2>Guardrails of the workspace</h2>
      {list.isPending ? (
        <p>Loading…</p>
      ) : (
        <Table
          caption="Guardrails, oldest first"
          rows={rows}
          rowKey={(g) => g.id}
          empty="No guardrails yet: keys of this workspace are unrestricted."
          columns={[
            { header: 'Name', cell: (g) => g.name },
            { header: 'Policy', cell: summary },
            { header: 'Updated', cell: (g) => new Date(g.updated_at ?? g.created_at).toLocaleString() },
            {
              header: 'Actions',
              cell: (g) => (
                <RowActions
                  name={g.name}
                  confirm={`Delete “${g.name}” and its assignments`}
                  busy={remove.isPending}
                  onDelete={(done) => remove.mutate(g.id, { onSettled: done })}
                >
                  <button type="button" onClick={() => setEditing(g.id)} aria-label={`Edit ${g.name}`}>
                    Edit
                  </button>
                  <button
                    type="button"
                    onClick={() => setAssigning(g.id)}
                    aria-label={`Assignments of ${g.name}`}
                  >
                    Assignments
                  </button>
                </RowActions>
              ),
            },
          ]}
        />
      )}
      {edited && (
        <section aria-labelledby="edit-guardrail">
          <h2 id="edit-guardrail">Edit “{edited.name}”</h2>
          <GuardrailForm
            key={edited.id}
            initial={edited}
            submitLabel="Save guardrail"
            pending={update.isPending}
            onSubmit={(body) => update.mutate({ id: edited.id, body })}
            onCancel={() => setEditing(null)}
          />
        </section>
      )}
      {assigned && <Assignments key={assigned.id} guardrail={assigned} workspace={workspace} />}
      <EffectivePolicy workspace={workspace} />
    </Page>
  );
}
