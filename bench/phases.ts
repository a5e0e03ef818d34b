/**
 * Where a call's time goes at concurrency 1 (`npm run bench:phases`; bench/NOTES.md §7).
 *
 * Over sockets, one round's p50 at concurrency 1 moves by ±60 µs on a shared 2-core VM — more than
 * most changes to the hot path are worth. This measures from inside the processes instead: the floor
 * proxy and Gatehouse run with bench/phase-probe.mjs preloaded, which times every call from Node's
 * diagnostics channels — arrival → upstream request (pre), the upstream's round trip, upstream
 * answer → response written (post). pre + post ("in-process") is what a call costs in the gateway's
 * own process; its median moves by a few µs between rounds, so a change of 5 µs shows.
 *
 * Starts the instant mock, the floor (bench/floor-proxy.ts) and Gatehouse (dist/cli.js, built
 * first, configured as in `npm run bench`), and with BENCH_BASELINE another build side by side.
 * Each round runs every target for BENCH_WARMUP_MS (700, discarded) then BENCH_DURATION_MS (3000)
 * at concurrency 1; BENCH_ROUNDS (6). Reported: medians over the rounds of each round's p50.
 * Results: bench/results/<date>-<machine>-phases.md and .json. Other knobs: BENCH_PREWARM_MS (4000),
 * BENCH_SKIP_BUILD, BENCH_MACHINE, BENCH_OUT.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runLoad } from './loadgen.js';
import {
  API_KEY,
  build,
  defaultMachineName,
  gitCommit,
  log,
  machineInfo,
  nodeArgsFromEnv,
  ROOT,
  runBenchmark,
  sleep,
  startGatehouse,
  startMock,
  startScriptProcess,
  stopChildren,
  writeJson,
} from './processes.js';

const env = process.env;
const OPTS = {
  rounds: Number(env.BENCH_ROUNDS ?? 6),
  durationMs: Number(env.BENCH_DURATION_MS ?? 3000),
  warmupMs: Number(env.BENCH_WARMUP_MS ?? 700),
  prewarmMs: Number(env.BENCH_PREWARM_MS ?? 4000),
  skipBuild: env.BENCH_SKIP_BUILD === '1',
  baseline: env.BENCH_BASELINE ? resolve(env.BENCH_BASELINE) : null,
  /** Node flags added to the baseline's (after Gatehouse's own: a repeated V8 flag's last value wins). */
  baselineNodeArgs: nodeArgsFromEnv('BENCH_BASELINE_NODE_ARGS'),
  machine: env.BENCH_MACHINE ?? defaultMachineName(),
  out: resolve(env.BENCH_OUT ?? join(ROOT, 'bench', 'results')),
};
const PROBE = join(ROOT, 'bench', 'phase-probe.mjs');
const PHASES = ['pre', 'upstream', 'post', 'inProcess'] as const;
type Phase = (typeof PHASES)[number];
interface ProbeReport extends Record<Phase, { p50: number | null; p90: number | null }> {
  calls: number;
  discarded: number;
}

interface RoundResult {
  p50: number;
  rps: number;
  errors: number;
  phases: ProbeReport | null;
}

interface Target {
  name: string;
  origin: string;
  path: string;
  model: string;
  pid: number;
  /** The probe's file (none for `direct`). */
  phasesFile: string | null;
}

/** Asks the probe in `t` for the calls since its last report (and resets it). */
async function probeReport(t: Target): Promise<ProbeReport | null> {
  if (!t.phasesFile) return null;
  rmSync(t.phasesFile, { force: true });
  process.kill(t.pid, 'SIGUSR2');
  for (let i = 0; i < 100 && !existsSync(t.phasesFile); i++) await sleep(20);
  return JSON.parse(readFileSync(t.phasesFile, 'utf8')) as ProbeReport;
}

