import type { Caller } from '../accounts/caller.js';
import type { Db, Dialect } from '../db/connection.js';
import { badRequest } from '../lib/errors.js';
import { generationView } from '../routing/generations.js';
import { type Bucket, cellKey, type GroupBy, latencies, rawCells, totals } from './analytics.store.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import type { GenerationFilter } from './filter.js';
import { type Cell, hourCells, rollupServes } from './hours.store.js';
import { histogramPercentile } from './latency-buckets.js';
import { listGenerations } from './list.store.js';

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
/** A series holds at most this many buckets (hourly: 31 days). */
const MAX_BUCKETS = 744;

/** Nearest-rank percentile of sorted values; null for none. */
function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] as number;
}

/** The bucket's start as an ISO time: `2026-11-26T13` → `2026-11-26T13:00:00.000Z`. */
const bucketStart = (b: string) => (b.length === 13 ? `${b}:00:00.000Z` : `${b}T00:00:00.000Z`);

/** The whole UTC hours inside [from, to), as ISO times; null when there is none. */
function wholeHours(from: string, to: string): { start: string; end: string } | null {
  const start = Math.ceil(Date.parse(from) / HOUR_MS) * HOUR_MS;
  const end = Math.floor(Date.parse(to) / HOUR_MS) * HOUR_MS;
  return start < end ? { start: new Date(start).toISOString(), end: new Date(end).toISOString() } : null;
}

/** Adds cells of the same (bucket, groups) together; drops the empty ones. */
function merge(parts: Cell[][], bucket: Bucket | null, groupBy: GroupBy[]): Cell[] {
  const out = new Map<string, Cell>();
  for (const c of parts.flat()) {
    if (c.requests === 0) continue;
    const k = cellKey(c.bucket, c.groups);
    const had = out.get(k);
    if (!had) {
      out.set(k, c); // cells are fresh from the query: adding to them in place is safe
      continue;
    }
    had.spend += c.spend;
    had.byok_spend += c.byok_spend;
    had.requests += c.requests;
    had.errors += c.errors;
    had.prompt_tokens += c.prompt_tokens;
    had.completion_tokens += c.completion_tokens;
    had.reasoning_tokens += c.reasoning_tokens;
    c.histogram.forEach((n, j) => {
      had.histogram[j] = (had.histogram[j] ?? 0) + n;
    });
  }
  // An ungrouped total answers one row, even over no calls (as a plain aggregate does).
  if (out.size === 0 && bucket === null && groupBy.length === 0)
    return [
      {
        bucket: null,
        groups: [],
        spend: 0,
        byok_spend: 0,
        requests: 0,
        errors: 0,
        prompt_tokens: 0,
        completion_tokens: 0,
        reasoning_tokens: 0,
        histogram: [],
      },
    ];
  return [...out.values()];
}

export interface SeriesQuery {
  bucket: Bucket | null;
  groupBy: GroupBy[];
  from: string;
  to: string;
  /** false: no latency percentiles (null), and none of the work to compute them. */
  latency?: boolean;
}

export interface SeriesPoint {
  bucket: string | null;
  groups: (string | null)[];
  spend: number;
  byok_spend: number;
  requests: number;
  errors: number;
  prompt_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
  tokens: number;
  latency_p50_ms: number | null;
  latency_p95_ms: number | null;
}

const collator = new Intl.Collator();

/** Bucket order, then group order (each point's sort text made once, not per comparison). */
const ordered = (points: SeriesPoint[]) =>
  points
    .map((p) => ({ p, b: p.bucket ?? '', g: JSON.stringify(p.groups) }))
    .sort((x, y) => collator.compare(x.b, y.b) || collator.compare(x.g, y.g))
    .map((x) => x.p);

/** Lists and aggregates an organization's generations (the console's activity pages, /activity). */
export class ActivityService {
  constructor(
    private readonly db: Db,
    private readonly dialect: Dialect,
  ) {}

  /**
   * The scope a caller reads: a management key its whole organization; an API key only the
   * generations made with itself (another key's never, whatever the filter asks).
   */
  scope(caller: Caller, filter: Omit<GenerationFilter, 'organizationId'>): GenerationFilter | null {
    if (caller.isManagement) return { ...filter, organizationId: caller.organizationId };
    if (filter.keyHash !== undefined && filter.keyHash !== caller.keyHash) return null;
    return { ...filter, organizationId: caller.organizationId, keyHash: caller.keyHash };
  }

