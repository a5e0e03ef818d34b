/**
 * The same closed loop as loadgen.ts, driven by `wrk` (C, one thread, `concurrency` keep-alive
 * connections) instead of undici, for `BENCH_LOADGEN=wrk`. On two cores the load generator shares
 * the machine with what it measures; wrk spends about a third of the CPU per request that the
 * Node generator does, leaving more of the machine to the gateway — what the `workers` scenario
 * needs to see whether a second worker can use it.
 *
 * Whole answers only (a stream's end cannot be checked: loadgen.ts keeps streams). Latency comes
 * from wrk's own histogram as 1,001 quantiles a run (so rounds pool as samples do); time to first
 * byte is not measured (set to the total). Durations are whole seconds (wrk's `-d`), rounded up.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { LoadResult, LoadSpec, Summary } from './loadgen.js';

const run = promisify(execFile);

/** A Lua long string holding `s` verbatim (a level of `=` it does not contain). */
function luaString(s: string): string {
  let eq = '';
  while (s.includes(`]${eq}]`)) eq += '=';
  return `[${eq}[${s}]${eq}]`;
}

function script(spec: LoadSpec): string {
  const lines = [`wrk.method = "${spec.method ?? 'POST'}"`];
  if ((spec.method ?? 'POST') === 'POST') lines.push(`wrk.body = ${luaString(spec.body)}`);
  for (const [k, v] of Object.entries(spec.headers))
    lines.push(`wrk.headers[ ${luaString(k)} ] = ${luaString(v)}`);
  // One line for the parent: requests, µs, non-2xx/3xx answers, socket errors, the quantiles.
  lines.push(
    'done = function(summary, latency, requests)',
    '  local q = {}',
    '  for i = 0, 999 do q[#q + 1] = latency:percentile(i / 10) end',
    '  q[#q + 1] = latency.max',
    '  local e = summary.errors',
    '  io.write("GATEHOUSE_WRK " .. summary.requests .. " " .. summary.duration .. " " .. e.status .. " " ..',
    '    (e.connect + e.read + e.write + e.timeout) .. " " .. table.concat(q, ",") .. "\\n")',
    'end',
  );
  return `${lines.join('\n')}\n`;
}

const seconds = (ms: number) => `${Math.max(1, Math.ceil(ms / 1000))}s`;

function summarize(q: Float64Array, count: number): Summary {
  const at = (p: number) => q[Math.min(q.length - 1, Math.round(p * 10))] ?? Number.NaN;
  const mean = q.reduce((a, b) => a + b, 0) / (q.length || 1);
  return {
    count,
    min: at(0),
    mean,
    p50: at(50),
    p90: at(90),
    p99: at(99),
    p999: at(99.9),
    max: q[q.length - 1] ?? 0,
  };
}

async function wrk(spec: LoadSpec, file: string, duration: string) {
  const url = `${spec.origin}${spec.path}`;
  const { stdout } = await run('wrk', ['-t1', `-c${spec.concurrency}`, `-d${duration}`, '-s', file, url], {
    maxBuffer: 1 << 22,
  });
  const line = stdout.split('\n').find((l) => l.startsWith('GATEHOUSE_WRK '));
  if (!line) throw new Error(`wrk printed no summary:\n${stdout}`);
  const [requests, durationUs, status, socket, quantiles] = line.slice('GATEHOUSE_WRK '.length).split(' ');
  return {
    requests: Number(requests),
    durationUs: Number(durationUs),
    failed: Number(status) + Number(socket),
    quantiles: Float64Array.from((quantiles ?? '').split(',').map(Number)),
  };
}

export async function runWrk(spec: LoadSpec): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-wrk-'));
  try {
    const file = join(dir, 'load.lua');
    writeFileSync(file, script(spec));
    if (spec.warmupMs > 0) await wrk(spec, file, seconds(spec.warmupMs));
    const r = await wrk(spec, file, seconds(spec.durationMs));
    const ok = Math.max(0, r.requests - r.failed);
    const total = summarize(r.quantiles, ok);
    return {
      concurrency: spec.concurrency,
      requests: ok,
      errors: r.failed,
      firstError: r.failed > 0 ? `${r.failed} answers were not 2xx/3xx or hit a socket error (wrk)` : null,
      durationMs: r.durationUs / 1000,
      rps: Math.round((ok / r.durationUs) * 1e6),
      total,
      ttfb: total,
      samples: { total: r.quantiles, ttfb: r.quantiles },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
