import { type QueryKey, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';

interface ResourceOptions<List, Body> {
  /** The list's query key. */
  queryKey: QueryKey;
  /** What a change refreshes: every query under this key (default: the list's key). */
  scope?: QueryKey;
  list: () => Promise<List>;
  update?: (id: string, body: Body) => Promise<unknown>;
  remove?: (id: string) => Promise<unknown>;
  /** After a successful update, before the refresh (e.g. close the edit form). */
  onUpdated?: () => void;
}

/**
 * The list, update and remove of a management page's resource (keys, guardrails, provider keys,
 * workspaces, vault secrets): one query, two mutations that refresh what they changed, and the one
 * error the page shows for the mutations (`actionError`, cleared by `dismissActionError`).
 */
export function useResource<List, Body = never>(options: ResourceOptions<List, Body>) {
  const client = useQueryClient();
  const list = useQuery({ queryKey: options.queryKey, queryFn: options.list });
  const invalidate = () => client.invalidateQueries({ queryKey: options.scope ?? options.queryKey });
  const update = useMutation({
    mutationFn: ({ id, body }: { id: string; body: Body }) => {
      if (!options.update) throw new Error('This list cannot be edited.');
      return options.update(id, body);
    },
    onSuccess: () => {
      options.onUpdated?.();
      return invalidate();
    },
  });
  const remove = useMutation({
    mutationFn: (id: string) => {
      if (!options.remove) throw new Error('Nothing can be deleted from this list.');
      return options.remove(id);
    },
    onSuccess: invalidate,
  });
  return {
    list,
    update,
    remove,
    invalidate,
    busy: update.isPending || remove.isPending,
    actionError: update.error ?? remove.error,
    dismissActionError: () => {
      update.reset();
      remove.reset();
    },
  };
}
