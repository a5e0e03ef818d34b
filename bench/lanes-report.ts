/**
 * The "Lanes" section of the benchmark's Markdown report (bench/lanes.ts measures it): one table
 * with the ratios the issue's targets are stated in, then each target, met or not, from this run.
 */
import type { FrameCheck, LaneCell, LanesResult } from './lanes.js';
import { processCells } from './processes.js';

const fmt = (v: number) =>
  Number.isFinite(v) ? v.toLocaleString('en-US', { maximumFractionDigits: 0 }) : '–';
/** a ÷ b, or null when it means nothing (a denominator ≤ 0, e.g. a floor that added nothing). */
const div = (a: number | null | undefined, b: number | null | undefined) =>
  a != null && b != null && b > 0 && Number.isFinite(a / b) ? a / b : null;
const times = (r: number | null) => (r === null ? '–' : `${r.toFixed(2)}×`);

/** The issue's limits. */
const ADDED_VS_FLOOR = 1.3;
const RPS_VS_PORTKEY = 5;

const modeName = (m: LaneCell['mode']) => (m === 'stream' ? 'streaming (TTFB)' : 'non-streaming');

/** The ratios of one row (null where they do not apply). */
function ratios(x: LaneCell, cells: LaneCell[]) {
  const peer = (row: LaneCell['row'], concurrency = x.concurrency) =>
    cells.find(
      (c) => c.lane === x.lane && c.mode === x.mode && c.concurrency === concurrency && c.row === row,
    );
  const gateway = x.row !== 'direct' && x.row !== 'floor';
  const floor = peer('floor');
  const portkey = peer('portkey');
  const translated = peer('gatehouse (translated)');
  return {
    vsFloor: gateway && x.concurrency === 1 ? div(x.added?.p50, floor?.added?.p50) : null,
    vsPortkey: gateway && x.row !== 'portkey' && x.concurrency === 64 ? div(x.rps, portkey?.rps) : null,
    cpuVsTranslated:
      x.row === 'gatehouse (lane)' || x.row === 'baseline (lane)'
        ? div(x.cpuUsPerRequest, translated?.cpuUsPerRequest)
        : null,
    cpuVsBaseline:
      x.row === 'gatehouse (lane)' ? div(x.cpuUsPerRequest, peer('baseline (lane)')?.cpuUsPerRequest) : null,
  };
}

function table(cells: LaneCell[], skipped: LanesResult['skipped']): string[] {
  const lines = [
    '| lane | mode | conc. | target | p50 µs | p99 µs | p50 added µs | p99 added µs | p50 added to end µs | req/s | CPU cores | CPU µs/req | peak RSS MB | added p50 ÷ floor (c=1) | req/s ÷ Portkey (c=64) | CPU/req lane ÷ translated | errors |',
    '| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const x of cells) {
    const s = x.mode === 'stream' ? x.ttfb : x.total;
    const ref = cells.find(
      (c) => c.lane === x.lane && c.mode === x.mode && c.concurrency === x.concurrency && c.row === 'direct',
    );
    const toEnd = x.mode === 'stream' && ref && x.row !== 'direct' ? fmt(x.total.p50 - ref.total.p50) : '';
    const r = ratios(x, cells);
    const cell = (v: number | null) => (v === null ? '' : times(v));
    lines.push(
      `| ${x.lane} | ${modeName(x.mode)} | ${x.concurrency} | ${x.row} | ${fmt(s.p50)} | ${fmt(s.p99)} | ${x.added ? fmt(x.added.p50) : ''} | ${x.added ? fmt(x.added.p99) : ''} | ${toEnd} | ${fmt(x.rps)} | ${processCells(x)} | ${cell(r.vsFloor)} | ${cell(r.vsPortkey)} | ${cell(r.cpuVsTranslated)} | ${x.errors} |`,
    );
  }
  for (const x of skipped)
    lines.push(
      `| ${x.lane} | – | – | ${x.row} | not measured: ${x.why.replace(/[|\n]/g, ' ')} |${' |'.repeat(12)}`,
    );
  return lines;
}

const verdict = (ok: boolean | null) => (ok === null ? 'not measured' : ok ? 'met' : 'NOT met');

