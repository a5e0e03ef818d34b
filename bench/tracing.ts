/**
 * What OpenTelemetry tracing costs Gatehouse: two gateways side by side on the same mock upstream,
 * `untraced` (no OTEL_* variables: the SDK is not loaded) and `traced` (every call sampled,
 * OTEL_TRACES_SAMPLER=always_on, spans exported over OTLP/HTTP protobuf to a local sink process,
 * bench/otlp-sink.ts), each serving `bench/fast` chat completions non-streaming and streaming at
 * concurrency BENCH_CONCURRENCY (64). The two targets alternate round by round (BENCH_ROUNDS, 3),
 * BENCH_WARMUP_MS (700) + BENCH_DURATION_MS (3000) each, so drift on the machine hits both alike.
 * Reported: req/s of each and traced ÷ untraced (target ≥ 0.90), p50/p99, and what the sink received;
 * and each gateway's CPU per call over the measured windows (Linux /proc: the whole process, and its
 * event loop's thread alone), whose traced ÷ untraced ratio survives a loaded machine better than
 * throughput does (each round's warm-up is a load of its own, outside the CPU reading).
 *
 * Results: bench/results/<date>-<machine>-tracing.md and .json. Every address is 127.0.0.1.
 * Knobs: BENCH_ROUNDS, BENCH_WARMUP_MS, BENCH_DURATION_MS, BENCH_CONCURRENCY, BENCH_SKIP_BUILD (0),
 * BENCH_START_WARMUP_MS (4000), BENCH_SAMPLER (always_on), BENCH_TRACED_NODE_ARGS (Node options of the
 * traced gateway, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"), BENCH_MACHINE, BENCH_OUT (bench/results),
 * BENCH_AA=1 (the `traced` gateway started with OTEL_SDK_DISABLED=true: an A/A run, whose ratios
 * show the harness's own bias and the VM's run-to-run spread).
 *
 *   npm run bench:tracing
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { request } from 'undici';
import { type LoadResult, runLoad, type Summary, summarize } from './loadgen.js';
import {
  API_KEY,
  build,
  cpuOf,
  defaultMachineName,
  gitCommit,
  log,
  machineInfo,
  nodeArgsFromEnv,
  ROOT,
  runBenchmark,
  startGatehouse,
  startMock,
  startScriptProcess,
  stopChildren,
  writeJson,
} from './processes.js';

const env = process.env;
const num = (name: string, fallback: number) => (env[name] ? Number(env[name]) : fallback);

const OPTS = {
  rounds: num('BENCH_ROUNDS', 3),
  warmupMs: num('BENCH_WARMUP_MS', 700),
  durationMs: num('BENCH_DURATION_MS', 3000),
  concurrency: num('BENCH_CONCURRENCY', 64),
  /** Each gateway's warm-up before the rounds (JIT, pools), discarded. */
  startWarmupMs: num('BENCH_START_WARMUP_MS', 4000),
  /** The traced gateway's sampler (always_on: every call traced; always_off isolates the context's cost). */
  sampler: env.BENCH_SAMPLER ?? 'always_on',
  build: env.BENCH_SKIP_BUILD !== '1',
  machine: env.BENCH_MACHINE ?? defaultMachineName(),
  out: resolve(env.BENCH_OUT ?? join(ROOT, 'bench', 'results')),
};
const TARGET_RATIO = 0.9;

type Mode = 'json' | 'stream';
const MODES: Mode[] = ['json', 'stream'];
const TARGETS = ['untraced', 'traced'] as const;
type Target = (typeof TARGETS)[number];

const chatBody = (stream: boolean) =>
  JSON.stringify({
    model: 'bench/fast',
    messages: [{ role: 'user', content: 'Say hello to the benchmark.' }],
    max_tokens: 16,
    temperature: 0.2,
    ...(stream ? { stream: true } : {}),
  });

