/** "Load more" under a cursor-paged list (a TanStack infinite query); nothing when the list is whole. */
export function LoadMore({
  list,
}: {
  list: { hasNextPage: boolean; isFetchingNextPage: boolean; fetchNextPage: () => unknown };
}) {
  if (!list.hasNextPage) return null;
  return (
    <p>
      <button type="button" onClick={() => list.fetchNextPage()} disabled={list.isFetchingNextPage}>
        {list.isFetchingNextPage ? 'Loading…' : 'Load more'}
      </button>
    </p>
  );
}
