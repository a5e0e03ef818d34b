import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { call, dataApi } from '../api/client';
import { ApiKeyGate } from '../components/api-key-gate';
import { ErrorBanner } from '../components/error-banner';
import { Page } from '../components/page';
import { Table } from '../components/table';
import { InternChat } from './interns/chat';
import { type Action, type Intern, InternActions } from './interns/intern-actions';
import { CreateIntern, EditIntern } from './interns/intern-forms';
import './interns/interns.css';

const INTERNS = ['interns'] as const;
/** Statuses that change on their own: the list is refreshed while an intern is in one. */
const MOVING = new Set(['queued', 'provisioning', 'destroying']);

function statusText(i: Intern): string {
  if (i.progress)
    return `${i.status} (step ${i.progress.step_number} of ${i.progress.total_steps}: ${i.progress.step_label})`;
  return i.status;
}

/** Interns: list, create, start, stop, edit, delete, and chat with a running one. */
export function InternsPage() {
  return (
    <Page title="Interns">
      <ApiKeyGate>
        <Interns />
      </ApiKeyGate>
    </Page>
  );
}

function Interns() {
  const client = useQueryClient();
  const interns = useQuery({
    queryKey: INTERNS,
    queryFn: () => call(dataApi.GET('/interns', { params: { query: { limit: 200 } } })),
    refetchInterval: (q) => (q.state.data?.data.some((i) => MOVING.has(i.status)) ? 1500 : false),
  });
  const [chatWith, setChatWith] = useState<string | null>(null);
  const [editing, setEditing] = useState<string | null>(null);
  const invalidate = () => client.invalidateQueries({ queryKey: INTERNS });
  const act = useMutation({
    mutationFn: async ({ id, action }: { id: string; action: Action }): Promise<unknown> => {
      const path = { params: { path: { internId: id } } };
      if (action === 'provision')
        return call(dataApi.POST('/interns/{internId}/provision', { ...path, body: {} }));
      if (action === 'suspend')
        return call(dataApi.POST('/interns/{internId}/suspend', { ...path, body: {} }));
      return call(
        dataApi.DELETE('/interns/{internId}', {
          ...path,
          body: { acknowledge_workspace_loss: action === 'delete-discarding' },
        }),
      );
    },
    onSuccess: (_res, { id, action }) => {
      if (action !== 'provision' && chatWith === id) setChatWith(null);
      return invalidate();
    },
  });
  const list = interns.data?.data ?? [];
  const chatting = list.find((i) => i.id === chatWith && i.status === 'running');
  const edited = list.find((i) => i.id === editing);

  return (
    <>
      <ErrorBanner error={interns.error} />
      <ErrorBanner error={act.error} onDismiss={() => act.reset()} />
      <CreateIntern onCreated={invalidate} />
      {edited && (
        <EditIntern
          key={edited.id}
          intern={edited}
          onDone={() => {
            setEditing(null);
            return invalidate();
          }}
        />
      )}
      <h2>Interns of this workspace</h2>
      {interns.isPending ? (
        <p>Loading…</p>
      ) : (
        <Table
          caption="Interns, newest first"
          rows={list}
          rowKey={(i) => i.id}
          empty="No interns yet."
          columns={[
            { header: 'Name', cell: (i) => i.name },
            { header: 'Description', cell: (i) => i.description ?? '' },
            { header: 'Model', cell: (i) => i.model ?? 'default' },
            {
              header: 'Status',
              cell: (i) => (
                <>
                  <span className={`status status-${i.status}`}>{statusText(i)}</span>
                  {i.last_failure_message && <small className="hint block">{i.last_failure_message}</small>}
                </>
              ),
            },
            { header: 'Created', cell: (i) => new Date(i.created_at).toLocaleString() },
            {
              header: 'Actions',
              cell: (i) => (
                <InternActions
                  intern={i}
                  busy={act.isPending}
                  onAction={(action) => act.mutate({ id: i.id, action })}
                  onChat={() => setChatWith(i.id)}
                  onEdit={() => setEditing(i.id)}
                />
              ),
            },
          ]}
        />
      )}
      {chatting && <InternChat key={chatting.id} internId={chatting.id} name={chatting.name} />}
    </>
  );
}
