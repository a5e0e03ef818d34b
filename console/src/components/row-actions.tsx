import { type ReactNode, useState } from 'react';

/**
 * A table row's action buttons ending with Delete, which asks once more before it acts: the row's
 * buttons give way to “<confirm>” and “Keep it” until the deletion is done or kept.
 */
export function RowActions(props: {
  /** The row's name, for the Delete button's accessible name (“Delete <name>”). */
  name: string;
  /** The confirming button's text, e.g. “Delete “x” for good”. */
  confirm: ReactNode;
  /** Called with `done`, to be called once the deletion has settled (success or error). */
  onDelete: (done: () => void) => void;
  busy?: boolean;
  /** false: no Delete button (e.g. the default workspace). */
  deletable?: boolean;
  children?: ReactNode;
}) {
  const [confirming, setConfirming] = useState(false);
  if (confirming)
    return (
      <span className="actions">
        <button
          type="button"
          className="danger"
          disabled={props.busy}
          onClick={() => props.onDelete(() => setConfirming(false))}
        >
          {props.confirm}
        </button>
        <button type="button" onClick={() => setConfirming(false)}>
          Keep it
        </button>
      </span>
    );
  return (
    <span className="actions">
      {props.children}
      {props.deletable !== false && (
        <button
          type="button"
          className="danger"
          onClick={() => setConfirming(true)}
          aria-label={`Delete ${props.name}`}
        >
          Delete
        </button>
      )}
    </span>
  );
}
