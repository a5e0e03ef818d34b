/**
 * A weighted random order of `items` (Efraimidis–Spirakis: each item draws -ln(u)/weight and the
 * smallest goes first). The first item is a weighted choice, and so is the first of any subset —
 * so skipping the credentials whose breaker is open leaves the others chosen in proportion to
 * their weights. `random` returns [0, 1) (injectable for tests).
 */
export function weightedOrder<T extends { weight?: number }>(items: readonly T[], random: () => number): T[] {
  if (items.length < 2) return items as T[];
  const keyed = items.map((item) => ({ item, k: -Math.log(1 - random()) / (item.weight ?? 1) }));
  keyed.sort((a, b) => a.k - b.k);
  return keyed.map((x) => x.item);
}

/** `list` with the item `is` picks moved first (the list itself when none or it is first already). */
export function moveFirst<T>(list: T[], is: (item: T) => boolean): T[] {
  const i = list.findIndex(is);
  if (i <= 0) return list;
  return [list[i] as T, ...list.slice(0, i), ...list.slice(i + 1)];
}
