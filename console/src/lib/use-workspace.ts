import { useCallback } from 'react';
import { useSearchParams } from 'wouter';

/**
 * The workspace a page shows, kept in the address (`?workspace=<id>`) so that a link reproduces the
 * view. `''` when none is chosen (the page's default: the default workspace, or all of them).
 * Other parameters of the address are kept, but those named in `drop` (e.g. an open item that
 * belongs to the old workspace): one update, since two in a row would each start from the old address.
 */
export function useWorkspaceParam(): [string, (id: string, drop?: string[]) => void] {
  const [search, setSearch] = useSearchParams();
  const workspace = search.get('workspace') ?? '';
  const setWorkspace = useCallback(
    (id: string, drop: string[] = []) =>
      setSearch(
        (old) => {
          const next = new URLSearchParams(old);
          if (id) next.set('workspace', id);
          else next.delete('workspace');
          for (const name of drop) next.delete(name);
          return next;
        },
        { replace: true },
      ),
    [setSearch],
  );
  return [workspace, setWorkspace];
}
