import { useQuery } from '@tanstack/react-query';
import { useCallback, useMemo, useState } from 'react';
import type uPlot from 'uplot';
import { api, call } from '../api/client';
import { Chart } from '../components/chart';
import { ErrorBanner } from '../components/error-banner';
import { SelectField } from '../components/field';
import { Page } from '../components/page';
import { rangeBounds, type TimeRange, TimeRangePicker } from '../components/time-range';
import { WorkspacePicker } from '../components/workspace-picker';
import { useWorkspaceParam } from '../lib/use-workspace';
import { useWorkspaceKeys } from './activity/workspace-keys';
import { bucketsOf, colorOf, columns, groupsOf, type Metric, type Point } from './overview/series';

type GroupBy = '' | 'model' | 'provider' | 'key';
const GROUP_BYS = [
  { value: '', label: 'Nothing (totals)' },
  { value: 'model', label: 'Model' },
  { value: 'provider', label: 'Provider' },
  { value: 'key', label: 'API key' },
];
/** Lines per chart when broken down: the biggest spenders (the rest are in the totals). */
const MAX_LINES = 8;

const SUMMARY_METRICS = ['spend', 'requests', 'tokens', 'errors', 'latency_p50_ms', 'latency_p95_ms'];

const usd = (n: number) => `$${n.toFixed(n !== 0 && Math.abs(n) < 0.01 ? 6 : 2)}`;
const ms = (n: number | null | undefined) => (n === null || n === undefined ? '—' : `${n} ms`);
const int = (n: number) => n.toLocaleString('en-US');

const CHARTS: { metric: Metric; title: string; unit: (n: number) => string }[] = [
  { metric: 'spend', title: 'Spend (USD)', unit: usd },
  { metric: 'requests', title: 'Requests', unit: int },
  { metric: 'tokens', title: 'Tokens (prompt + completion)', unit: int },
  { metric: 'errors', title: 'Errors (failed and cancelled calls)', unit: int },
  { metric: 'latency', title: 'Latency (ms)', unit: (n) => `${n} ms` },
];

/** Spend, requests, tokens, errors and latency over a time range (of a workspace or all), in total or per model/provider/key. */
export function OverviewPage() {
  const [range, setRange] = useState<TimeRange>('24h');
  const [groupBy, setGroupBy] = useState<GroupBy>('');
  const [workspace, setWorkspace] = useWorkspaceParam();
  // The range's end is fixed when it is picked (or refreshed), so the queries stay the same.
  const [bounds, setBounds] = useState(() => rangeBounds('24h'));
  const bucket = range === '30d' ? 'day' : 'hour';

  const series = useQuery({
    queryKey: ['analytics-series', bounds, bucket, groupBy, workspace],
    queryFn: () =>
      call(
        api.GET('/analytics/series', {
          params: {
            query: {
              ...bounds,
              bucket,
              ...(groupBy ? { group_by: groupBy } : {}),
              ...(workspace ? { workspace } : {}),
            },
          },
        }),
      ),
  });
  const summary = useQuery({
    queryKey: ['analytics-summary', bounds, workspace],
    queryFn: () =>
      call(
        api.POST('/analytics/query', {
          body: {
            metrics: SUMMARY_METRICS,
            time_range: { start: bounds.from, end: bounds.to },
            ...(workspace ? { filters: [{ field: 'workspace_id', operator: 'eq', value: workspace }] } : {}),
          },
        }),
      ),
  });
  // Key names for the per-key breakdown (hashes otherwise).
  const keys = useWorkspaceKeys(workspace, groupBy === 'key');
  const keyName = useMemo(() => new Map(keys.map((k) => [k.hash, k.name])), [keys]);
  const label = useCallback(
    (g: string) => (groupBy === 'key' ? (keyName.get(g) ?? `${g.slice(0, 12)}…`) : g),
    [groupBy, keyName],
  );
  const total = summary.data?.data.data[0];

  return (
    <Page title="Overview">
      <ErrorBanner error={series.error ?? summary.error} />
      <form
        className="form-row"
        aria-label="Chart options"
        onSubmit={(e) => {
          e.preventDefault();
          setBounds(rangeBounds(range));
        }}
      >
        <WorkspacePicker all value={workspace} onChange={setWorkspace} />
        <TimeRangePicker
          value={range}
          onChange={(r) => {
            setRange(r);
            setBounds(rangeBounds(r));
          }}
        />
        <SelectField
          label="Break down by"
          value={groupBy}
          onChange={(v) => setGroupBy(v as GroupBy)}
          options={GROUP_BYS}
        />
        <button type="submit">Refresh</button>
      </form>

      <section aria-labelledby="totals">
        <h2 id="totals">Totals for the range</h2>
        {summary.isPending ? (
          <p>Loading…</p>
        ) : (
          <dl className="stats" data-testid="summary">
            <Stat label="Spend" value={total ? usd(Number(total.spend ?? 0)) : usd(0)} />
            <Stat label="Requests" value={int(Number(total?.requests ?? 0))} />
            <Stat label="Tokens" value={int(Number(total?.tokens ?? 0))} />
            <Stat label="Errors" value={int(Number(total?.errors ?? 0))} />
            <Stat label="Latency p50" value={ms(total?.latency_p50_ms as number | null | undefined)} />
            <Stat label="Latency p95" value={ms(total?.latency_p95_ms as number | null | undefined)} />
          </dl>
        )}
      </section>

      {series.isPending ? (
        <p>Loading…</p>
      ) : series.data && series.data.data.length === 0 ? (
        <p className="empty-note">No calls in this range yet.</p>
      ) : series.data ? (
        <Charts
          points={series.data.data}
          from={series.data.from}
          to={series.data.to}
          bucket={series.data.bucket}
          grouped={groupBy !== ''}
          label={label}
        />
      ) : null}
    </Page>
  );
}

