/** Ids or rows per statement: far below either database's limit on bound parameters. */
export const CHUNK = 500;

/** `list` in pieces of at most `size`, for `in (…)` lists and multi-row inserts. */
export function chunks<T>(list: readonly T[], size = CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
  return out;
}
