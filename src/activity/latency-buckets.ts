/**
 * The fixed latency histogram of the hourly rollup (generation_hours, migration 0018): bucket 0
 * holds 0 ms, bucket j (1 … 75) holds [BOUNDS[j-1], BOUNDS[j]) ms, bucket 76 everything from
 * BOUNDS[75] (about 17.5 minutes). The bounds are 2^(i/4) rounded up, duplicates dropped: one
 * bucket per millisecond below 9 ms, then each bucket a quarter of a doubling wide.
 *
 * A percentile read from the buckets is the geometric middle of the bucket that holds the exact
 * (nearest-rank) one. Each bucket's top is below 2^(1/4) times its bottom, so the estimate is within
 * 2^(1/8) − 1 ≈ 9.1 % of the exact value, plus half a millisecond of rounding to whole ms; in the
 * last bucket it is the bucket's bottom (a lower bound).
 */
export const BOUNDS: readonly number[] = [
  ...new Set(Array.from({ length: 81 }, (_, i) => Math.ceil(2 ** (i / 4)))),
];

/** How many histogram columns the rollup holds (h0 … h76). */
export const BUCKETS = BOUNDS.length + 1;

/** The histogram's columns, in bucket order. */
export const HISTOGRAM_COLUMNS = Array.from({ length: BUCKETS }, (_, j) => `h${j}`);

/** The relative error bound of an estimated percentile (beside half a millisecond of rounding). */
export const RELATIVE_ERROR = 2 ** (1 / 8) - 1;

/** The bucket of a latency in ms. */
export function bucketOf(ms: number): number {
  // Binary search: the first bound above ms is the bucket's end.
  let lo = 0;
  let hi = BOUNDS.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((BOUNDS[mid] as number) > ms) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** The value a percentile read from bucket j reports (see above). */
function estimate(j: number): number {
  if (j === 0) return 0;
  const bottom = BOUNDS[j - 1] as number;
  if (j === BOUNDS.length) return bottom;
  const top = (BOUNDS[j] as number) - 1; // latencies are whole milliseconds
  return Math.round(Math.sqrt(bottom * top));
}

/** The nearest-rank percentile `p` (0–1) estimated from bucket counts; null for none. */
export function histogramPercentile(counts: readonly number[], p: number): number | null {
  let n = 0;
  for (const c of counts) n += c;
  if (n === 0) return null;
  const rank = Math.min(n, Math.max(1, Math.ceil(p * n)));
  let seen = 0;
  for (let j = 0; j < counts.length; j++) {
    seen += counts[j] as number;
    if (seen >= rank) return estimate(j);
  }
  return estimate(counts.length - 1);
}