interface Cell {
  mode: Mode;
  target: Target;
  requests: number;
  errors: number;
  firstError: string | null;
  rps: number;
  total: Summary;
  ttfb: Summary;
  roundsRps: number[];
  /** CPU µs per call over the measured windows: the gateway process, its event loop's thread. */
  cpuUsPerCall: number;
  loopUsPerCall: number;
}

async function sinkStats(origin: string): Promise<{ requests: number; bytes: number }> {
  const res = await request(`${origin}/stats`);
  return (await res.body.json()) as { requests: number; bytes: number };
}

async function main() {
  const started = Date.now();
  if (OPTS.build) build();
  const workDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-tracing-'));
  try {
    const mock = await startMock();
    const sink = await startScriptProcess('otlp-sink', 'otlp-sink.ts', []);
    const sinkOrigin = `http://127.0.0.1:${sink.port}`;
    log(`mock upstream at ${mock.baseUrl}, OTLP sink at ${sinkOrigin}`);
    const gateways = {
      untraced: await startGatehouse('untraced', mock.baseUrl, workDir, 'warn'),
      traced: await startGatehouse('traced', mock.baseUrl, workDir, 'warn', undefined, {
        // e.g. BENCH_TRACED_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" (written on exit).
        nodeArgs: nodeArgsFromEnv('BENCH_TRACED_NODE_ARGS'),
        env: {
          OTEL_EXPORTER_OTLP_ENDPOINT: sinkOrigin,
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
          OTEL_TRACES_SAMPLER: OPTS.sampler,
          // BENCH_AA=1: the "traced" gateway with the SDK disabled — an A/A run shows the harness's own bias.
          ...(env.BENCH_AA === '1' ? { OTEL_SDK_DISABLED: 'true' } : {}),
        },
      }),
    };

    const load = (target: Target, mode: Mode, warmupMs: number, durationMs: number) =>
      runLoad({
        origin: gateways[target].origin,
        path: '/api/v1/chat/completions',
        headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
        body: chatBody(mode === 'stream'),
        concurrency: OPTS.concurrency,
        warmupMs,
        durationMs,
        stream: mode === 'stream',
      });
    for (const target of TARGETS)
      for (const mode of MODES) await load(target, mode, 0, OPTS.startWarmupMs / MODES.length);
    const samples = new Map<string, LoadResult[]>();
    const cpu = new Map<string, { process: number; loop: number }>();
    for (let round = 1; round <= OPTS.rounds; round++) {
      for (const mode of MODES) {
        // Alternate which goes first, so neither always runs right after the other's load.
        const order = round % 2 ? TARGETS : [...TARGETS].reverse();
        for (const target of order) {
          await load(target, mode, 0, OPTS.warmupMs);
          const pid = gateways[target].pid as number;
          const before = cpuOf(pid);
          const r = await load(target, mode, 0, OPTS.durationMs);
          const after = cpuOf(pid);
          log(`round ${round} ${mode} ${target}: ${Math.round(r.rps)} req/s, ${r.errors} errors`);
          const key = `${mode}/${target}`;
          const used = cpu.get(key) ?? { process: 0, loop: 0 };
          cpu.set(key, {
            process: used.process + after.process - before.process,
            loop: used.loop + after.loop - before.loop,
          });
          samples.set(key, [...(samples.get(key) ?? []), r]);
        }
      }
    }
    const exported = await sinkStats(sinkOrigin);

    const cells: Cell[] = [];
    for (const mode of MODES)
      for (const target of TARGETS) {
        const runs = samples.get(`${mode}/${target}`) ?? [];
        const requests = runs.reduce((n, r) => n + r.requests, 0);
        const seconds = runs.reduce((n, r) => n + r.durationMs, 0) / 1000;
        const pool = (pick: (r: LoadResult) => Float64Array) => {
          const all = new Float64Array(runs.reduce((n, r) => n + pick(r).length, 0));
          let at = 0;
          for (const r of runs) {
            all.set(pick(r), at);
            at += pick(r).length;
          }
          return summarize(all);
        };
        cells.push({
          mode,
          target,
          requests,
          errors: runs.reduce((n, r) => n + r.errors, 0),
          firstError: runs.find((r) => r.firstError)?.firstError ?? null,
          rps: seconds > 0 ? requests / seconds : 0,
          total: pool((r) => r.samples.total),
          ttfb: pool((r) => r.samples.ttfb),
          roundsRps: runs.map((r) => Math.round(r.rps)),
          cpuUsPerCall: (cpu.get(`${mode}/${target}`)?.process ?? 0) / Math.max(requests, 1),
          loopUsPerCall: (cpu.get(`${mode}/${target}`)?.loop ?? 0) / Math.max(requests, 1),
        });
      }
    const ratios = MODES.map((mode) => {
      const of = (t: Target) => cells.find((c) => c.mode === mode && c.target === t)?.rps ?? 0;
      const cell = (t: Target) => cells.find((c) => c.mode === mode && c.target === t) as Cell;
      return {
        mode,
        ratio: of('untraced') > 0 ? of('traced') / of('untraced') : 0,
        cpuRatio: cell('traced').cpuUsPerCall / cell('untraced').cpuUsPerCall,
        loopRatio: cell('traced').loopUsPerCall / cell('untraced').loopUsPerCall,
      };
    });

    const date = new Date().toISOString().slice(0, 10);
    const meta = {
      date,
      wallSeconds: Math.round((Date.now() - started) / 1000),
      machine: machineInfo(OPTS.machine),
      gitCommit: gitCommit(),
      options: OPTS,
    };
    const ms = (us: number) => (us / 1000).toFixed(2);
    const lines = [
      `# Tracing cost — ${date}, ${OPTS.machine}`,
      '',
      `Gatehouse with OpenTelemetry tracing (sampler ${OPTS.sampler}; OTLP/HTTP protobuf to a local sink) beside the same build without (no OTEL_* variables), \`bench/fast\` chat completions at concurrency ${OPTS.concurrency}, ${OPTS.rounds} rounds × ${OPTS.durationMs} ms per target and mode, interleaved. Commit ${meta.gitCommit}.`,
      '',
      '| mode | target | req/s | rounds req/s | p50 ms | p99 ms | CPU µs/call | loop thread µs/call | errors |',
      '| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |',
      ...cells.map((c) => {
        const s = c.mode === 'stream' ? c.ttfb : c.total;
        return `| ${c.mode} | ${c.target} | ${Math.round(c.rps)} | ${c.roundsRps.join(', ')} | ${ms(s.p50)} | ${ms(s.p99)} | ${Math.round(c.cpuUsPerCall)} | ${Math.round(c.loopUsPerCall)} | ${c.errors}${c.firstError ? ` (${c.firstError})` : ''} |`;
      }),
      '',
      'Streams: p50/p99 to the first body byte.',
      '',
      '| mode | traced ÷ untraced req/s | target ≥ 0.90 | CPU per call traced ÷ untraced | loop thread |',
      '| --- | ---: | --- | ---: | ---: |',
      ...ratios.map(
        (r) =>
          `| ${r.mode} | ${r.ratio.toFixed(3)} | ${r.ratio >= TARGET_RATIO ? 'met' : '**NOT met**'} | ${r.cpuRatio.toFixed(3)} | ${r.loopRatio.toFixed(3)} |`,
      ),
      '',
      `The sink received ${exported.requests} export requests, ${(exported.bytes / 1e6).toFixed(1)} MB.`,
      '',
    ];
    const md = lines.join('\n');
    mkdirSync(OPTS.out, { recursive: true });
    const base = join(OPTS.out, `${date}-${OPTS.machine}-tracing`);
    writeJson(`${base}.json`, {
      meta,
      ratios,
      exported,
      cells: cells.map(({ total, ttfb, ...c }) => ({ ...c, total, ttfb })),
    });
    writeFileSync(`${base}.md`, md);
    process.stdout.write(`${md}\n`);
    log(`wrote ${relative(ROOT, base)}.md and .json in ${meta.wallSeconds} s`);
  } finally {
    await stopChildren();
    rmSync(workDir, { recursive: true, force: true });
  }
}

runBenchmark(main);
