/**
 * How deep a parsed JSON body nests. JSON.parse copes with any depth, but the recursive code
 * after it (content filters, translation, schema walks, serialisation) overflows the stack on a
 * body nested tens of thousands deep: such a body is refused (400) before anything walks it.
 */

/** The deepest nesting of objects and arrays a request body may have. */
export const MAX_JSON_DEPTH = 128;

/** Whether `value` nests objects/arrays deeper than `limit` (iterative: no recursion itself). */
export function nestsDeeperThan(value: unknown, limit: number = MAX_JSON_DEPTH): boolean {
  if (value === null || typeof value !== 'object') return false;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (depth > limit) return true;
    // Only what JSON parsing makes (a streamed body is an object of another kind: not walked).
    const proto = Object.getPrototypeOf(v);
    if (!Array.isArray(v) && proto !== Object.prototype && proto !== null) continue;
    const children = Array.isArray(v) ? v : Object.values(v as object);
    for (const c of children) if (c !== null && typeof c === 'object') stack.push([c, depth + 1]);
  }
  return false;
}
