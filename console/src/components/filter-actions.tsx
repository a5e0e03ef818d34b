/**
 * The end of a list's filters form: "Apply filters" submits it, "Clear" empties it and shows the
 * whole list again; `problem` (a filter that cannot apply, such as a reversed range) is announced.
 */
export function FilterActions({ onClear }: { onClear: () => void }) {
  return (
    <>
      <button type="submit">Apply filters</button>
      <button type="button" onClick={onClear}>
        Clear
      </button>
    </>
  );
}

/** Why the filters were not applied, announced to screen readers. */
export function FilterProblem({ problem }: { problem: string | null }) {
  if (!problem) return null;
  return (
    <p className="banner banner-error" role="alert">
      {problem}
    </p>
  );
}