  /** A page of the caller's generations (`filter` null: a scope that holds none). */
  async list(filter: GenerationFilter | null, limit: number, cursor: string | undefined) {
    const after = cursor === undefined ? null : decodeCursor(cursor);
    if (filter === null) return { data: [], next_cursor: null };
    // One row more than asked says whether another page exists.
    const rows = await listGenerations(this.db, this.dialect, filter, limit + 1, after);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      data: page.map(generationView),
      next_cursor:
        rows.length > limit && last ? encodeCursor({ createdAt: last.created_at, id: last.id }) : null,
    };
  }

  /**
   * The sums and latency histograms of `filter`'s range per bucket and group: the hourly rollup for
   * the range's whole hours, the generations themselves for the partial hours at its edges. Null
   * when the rollup cannot answer (a filter it does not hold, or no whole hour in the range).
   */
  async rollupCells(
    filter: GenerationFilter,
    bucket: Bucket | null,
    groupBy: GroupBy[],
    latency = true,
  ): Promise<Cell[] | null> {
    const { from, to } = filter;
    if (from === undefined || to === undefined || !rollupServes(filter)) return null;
    const hours = wholeHours(from, to);
    if (!hours) return null;
    const parts = [
      hourCells(this.db, filter, hours.start.slice(0, 13), hours.end.slice(0, 13), bucket, groupBy, latency),
    ];
    if (from < hours.start)
      parts.push(rawCells(this.db, { ...filter, to: hours.start }, bucket, groupBy, latency));
    if (hours.end < to)
      parts.push(rawCells(this.db, { ...filter, from: hours.end }, bucket, groupBy, latency));
    return merge(await Promise.all(parts), bucket, groupBy);
  }

  /**
   * Spend, requests, tokens, errors and latency percentiles per bucket and group, bucket order.
   * Sums are exact; percentiles come from the rollup's latency histogram (within 9.1 %, see
   * latency-buckets.ts) unless the range holds no whole hour, where every latency is read.
   */
  async series(filter: GenerationFilter, q: SeriesQuery): Promise<SeriesPoint[]> {
    if (q.from >= q.to) throw badRequest('Invalid time range: from must be before to');
    const span = Date.parse(q.to) - Date.parse(q.from);
    if (q.bucket && span / (q.bucket === 'hour' ? DAY_MS / 24 : DAY_MS) > MAX_BUCKETS)
      throw badRequest(`Invalid time range: at most ${MAX_BUCKETS} buckets (${q.bucket}) per series`);
    const f = { ...filter, from: q.from, to: q.to };
    const cells = await this.rollupCells(f, q.bucket, q.groupBy, q.latency !== false);
    if (!cells) return this.rawSeries(f, q);
    return ordered(
      cells.map(
        ({ histogram, ...s }): SeriesPoint => ({
          ...s,
          bucket: s.bucket === null ? null : bucketStart(s.bucket),
          tokens: s.prompt_tokens + s.completion_tokens,
          latency_p50_ms: histogramPercentile(histogram, 0.5),
          latency_p95_ms: histogramPercentile(histogram, 0.95),
        }),
      ),
    );
  }

  /** The series computed from every generation of the range (exact percentiles). */
  async rawSeries(f: GenerationFilter, q: SeriesQuery): Promise<SeriesPoint[]> {
    // PostgreSQL computes percentiles with the sums; SQLite has no percentile function, so its
    // latencies are read as values (a second pass over the range).
    const want = q.latency !== false;
    const inDb = this.dialect === 'postgres';
    const [sums, lat] = await Promise.all([
      totals(this.db, f, q.bucket, q.groupBy, inDb && want),
      inDb || !want ? null : latencies(this.db, f, q.bucket, q.groupBy),
    ]);
    const points = sums.map(({ p50, p95, ...s }): SeriesPoint => {
      const l = lat ? (lat.get(cellKey(s.bucket, s.groups)) ?? []).sort((a, b) => a - b) : [];
      return {
        ...s,
        bucket: s.bucket === null ? null : bucketStart(s.bucket),
        tokens: s.prompt_tokens + s.completion_tokens,
        latency_p50_ms: lat ? percentile(l, 0.5) : (p50 ?? null),
        latency_p95_ms: lat ? percentile(l, 0.95) : (p95 ?? null),
      };
    });
    return ordered(points);
  }

  /**
   * OpenRouter's GET /activity: the last 30 completed UTC days (or one of them), by day, model and
   * provider (and workspace when asked), newest day first.
   */
  async activity(filter: GenerationFilter, date: string | undefined, byWorkspace: boolean, now = new Date()) {
    const today = new Date(now.toISOString().slice(0, 10)).getTime();
    let from = new Date(today - 30 * DAY_MS).toISOString();
    let to = new Date(today).toISOString();
    if (date !== undefined) {
      const d = /^\d{4}-\d{2}-\d{2}$/.test(date) ? Date.parse(`${date}T00:00:00.000Z`) : Number.NaN;
      if (Number.isNaN(d) || d < Date.parse(from) || d >= today)
        throw badRequest('Invalid date: give one of the last 30 completed UTC days as YYYY-MM-DD');
      from = new Date(d).toISOString();
      to = new Date(d + DAY_MS).toISOString();
    }
    const groupBy: GroupBy[] = byWorkspace ? ['model', 'provider', 'workspace'] : ['model', 'provider'];
    const f = { ...filter, from, to };
    const rows =
      (await this.rollupCells(f, 'day', groupBy, false)) ?? (await totals(this.db, f, 'day', groupBy));
    return rows
      .map((r) => {
        const [model, provider, workspace] = r.groups;
        const provider_name = provider ?? 'unknown';
        const m = model ?? 'unknown';
        return {
          date: r.bucket as string,
          model: m,
          model_permaslug: m,
          endpoint_id: `${provider_name}/${m}`,
          provider_name,
          usage: r.spend,
          byok_usage_inference: r.byok_spend,
          requests: r.requests,
          prompt_tokens: r.prompt_tokens,
          completion_tokens: r.completion_tokens,
          reasoning_tokens: r.reasoning_tokens,
          ...(byWorkspace ? { workspace_id: workspace ?? '' } : {}),
        };
      })
      .sort(
        (a, b) =>
          b.date.localeCompare(a.date) || b.usage - a.usage || a.endpoint_id.localeCompare(b.endpoint_id),
      );
  }
}