function Stat({ label, value }: { label: string; value: string }) {
  return (
    <div className="stat">
      <dt>{label}</dt>
      <dd>{value}</dd>
    </div>
  );
}

function Charts({
  points,
  from,
  to,
  bucket,
  grouped,
  label,
}: {
  points: Point[];
  from: string;
  to: string;
  bucket: 'hour' | 'day';
  grouped: boolean;
  label: (group: string) => string;
}) {
  const xs = useMemo(() => bucketsOf(from, to, bucket), [from, to, bucket]);
  const groups = useMemo(() => (grouped ? groupsOf(points).slice(0, MAX_LINES) : []), [points, grouped]);
  const more = grouped ? groupsOf(points).length - groups.length : 0;
  return (
    <>
      {more > 0 && (
        <p className="hint">
          Showing the {MAX_LINES} largest of {groups.length + more} (the totals above count them all).
        </p>
      )}
      <div className="charts">
        {CHARTS.map((c) => (
          <MetricChart
            key={c.metric}
            {...c}
            points={points}
            xs={xs}
            groups={grouped ? groups : null}
            label={label}
          />
        ))}
      </div>
    </>
  );
}

function MetricChart({
  metric,
  title,
  unit,
  points,
  xs,
  groups,
  label,
}: {
  metric: Metric;
  title: string;
  unit: (n: number) => string;
  points: Point[];
  xs: number[];
  groups: string[] | null;
  label: (group: string) => string;
}) {
  const lines = useMemo(() => {
    if (groups)
      return groups.map((g) => ({
        group: g,
        metric,
        percentile: 'p95' as const,
        name: metric === 'latency' ? `${label(g)} p95` : label(g),
      }));
    if (metric === 'latency')
      return [
        { group: null, metric, percentile: 'p50' as const, name: 'p50' },
        { group: null, metric, percentile: 'p95' as const, name: 'p95' },
      ];
    return [{ group: null, metric, name: title.replace(/ \(.*\)$/, '') }];
  }, [groups, metric, title, label]);
  const data = useMemo(() => columns(points, xs, lines), [points, xs, lines]);
  const series = useMemo<uPlot.Series[]>(
    () =>
      lines.map((l, i) => ({
        label: l.name,
        stroke: colorOf(i),
        width: 2,
        spanGaps: false,
        value: (_u: uPlot, v: number | null) => (v === null ? '—' : unit(v)),
      })),
    [lines, unit],
  );
  return (
    <figure className="chart-card">
      <figcaption>{title}</figcaption>
      <Chart title={`${title} over time`} data={data} series={series} height={200} />
    </figure>
  );
}