/** Target (b) for one lane: frames relayed as the upstream sent them (the cost addition aside). */
function framesVerdict(f: FrameCheck): string {
  const other = f.differing.filter((d) => !d.costAdded);
  const costOnly = f.differing.length - other.length;
  const detail = other.length
    ? `; differing: ${other.map((d) => `\`${d.upstream.replace(/\n/g, '⏎')}\` → \`${d.relayed.replace(/\n/g, '⏎')}\``).join(', ')}`
    : '';
  return `${f.identical}/${f.frames} frames byte-identical to the upstream's${costOnly ? ` (${costOnly} re-serialized to add the cost to its usage)` : ''}${detail} — ${verdict(other.length === 0)}`;
}

function targets(cells: LaneCell[], frames: FrameCheck[]): string[] {
  const out: string[] = [];
  const lanes = [...new Set(cells.map((c) => c.lane))];
  for (const lane of lanes) {
    const mine = cells.filter((c) => c.lane === lane);
    const laneRows = mine.filter((c) => c.row === 'gatehouse (lane)');
    // (a) CPU per request, lane vs translated, in every cell measured.
    const cpu = laneRows.map((c) => ({ c, r: ratios(c, cells).cpuVsTranslated }));
    const cpuText = cpu.map(({ c, r }) => `${times(r)} (${c.mode} c=${c.concurrency})`).join(', ');
    const cpuMet = cpu.every(({ r }) => r !== null) ? cpu.every(({ r }) => (r as number) < 1) : null;
    out.push(
      `- (a) ${lane}: CPU µs/request lane ÷ translated = ${cpuText} (target < 1×: ${verdict(cpuMet)})`,
    );
    // (b) streams relayed as they came.
    const f = frames.find((x) => x.lane === lane);
    if (f) {
      const streamCpu = cpu
        .filter(({ c }) => c.mode === 'stream')
        .map(({ c, r }) => `${times(r)} at c=${c.concurrency}`);
      out.push(
        `- (b) ${lane} stream: ${framesVerdict(f)}; CPU/request lane ÷ translated ${streamCpu.join(', ')}`,
      );
    }
    // A/B against another build (BENCH_BASELINE), when one was measured.
    const ab = laneRows
      .map((c) => ({ c, r: ratios(c, cells).cpuVsBaseline }))
      .filter(({ r }) => r !== null)
      .map(({ c, r }) => `${times(r)} (${c.mode} c=${c.concurrency})`);
    if (ab.length) out.push(`- ${lane}: CPU µs/request lane ÷ baseline build's lane = ${ab.join(', ')}`);
    // (c) latency over the floor at c=1, throughput over Portkey at c=64.
    for (const c of laneRows) {
      if (c.concurrency === 1) {
        const r = ratios(c, cells).vsFloor;
        out.push(
          `- (c) ${lane} ${modeName(c.mode)}, c=1: added p50 ${fmt(c.added?.p50 ?? Number.NaN)} µs = ${times(r)} the floor's (target ≤ ${ADDED_VS_FLOOR}×: ${verdict(r === null ? null : r <= ADDED_VS_FLOOR)})`,
        );
      } else if (c.concurrency === 64) {
        const r = ratios(c, cells).vsPortkey;
        out.push(
          `- (c) ${lane} ${modeName(c.mode)}, c=64: ${fmt(c.rps)} req/s = ${times(r)} Portkey's (target ≥ ${RPS_VS_PORTKEY}×: ${verdict(r === null ? null : r >= RPS_VS_PORTKEY)})`,
        );
      }
    }
  }
  return out;
}

export function lanesSection({ cells, frames, skipped }: LanesResult): string[] {
  if (!cells.length) return [];
  return [
    '## Lanes',
    '',
    "Pass-through lanes beside translations. `/messages`: Anthropic Messages; `direct` is the mock's own `/v1/messages`, `gatehouse (lane)` is `bench/claude` on an `anthropic` provider (relayed as sent), `gatehouse (translated)` is `bench/fast` on an `openai-compatible` provider (translated both ways), Portkey is its `/v1/messages` with `x-portkey-provider: anthropic`. `/chat/completions`: the same the other way round (`bench/fast` is the lane, `bench/claude` the translation; Portkey with `openai`). Every Gatehouse row was checked to carry the expected `x-gatehouse-route`. Latency in µs; streams to the first body byte (TTFB), \"added to end\" is the end of the stream. \"Added\" = the row's percentile minus `direct`'s in the same lane, mode and concurrency; CPU is the serving process's (`direct`: the mock's).",
    '',
    ...table(cells, skipped),
    '',
    'Lane targets, as ratios of this run:',
    '',
    ...targets(cells, frames),
    '',
  ];
}
