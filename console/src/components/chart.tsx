import { useEffect, useRef } from 'react';
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

/** A time-series line chart (uPlot), sized to its container's width. */
export function Chart({ title, data, series, height = 240 }: ChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);

  // Rebuilt when the series change; new data alone is set in place (the effect below).
  // biome-ignore lint/correctness/useExhaustiveDependencies: data is deliberately not a dependency
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const u = new uPlot({ width: el.clientWidth || 600, height, series: [{}, ...series] }, data, el);
    plot.current = u;
    const resize = new ResizeObserver(() => u.setSize({ width: el.clientWidth, height }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [series, height]);

  useEffect(() => {
    plot.current?.setData(data);
  }, [data]);

  return <div ref={box} className="chart" role="img" aria-label={title} />;
}
