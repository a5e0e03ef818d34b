/**
 * How deep a parsed JSON body nests. JSON.parse copes with any depth, but the recursive code
 * after it (content filters, translation, schema walks, serialisation) overflows the stack on a
 * body nested tens of thousands deep: such a body is refused (400) before anything walks it.
 */

/** The deepest nesting of objects and arrays a request body may have. */
export const MAX_JSON_DEPTH = 128;

/**
 * Whether `value` nests objects/arrays deeper than `limit` (iterative: no recursion itself; every
 * request body is walked, so without an array or tuple per node it visits).
 */
export function nestsDeeperThan(value: unknown, limit: number = MAX_JSON_DEPTH): boolean {
  if (value === null || typeof value !== 'object') return false;
  const values: unknown[] = [value];
  const depths: number[] = [1];
  const push = (c: unknown, depth: number) => {
    if (c === null || typeof c !== 'object') return;
    values.push(c);
    depths.push(depth);
  };
  while (values.length > 0) {
    const v = values.pop() as object;
    const depth = depths.pop() as number;
    if (depth > limit) return true;
    if (Array.isArray(v)) {
      for (const c of v) push(c, depth + 1);
      continue;
    }
    // Only what JSON parsing makes (a streamed body is an object of another kind: not walked).
    const proto = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) continue;
    for (const k in v) push((v as Record<string, unknown>)[k], depth + 1);
  }
  return false;
}