const load = (t: Target, durationMs: number) =>
  runLoad({
    origin: t.origin,
    path: t.path,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` },
    body: JSON.stringify({
      model: t.model,
      messages: [{ role: 'user', content: 'Say hello to the benchmark.' }],
      max_tokens: 16,
    }),
    concurrency: 1,
    warmupMs: 50,
    durationMs,
    stream: false,
  });

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[Math.floor((s.length - 1) / 2)] as number) : Number.NaN;
};
const fmt = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '–');

async function main() {
  if (!OPTS.skipBuild) build();
  const workDir = mkdtempSync(join(tmpdir(), 'gatehouse-phases-'));
  const mock = await startMock();
  const targets: Target[] = [
    {
      name: 'direct',
      origin: `http://127.0.0.1:${mock.port}`,
      path: '/v1/chat/completions',
      model: 'fast',
      pid: mock.pid,
      phasesFile: null,
    },
  ];
  const phasesFile = (name: string) => join(workDir, `${name}.phases.json`);
  const probed = (name: string, nodeArgs: string[] = []) => ({
    nodeArgs: ['--import', PROBE, ...nodeArgs],
    env: { BENCH_PHASES_FILE: phasesFile(name) },
  });
  const floor = await startScriptProcess(
    'floor',
    'floor-proxy.ts',
    ['--upstream', `http://127.0.0.1:${mock.port}`],
    probed('floor'),
  );
  targets.push({
    name: 'floor',
    origin: `http://127.0.0.1:${floor.port}`,
    path: '/v1/chat/completions',
    model: 'fast',
    pid: floor.pid,
    phasesFile: phasesFile('floor'),
  });
  const builds: [string, string | undefined][] = [['gatehouse', undefined]];
  if (OPTS.baseline) builds.push(['baseline', OPTS.baseline]);
  for (const [name, cli] of builds) {
    const extraArgs = name === 'baseline' ? OPTS.baselineNodeArgs : [];
    const gh = await startGatehouse(name, mock.baseUrl, workDir, 'warn', cli, probed(name, extraArgs));
    targets.push({
      name,
      origin: gh.origin,
      path: '/api/v1/chat/completions',
      model: 'bench/fast',
      pid: gh.pid ?? 0,
      phasesFile: phasesFile(name),
    });
  }

  for (const t of targets) {
    log(`pre-warming ${t.name} (${OPTS.prewarmMs} ms)`);
    await load(t, OPTS.prewarmMs);
  }
  const rounds: Record<string, RoundResult[]> = Object.fromEntries(targets.map((t) => [t.name, []]));
  for (let r = 1; r <= OPTS.rounds; r++) {
    for (const t of targets) {
      await load(t, OPTS.warmupMs);
      await probeReport(t); // drops the warm-up's calls
      const res = await load(t, OPTS.durationMs);
      const phases = await probeReport(t);
      rounds[t.name]?.push({ p50: res.total.p50, rps: res.rps, errors: res.errors, phases });
      if (res.errors) throw new Error(`${t.name}: ${res.errors} errors (${res.firstError})`);
      log(
        `round ${r} ${t.name}: p50 ${fmt(res.total.p50)} µs` +
          (phases ? ` in-process ${fmt(phases.inProcess.p50 ?? Number.NaN)} µs (${phases.calls} calls)` : ''),
      );
    }
  }
  await stopChildren();
  rmSync(workDir, { recursive: true, force: true });

  const direct = median((rounds.direct ?? []).map((x) => x.p50));
  const rows = targets.map((t) => {
    const rs = rounds[t.name] ?? [];
    const phase = (p: Phase, q: 'p50' | 'p90') =>
      t.phasesFile ? median(rs.map((x) => x.phases?.[p][q] ?? Number.NaN)) : Number.NaN;
    return {
      target: t.name,
      p50: median(rs.map((x) => x.p50)),
      added: t.name === 'direct' ? Number.NaN : median(rs.map((x) => x.p50)) - direct,
      roundP50s: rs.map((x) => Math.round(x.p50)),
      pre: phase('pre', 'p50'),
      upstream: phase('upstream', 'p50'),
      post: phase('post', 'p50'),
      inProcess: phase('inProcess', 'p50'),
      inProcessP90: phase('inProcess', 'p90'),
      inProcessRounds: rs.map((x) => Math.round((x.phases?.inProcess.p50 ?? Number.NaN) * 10) / 10),
    };
  });

  const date = new Date().toISOString().slice(0, 10);
  const meta = { date, commit: gitCommit(), machine: machineInfo(OPTS.machine), options: OPTS };
  const floorRow = rows.find((r) => r.target === 'floor');
  const md = [
    `# Where a call's time goes at concurrency 1 — ${date}, ${OPTS.machine}`,
    '',
    `Machine: ${meta.machine.cpu}, ${meta.machine.cores} cores, Node ${meta.machine.node}; commit \`${meta.commit}\`. ` +
      `Run: \`npm run bench:phases\` — ${OPTS.rounds} rounds × ${OPTS.durationMs / 1000} s per target at concurrency 1; ` +
      'medians over the rounds of each round’s p50, µs.',
    '',
    'Socket columns are seen by the load generator ("added" = minus `direct`). Phase columns are timed inside the ' +
      'process by bench/phase-probe.mjs: pre = arrival → upstream request, upstream = its round trip, ' +
      'post = upstream answer → response written; in-process = pre + post per call.',
    '',
    '| target | p50 | added | pre | upstream | post | in-process p50 | in-process p90 | in-process − floor | in-process by round |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
    ...rows.map(
      (r) =>
        `| ${r.target} | ${fmt(r.p50)} | ${fmt(r.added)} | ${fmt(r.pre)} | ${fmt(r.upstream)} | ${fmt(r.post)} | ` +
        `${fmt(r.inProcess)} | ${fmt(r.inProcessP90)} | ${r.target === 'floor' || !floorRow ? '' : fmt(r.inProcess - floorRow.inProcess)} | ` +
        `${r.target === 'direct' ? '' : r.inProcessRounds.join(' ')} |`,
    ),
    '',
  ].join('\n');
  mkdirSync(OPTS.out, { recursive: true });
  const base = join(OPTS.out, `${date}-${OPTS.machine}-phases`);
  writeJson(`${base}.json`, { meta, rows, rounds });
  writeFileSync(`${base}.md`, md);
  process.stdout.write(`${md}\n`);
  log(`wrote ${base}.md and .json`);
}

runBenchmark(main);
