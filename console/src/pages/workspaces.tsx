import { useMutation } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, call, type JsonBody, type JsonOk } from '../api/client';
import { ErrorBanner } from '../components/error-banner';
import { Field, SelectField } from '../components/field';
import { Page } from '../components/page';
import { RowActions } from '../components/row-actions';
import { Table } from '../components/table';
import { fetchWorkspaces, WORKSPACES } from '../components/workspace-picker';
import { useResource } from '../lib/use-resource';
import { Budgets } from './workspaces/budgets';
import { Members, OrganizationMembers } from './workspaces/members';
import { VideoWebhooks } from './workspaces/webhooks';

type Workspace = JsonOk<'/workspaces/{id}', 'get'>['data'];
type UpdateBody = JsonBody<'/workspaces/{id}', 'patch'>;

const SORTS = [
  { value: '', label: 'Gateway default' },
  { value: 'price', label: 'Price' },
  { value: 'throughput', label: 'Throughput' },
  { value: 'latency', label: 'Latency' },
  { value: 'exacto', label: 'Exacto' },
];

/** Workspaces of the organization (create, edit, delete), their members, budgets and video webhooks, and the organization's members. */
export function WorkspacesPage() {
  const [editing, setEditing] = useState<string | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const workspaces = useResource({
    queryKey: WORKSPACES,
    list: fetchWorkspaces,
    update: (id, body: UpdateBody) => call(api.PATCH('/workspaces/{id}', { params: { path: { id } }, body })),
    remove: (id) => call(api.DELETE('/workspaces/{id}', { params: { path: { id } } })),
    onUpdated: () => setEditing(null),
  });
  const { list, update, remove } = workspaces;
  const create = useMutation({
    mutationFn: (body: JsonBody<'/workspaces', 'post'>) => call(api.POST('/workspaces', { body })),
    onSuccess: workspaces.invalidate,
  });
  const rows = list.data?.data ?? [];
  const edited = rows.find((w) => w.id === editing);
  const opened = rows.find((w) => w.id === open);

  return (
    <Page title="Workspaces">
      <ErrorBanner error={list.error} />
      <ErrorBanner error={workspaces.actionError} onDismiss={workspaces.dismissActionError} />
      <section aria-labelledby="new-workspace">
        <h2 id="new-workspace">Create a workspace</h2>
        <ErrorBanner error={create.error} onDismiss={() => create.reset()} />
        <WorkspaceForm
          key={create.data?.data.id ?? 'new'}
          pending={create.isPending}
          submitLabel="Create workspace"
          onSubmit={(body) => create.mutate(body as JsonBody<'/workspaces', 'post'>)}
        />
      </section>
      <h2>Workspaces</h2>
      {list.isPending ? (
        <p>Loading…</p>
      ) : (
        <Table
          caption="Workspaces, oldest first"
          rows={rows}
          rowKey={(w) => w.id}
          columns={[
            { header: 'Name', cell: (w) => (w.is_default ? `${w.name} (default)` : w.name) },
            { header: 'Slug', cell: (w) => <code>{w.slug}</code> },
            { header: 'Description', cell: (w) => w.description ?? '—' },
            { header: 'Default model', cell: (w) => w.default_text_model ?? '—' },
            { header: 'Provider order', cell: (w) => w.default_provider_sort ?? 'default' },
            {
              header: 'Actions',
              cell: (w) => (
                <RowActions
                  name={w.name}
                  confirm={`Delete “${w.name}” with its budgets and guardrails`}
                  busy={remove.isPending}
                  deletable={!w.is_default}
                  onDelete={(done) => remove.mutate(w.id, { onSettled: done })}
                >
                  <button type="button" onClick={() => setEditing(w.id)} aria-label={`Edit ${w.name}`}>
                    Edit
                  </button>
                  <button
                    type="button"
                    onClick={() => setOpen(w.id)}
                    aria-label={`Members and budgets of ${w.name}`}
                  >
                    Members and budgets
                  </button>
                </RowActions>
              ),
            },
          ]}
        />
      )}
      {edited && (
        <section aria-labelledby="edit-workspace">
          <h2 id="edit-workspace">Edit “{edited.name}”</h2>
          <WorkspaceForm
            key={edited.id}
            initial={edited}
            pending={update.isPending}
            submitLabel="Save workspace"
            onSubmit={(body) => update.mutate({ id: edited.id, body })}
            onCancel={() => setEditing(null)}
          />
        </section>
      )}
      {opened && (
        <section aria-labelledby="workspace-detail" key={opened.id}>
          <h2 id="workspace-detail">“{opened.name}”: members and budgets</h2>
          <Members workspace={opened} />
          <Budgets workspace={opened} />
          <VideoWebhooks workspace={opened} />
        </section>
      )}
      <OrganizationMembers />
    </Page>
  );
}

function WorkspaceForm(props: {
  initial?: Workspace;
  pending: boolean;
  submitLabel: string;
  onSubmit: (body: UpdateBody) => void;
  onCancel?: () => void;
}) {
  const w = props.initial;
  const [name, setName] = useState(w?.name ?? '');
  const [slug, setSlug] = useState(w?.slug ?? '');
  const [description, setDescription] = useState(w?.description ?? '');
  const [model, setModel] = useState(w?.default_text_model ?? '');
  const [sort, setSort] = useState(w?.default_provider_sort ?? '');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    props.onSubmit({
      name: name.trim(),
      slug: slug.trim(),
      description: description.trim() || null,
      default_text_model: model.trim() || null,
      default_provider_sort: (sort || null) as UpdateBody['default_provider_sort'],
    });
  };
  return (
    <form className="form-row" onSubmit={submit} aria-label={w ? `Settings of ${w.name}` : 'New workspace'}>
      <Field label="Name" name="ws_name" required value={name} onChange={(e) => setName(e.target.value)} />
      <Field
        label="Slug"
        name="slug"
        required
        value={slug}
        onChange={(e) => setSlug(e.target.value)}
        hint="Lowercase letters and digits, joined by hyphens"
      />
      <Field
        label="Description"
        name="ws_description"
        value={description}
        onChange={(e) => setDescription(e.target.value)}
      />
      <Field
        label="Default model"
        name="default_text_model"
        value={model}
        onChange={(e) => setModel(e.target.value)}
        hint="Empty: none"
      />
      <SelectField
        label="Provider order"
        name="default_provider_sort"
        value={sort}
        onChange={setSort}
        options={SORTS}
      />
      <span className="actions">
        <button type="submit" disabled={props.pending}>
          {props.pending ? 'Saving…' : props.submitLabel}
        </button>
        {props.onCancel && (
          <button type="button" onClick={props.onCancel}>
            Cancel
          </button>
        )}
      </span>
    </form>
  );
}
