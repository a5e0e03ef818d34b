import type { Column } from './table';

/**
 * The "Details" column of a list whose rows open a detail (one at a time): each row's button opens
 * its own, or closes it when it is the one open; `aria-expanded` says which is.
 */
export function detailsColumn<T>({
  idOf,
  label,
  open,
  setOpen,
}: {
  idOf: (row: T) => string;
  /** The button's accessible name, which says whose details it opens. */
  label: (row: T) => string;
  open: string | null;
  setOpen: (id: string | null) => void;
}): Column<T> {
  return {
    header: 'Details',
    cell: (row) => {
      const id = idOf(row);
      return (
        <button
          type="button"
          className="link"
          aria-label={label(row)}
          aria-expanded={open === id}
          onClick={() => setOpen(open === id ? null : id)}
        >
          Details
        </button>
      );
    },
  };
}
