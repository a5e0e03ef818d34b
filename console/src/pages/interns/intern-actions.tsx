import type { JsonOk } from '../../api/client';
import { RowActions } from '../../components/row-actions';

export type Intern = JsonOk<'/interns', 'get'>['data'][number];
export type Action = 'provision' | 'suspend' | 'delete' | 'delete-discarding';

/** What the API lets each status do (docs/interns.md, States). */
const canStart = (s: string) => s === 'stopped' || s === 'failed';
const canStop = (s: string) => ['queued', 'provisioning', 'running', 'failed'].includes(s);
const canDelete = (s: string) => s !== 'destroying';

/** Start, stop, chat, edit and delete (asked twice) for one intern, as its status allows. */
export function InternActions(props: {
  intern: Intern;
  busy: boolean;
  onAction: (a: Action) => void;
  onChat: () => void;
  onEdit: () => void;
}) {
  const { intern: i, busy, onAction } = props;
  const discard = i.status === 'destroy_failed';
  return (
    <RowActions
      name={i.name}
      confirm={discard ? `Delete “${i.name}” and discard its files` : `Delete “${i.name}” for good`}
      busy={busy}
      deletable={canDelete(i.status)}
      onDelete={(done) => {
        done();
        onAction(discard ? 'delete-discarding' : 'delete');
      }}
    >
      {i.status === 'running' && (
        <button type="button" onClick={props.onChat} aria-label={`Chat with ${i.name}`}>
          Chat
        </button>
      )}
      {canStart(i.status) && (
        <button
          type="button"
          disabled={busy}
          onClick={() => onAction('provision')}
          aria-label={`Start ${i.name}`}
        >
          Start
        </button>
      )}
      {canStop(i.status) && (
        <button
          type="button"
          disabled={busy}
          onClick={() => onAction('suspend')}
          aria-label={`Stop ${i.name}`}
        >
          Stop
        </button>
      )}
      {i.status !== 'destroying' && (
        <button type="button" disabled={busy} onClick={props.onEdit} aria-label={`Edit ${i.name}`}>
          Edit
        </button>
      )}
    </RowActions>
  );
}
