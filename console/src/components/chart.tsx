import { useEffect, useId, useMemo, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

interface ChartProps {
  /** Names the chart for screen readers (the canvas itself says nothing). */
  title: string;
  /** uPlot's columns: x values (Unix seconds) first, then one array per series. */
  data: uPlot.AlignedData;
  series: uPlot.Series[];
  height?: number;
}

/** The chart in words for those who cannot see it: the period, and each line's highest and latest value. */
export function describeChart(title: string, data: uPlot.AlignedData, series: uPlot.Series[]): string {
  const xs = data[0];
  if (xs.length === 0) return `${title}: no data.`;
  const when = (x: number) => new Date(x * 1000).toLocaleString();
  const lines = series.map((s, i) => {
    const ys = (data[i + 1] ?? []).filter((v): v is number => typeof v === 'number');
    const label = String(s.label ?? `Series ${i + 1}`);
    if (ys.length === 0) return `${label}: none`;
    // The series' own formatter (it ignores the chart it is given) says values as the legend does.
    const fmt = (v: number) =>
      typeof s.value === 'function'
        ? String(s.value(undefined as unknown as uPlot, v, i + 1, null))
        : String(v);
    return `${label}: highest ${fmt(Math.max(...ys))}, latest ${fmt(ys[ys.length - 1] as number)}`;
  });
  return `${title}, ${when(xs[0] as number)} to ${when(xs[xs.length - 1] as number)}. ${lines.join('; ')}.`;
}

/**
 * uPlot's legend shows or hides a line when its name is clicked: those names become toggle buttons
 * the keyboard reaches (Tab, then Enter or Space) and that say whether their line is shown.
 */
function keyboardLegend(u: uPlot) {
  u.root.querySelectorAll<HTMLElement>('.u-legend .u-series').forEach((row, i) => {
    const name = row.querySelector('th');
    if (i === 0 || !name) return; // the first row is the time axis: nothing to toggle
    const pressed = () => name.setAttribute('aria-pressed', String(u.series[i]?.show !== false));
    name.tabIndex = 0;
    name.setAttribute('role', 'button');
    pressed();
    name.addEventListener('click', pressed); // after uPlot's own handler has toggled the line
    name.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' || e.key === ' ') {
        e.preventDefault();
        name.click();
      }
    });
  });
}

/** A time-series line chart (uPlot), sized to its container's width, with a text alternative. */
export function Chart({ title, data, series, height = 240 }: ChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const summary = useId();

  // Rebuilt when the series change; new data alone is set in place (the effect below).
  // biome-ignore lint/correctness/useExhaustiveDependencies: data is deliberately not a dependency
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const u = new uPlot({ width: el.clientWidth || 600, height, series: [{}, ...series] }, data, el);
    plot.current = u;
    // The drawing is the image; the legend beside it stays a table of buttons (inside role="img"
    // they would be hidden from screen readers).
    const drawing = u.root.querySelector('.u-wrap');
    drawing?.setAttribute('role', 'img');
    drawing?.setAttribute('aria-label', title);
    drawing?.setAttribute('aria-describedby', summary);
    keyboardLegend(u);
    const resize = new ResizeObserver(() => u.setSize({ width: el.clientWidth, height }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [series, height, title, summary]);

  useEffect(() => {
    plot.current?.setData(data);
  }, [data]);

  const words = useMemo(() => describeChart(title, data, series), [title, data, series]);
  return (
    <>
      <div ref={box} className="chart" />
      <p id={summary} className="visually-hidden">
        {words}
      </p>
    </>
  );
}
