/**
 * The gateway latency benchmark (`npm run bench`). See bench/README.md for how to read it.
 *
 * Starts, each as its own process: the instant mock upstream (bench/mock-upstream.ts), Gatehouse
 * (`node dist/cli.js serve`, built first) on a throwaway data directory with the model `bench/fast`
 * pointing at the mock, and — when it installs and runs here — the open-source Portkey gateway from
 * npm, installed into a throwaway directory — and the floor (bench/floor-proxy.ts), a bare Node.js
 * pass-through proxy. This process is only the load generator
 * (bench/loadgen.ts): it shares no event loop with anything it measures.
 *
 * Then, for each scenario (non-streaming / streaming × concurrency 1 / 64), it runs the targets
 * side by side — direct to the mock, through the floor proxy, through Gatehouse, through Portkey —
 * interleaved over several
 * rounds (so drift on the machine hits every target alike), pools each target's samples over the
 * rounds and reports p50 / p99 and the latency each gateway adds over calling the mock directly,
 * req/s, and ratios. Results: bench/results/<date>-<machine>.md and .json (`-2`, `-3`… when taken).
 *
 * Every address is 127.0.0.1. Knobs (environment): BENCH_ROUNDS (3), BENCH_DURATION_MS (3000 per
 * round and target), BENCH_WARMUP_MS (700 before each measurement), BENCH_PREWARM_MS (4000: each
 * server process is first warmed up this long, discarded), BENCH_CONCURRENCY ("1,16,64,256"; non-streaming), BENCH_STREAM_CONCURRENCY ("1,64"), BENCH_MODES ("json,stream"),
 * BENCH_PORTKEY (1; 0 skips it), BENCH_INFO_LOG (1: also Gatehouse at LOG_LEVEL=info, non-streaming),
 * BENCH_FLOOR (1: the bare proxy, and the same as one Fastify route),
 * BENCH_SKIP_BUILD (0), BENCH_CPU_PROF (a directory: profile the Gatehouse child with --cpu-prof),
 * BENCH_MACHINE (short machine name for the file name), BENCH_OUT (bench/results), BENCH_KEEP (0),
 * BENCH_BASELINE (path to another build's dist/cli.js, measured side by side as `baseline`;
 * BENCH_BASELINE_NODE_ARGS adds Node flags to it only),
 * BENCH_LANES_CONCURRENCY ("1,64"), BENCH_LANES_TRANSLATED (1; 0 leaves the lanes' translated rows out),
 * BENCH_SCENARIOS ("chat,lanes,messages,policy,mgmt-read": which scenarios; `chat` is the table
 * above, `lanes` the pass-through lanes beside translations, the floor and Portkey (bench/lanes.ts),
 * the others are Gatehouse-only, see bench/other-scenarios.ts), BENCH_PG_URL (the PostgreSQL server
 * for the `mgmt-read` PostgreSQL row, postgres://postgres@127.0.0.1:5432/test; a fresh database is
 * created on it and dropped afterwards). `workers` (not in the default set: it starts a third
 * gateway) compares `serve --workers 2` with one process at concurrency 64.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { type LanesResult, measureLanes } from './lanes.js';
import { lanesSection } from './lanes-report.js';
import { type LoadResult, runLoad, type Summary, summarize } from './loadgen.js';
import { mbOfKiB } from './memory.js';
import {
  checkTarget,
  createGuardrail,
  freshPostgresDatabase,
  keyWithGuardrail,
  type LoadTarget,
  MANAGEMENT_KEY,
  measureGroup,
  messagesBody,
  type OtherCell,
  otherScenariosTable,
  policyBody,
  SCENARIO_NAMES,
  type ScenarioName,
} from './other-scenarios.js';
import {
  API_KEY,
  build,
  defaultMachineName,
  freePort,
  log,
  machineInfo,
  measuring,
  nodeArgsFromEnv,
  type ProcessUse,
  poolUse,
  post,
  processCells,
  ROOT,
  gitCommit as readGitCommit,
  runBenchmark,
  startChild,
  startGatehouse as startGatehouseProcess,
  startMock,
  startScriptProcess,
  stopChildren,
  waitFor,
  writeJson,
} from './processes.js';

const env = process.env;
const num = (name: string, fallback: number) => (env[name] ? Number(env[name]) : fallback);
const flag = (name: string, fallback: boolean) => (env[name] ? env[name] !== '0' : fallback);

const OPTS = {
  rounds: num('BENCH_ROUNDS', 3),
  durationMs: num('BENCH_DURATION_MS', 3000),
  warmupMs: num('BENCH_WARMUP_MS', 700),
  prewarmMs: num('BENCH_PREWARM_MS', 4000),
  concurrency: (env.BENCH_CONCURRENCY ?? '1,16,64,256').split(',').map(Number),
  /** Streaming runs at these (the issue: 1 and 64). */
  streamConcurrency: (env.BENCH_STREAM_CONCURRENCY ?? '1,64').split(',').map(Number),
  modes: (env.BENCH_MODES ?? 'json,stream').split(',') as Mode[],
  portkey: flag('BENCH_PORTKEY', true),
  portkeyVersion: env.BENCH_PORTKEY_VERSION ?? '1.15.2',
  infoLog: flag('BENCH_INFO_LOG', true),
  floor: flag('BENCH_FLOOR', true),
  build: !flag('BENCH_SKIP_BUILD', false),
  cpuProf: env.BENCH_CPU_PROF ? resolve(env.BENCH_CPU_PROF) : null,
  machine: env.BENCH_MACHINE ?? defaultMachineName(),
  out: resolve(env.BENCH_OUT ?? join(ROOT, 'bench', 'results')),
  keep: flag('BENCH_KEEP', false),
  /** Another build's dist/cli.js, measured side by side as `baseline` (A/B of a change). */
  baseline: env.BENCH_BASELINE ? resolve(env.BENCH_BASELINE) : null,
  /** Node flags added to the baseline's (a repeated V8 flag's last value wins): A/B of a flag. */
  baselineNodeArgs: nodeArgsFromEnv('BENCH_BASELINE_NODE_ARGS'),
  scenarios: (env.BENCH_SCENARIOS ?? SCENARIO_NAMES.filter((s) => s !== 'workers').join(','))
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean) as ScenarioName[],
  pgUrl: env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
};
for (const s of OPTS.scenarios)
  if (!SCENARIO_NAMES.includes(s))
    throw new Error(`BENCH_SCENARIOS: unknown scenario ${s} (known: ${SCENARIO_NAMES.join(', ')})`);
const has = (s: ScenarioName) => OPTS.scenarios.includes(s);
const levels = (mode: 'json' | 'stream') => (mode === 'stream' ? OPTS.streamConcurrency : OPTS.concurrency);

type Mode = 'json' | 'stream';
type TargetName =
  | 'direct'
  | 'floor'
  | 'floor-fastify'
  | 'gatehouse'
  | 'gatehouse-info'
  | 'baseline'
  | 'portkey';

interface Target {
  name: TargetName;
  origin: string;
  path: string;
  headers: Record<string, string>;
  model: string;
  modes: Mode[];
  /** The process serving it (its CPU and peak RSS are reported). */
  pid?: number;
}

// ---------------------------------------------------------------------------------------------
// The processes under test (the shared ones are in bench/processes.ts)

/** Gatehouse as in bench/processes.ts; the `gatehouse` target runs with --cpu-prof under BENCH_CPU_PROF. */
const startGatehouse = (
  name: string,
  mockBaseUrl: string,
  workDir: string,
  logLevel: string,
  cli?: string,
  extraEnv: Record<string, string> = {},
) =>
  startGatehouseProcess(name, mockBaseUrl, workDir, logLevel, cli, {
    nodeArgs:
      OPTS.cpuProf && name === 'gatehouse'
        ? ['--cpu-prof', `--cpu-prof-dir=${OPTS.cpuProf}`]
        : name === 'baseline'
          ? OPTS.baselineNodeArgs
          : [],
    // The management key of the Gatehouse-only scenarios (keys, guardrails, management reads).
    env: { GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY: MANAGEMENT_KEY, ...extraEnv },
  });

/** Installs the Portkey gateway from npm into a throwaway directory and starts it; null + why on failure. */
async function startPortkey(
  workDir: string,
  mockBaseUrl: string,
): Promise<{ origin: string; pid: number; version: string; note: string } | { error: string }> {
  const dir = join(workDir, 'portkey');
  mkdirSync(dir, { recursive: true });
  // @portkey-ai/gateway's Node entry fails every streamed call with "TypeError: immutable" under
  // @hono/node-server ≥ 1.14 (Portkey-AI/gateway#1389); its dependency range lets npm pick those.
  // Pin the last minor before the change, as a lockfile would.
  const honoPin = '1.13.8';
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ private: true, overrides: { '@hono/node-server': honoPin } }, null, 2),
  );
  try {
    execFileSync(
      'npm',
      [
        'install',
        '--no-audit',
        '--no-fund',
        '--ignore-scripts',
        `@portkey-ai/gateway@${OPTS.portkeyVersion}`,
      ],
      { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], timeout: 180_000 },
    );
  } catch (err) {
    return {
      error: `npm install @portkey-ai/gateway@${OPTS.portkeyVersion} failed: ${(err as Error).message}`,
    };
  }
  const entry = join(dir, 'node_modules', '@portkey-ai', 'gateway', 'build', 'start-server.js');
  if (!existsSync(entry)) return { error: `no ${relative(dir, entry)} in the installed package` };
  const port = await freePort();
  const { child, tail } = startChild(
    'portkey',
    process.execPath,
    [entry, `--port=${port}`, '--headless'],
    {
      PATH: env.PATH,
      HOME: env.HOME,
      NODE_ENV: 'production',
    },
    dir,
  );
  const origin = `http://127.0.0.1:${port}`;
  try {
    await waitFor('portkey', async () => {
      if (child.exitCode !== null) throw new Error(`exited: ${tail()}`);
      const r = await post(origin, '/v1/chat/completions', portkeyHeaders(mockBaseUrl), {
        model: 'fast',
        messages: [{ role: 'user', content: 'hi' }],
      });
      return r.status === 200;
    });
  } catch (err) {
    return { error: `Portkey did not start on Node ${process.version}: ${(err as Error).message}` };
  }
  return {
    origin,
    pid: child.pid ?? 0,
    version: OPTS.portkeyVersion,
    note: `@portkey-ai/gateway ${OPTS.portkeyVersion} from npm (@hono/node-server pinned to ${honoPin}, see Portkey-AI/gateway#1389), provider openai with x-portkey-custom-host`,
  };
}

const portkeyHeaders = (mockBaseUrl: string) => ({
  authorization: 'Bearer sk-bench-upstream',
  'x-portkey-provider': 'openai',
  'x-portkey-custom-host': mockBaseUrl,
});

// ---------------------------------------------------------------------------------------------
// Measuring

const bodyFor = (model: string, mode: Mode) =>
  JSON.stringify({
    model,
    messages: [{ role: 'user', content: 'Say hello to the benchmark.' }],
    max_tokens: 16,
    ...(mode === 'stream' ? { stream: true } : {}),
  });

/** A first call of each kind through each target, checked for the right shape. */
async function sanity(t: Target) {
  for (const mode of t.modes) {
    const r = await post(t.origin, t.path, t.headers, JSON.parse(bodyFor(t.model, mode)));
    if (r.status !== 200) throw new Error(`${t.name} ${mode}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
    if (mode === 'stream' && !r.text.includes('data: [DONE]'))
      throw new Error(`${t.name} stream: no [DONE] in ${r.text.slice(0, 300)}`);
    if (t.name.startsWith('gatehouse') || t.name === 'baseline') {
      if (mode === 'json') {
        // On the chat lane the body is the upstream's (its model name), with the cost added.
        const b = JSON.parse(r.text) as { object?: string; usage?: { cost?: number } };
        if (b.object !== 'chat.completion' || !(Number(b.usage?.cost) > 0))
          throw new Error(`gatehouse json: unexpected body ${r.text.slice(0, 300)}`);
      } else if (!r.text.includes('"cost"')) throw new Error(`gatehouse stream: no usage cost in ${r.text}`);
    }
  }
}

interface Cell {
  target: TargetName;
  mode: Mode;
  concurrency: number;
  requests: number;
  errors: number;
  firstError: string | null;
  rps: number;
  total: Summary;
  ttfb: Summary;
  /** The serving process: cores busy (mean over rounds), CPU per request, peak RSS (max). */
  cpuCores: number | null;
  cpuUsPerRequest: number | null;
  peakRssMB: number | null;
  rounds: {
    rps: number;
    p50: number;
    p99: number;
    ttfbP50: number;
    ttfbP99: number;
    errors: number;
    cpuCores: number | null;
    peakRssMB: number | null;
  }[];
}

function pool(
  target: TargetName,
  mode: Mode,
  concurrency: number,
  runs: LoadResult[],
  uses: (ProcessUse | null)[],
): Cell {
  const concat = (pick: (r: LoadResult) => Float64Array) => {
    const parts = runs.map(pick);
    const out = new Float64Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  };
  const requests = runs.reduce((n, r) => n + r.requests, 0);
  const ms = runs.reduce((n, r) => n + r.durationMs, 0);
  const errors = runs.reduce((n, r) => n + r.errors, 0);
  const rps = Math.round((requests / ms) * 1000);
  const use = poolUse(uses, rps);
  return {
    target,
    mode,
    concurrency,
    requests,
    errors,
    firstError: runs.find((r) => r.firstError)?.firstError ?? null,
    rps,
    total: summarize(concat((r) => r.samples.total)),
    ttfb: summarize(concat((r) => r.samples.ttfb)),
    ...use,
    rounds: runs.map((r, i) => ({
      rps: r.rps,
      p50: r.total.p50,
      p99: r.total.p99,
      ttfbP50: r.ttfb.p50,
      ttfbP99: r.ttfb.p99,
      errors: r.errors,
      cpuCores: uses[i]?.cores ?? null,
      peakRssMB: uses[i] ? Math.round(mbOfKiB(uses[i].peakKiB)) : null,
    })),
  };
}

// ---------------------------------------------------------------------------------------------
// Reporting

const fmt = (v: number) =>
  Number.isFinite(v) ? v.toLocaleString('en-US', { maximumFractionDigits: 0 }) : '–';
const ratio = (a: number, b: number) => (b > 0 && Number.isFinite(a / b) ? `${(a / b).toFixed(2)}×` : '–');

function report(
  meta: Record<string, unknown>,
  cells: Cell[],
  lanes: LanesResult,
  others: OtherCell[],
  notes: string[],
) {
  const lines: string[] = [];
  const m = meta as {
    date: string;
    machine: { name: string; cpu: string; cores: number; memoryGiB: number; os: string; node: string };
    options: typeof OPTS;
    portkey: string;
    gitCommit: string;
  };
  lines.push(`# Gateway overhead benchmark — ${m.date}, ${m.machine.name}`, '');
  lines.push(
    `Machine: ${m.machine.cpu}, ${m.machine.cores} cores, ${m.machine.memoryGiB} GiB, Linux ${m.machine.os}, Node ${m.machine.node}. Gatehouse at commit \`${m.gitCommit}\` (plus the working tree).`,
    '',
    `Run: \`npm run bench\` — ${m.options.rounds} interleaved rounds × ${m.options.durationMs / 1000} s per target and scenario (after a ${m.options.warmupMs} ms warm-up each), closed loop, keep-alive, samples pooled over the rounds. Latency in µs (exact percentiles over all samples). "Added" = the target's percentile minus the direct-to-mock percentile of the same scenario in this run. Streams are timed to the first body byte (TTFB).`,
    '',
    `Gatehouse: \`node dist/cli.js serve\`, SQLite on a temp dir, model \`bench/fast\` → mock as \`openai-compatible\` (and \`bench/claude\` → mock as \`anthropic\`, for the lanes), bootstrap API key, credits granted, rate limit raised, **LOG_LEVEL=warn** (no per-request log lines; \`gatehouse-info\` rows are the same at the default \`info\`, stdout to /dev/null). Portkey: ${m.portkey}.`,
    '',
    '`floor` is bench/floor-proxy.ts: a bare node:http + undici pass-through proxy (no auth, policy, accounting or framework), as its own process — the least any Node.js gateway hop costs on this machine. `floor-fastify` is the same proxy as one Fastify route (no hooks): the difference between the two is what the HTTP framework alone costs.',
    '',
  );
  const direct = (mode: Mode, c: number) =>
    cells.find((x) => x.target === 'direct' && x.mode === mode && x.concurrency === c);
  const portkey = (mode: Mode, c: number) =>
    cells.find((x) => x.target === 'portkey' && x.mode === mode && x.concurrency === c);
  if (cells.length)
    lines.push(
      '| scenario | conc. | target | p50 µs | p99 µs | p50 added µs | p99 added µs | req/s | req/s vs direct | req/s vs Portkey | CPU cores | CPU µs/req | peak RSS MB | errors |',
      '| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    );
  for (const mode of cells.length ? OPTS.modes : []) {
    for (const c of levels(mode)) {
      const d = direct(mode, c);
      const pk = portkey(mode, c);
      for (const x of cells.filter((y) => y.mode === mode && y.concurrency === c)) {
        const s = mode === 'stream' ? x.ttfb : x.total;
        const ds = d ? (mode === 'stream' ? d.ttfb : d.total) : null;
        const added = (k: 'p50' | 'p99') => (ds && x.target !== 'direct' ? fmt(s[k] - ds[k]) : '');
        lines.push(
          `| ${mode === 'stream' ? 'streaming (TTFB)' : 'non-streaming'} | ${c} | ${x.target} | ${fmt(s.p50)} | ${fmt(s.p99)} | ${added('p50')} | ${added('p99')} | ${fmt(x.rps)} | ${d && x.target !== 'direct' ? ratio(x.rps, d.rps) : ''} | ${pk && x.target.startsWith('gatehouse') ? ratio(x.rps, pk.rps) : ''} | ${processCells(x)} | ${x.errors} |`,
        );
      }
    }
  }
  if (cells.length) lines.push('');
  if (cells.length && OPTS.modes.includes('stream')) {
    lines.push(
      'Streams to the end of the body (total), µs:',
      '',
      '| conc. | target | p50 | p99 |',
      '| ---: | --- | ---: | ---: |',
    );
    for (const c of levels('stream'))
      for (const x of cells.filter((y) => y.mode === 'stream' && y.concurrency === c))
        lines.push(`| ${c} | ${x.target} | ${fmt(x.total.p50)} | ${fmt(x.total.p99)} |`);
    lines.push('');
  }
  // The targets of the issue.
  const verdicts: string[] = [];
  for (const mode of OPTS.modes) {
    const d1 = direct(mode, 1);
    const g1 = cells.find((x) => x.target === 'gatehouse' && x.mode === mode && x.concurrency === 1);
    const pick = (x: Cell) => (mode === 'stream' ? x.ttfb : x.total);
    if (d1 && g1) {
      const p50 = pick(g1).p50 - pick(d1).p50;
      const p99 = pick(g1).p99 - pick(d1).p99;
      verdicts.push(
        `- ${mode}, concurrency 1: p50 added ${fmt(p50)} µs (target ≤ 300: ${p50 <= 300 ? 'met' : 'NOT met'}), p99 added ${fmt(p99)} µs (target ≤ 2,000: ${p99 <= 2000 ? 'met' : 'NOT met'})`,
      );
    }
    // The issue's throughput target is at concurrency 64 (else the highest measured).
    const cMax = levels(mode).includes(64) ? 64 : Math.max(...levels(mode));
    const g = cells.find((x) => x.target === 'gatehouse' && x.mode === mode && x.concurrency === cMax);
    const pk = portkey(mode, cMax);
    if (g && pk)
      verdicts.push(
        `- ${mode}, concurrency ${cMax}: Gatehouse ${fmt(g.rps)} req/s vs Portkey ${fmt(pk.rps)} req/s = ${ratio(g.rps, pk.rps)} (target ≥ 5×: ${g.rps >= 5 * pk.rps ? 'met' : 'NOT met'})`,
      );
  }
  if (verdicts.length) lines.push('Targets (from the issue):', '', ...verdicts, '');
  lines.push(...lanesSection(lanes));
  lines.push(...otherScenariosTable(others));
  if (notes.length) lines.push('Notes:', '', ...notes.map((n) => `- ${n}`), '');
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const started = Date.now();
  if (OPTS.build) build();
  const workDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-'));
  const notes: string[] = [];
  let dropPostgres: (() => Promise<void>) | null = null;
  const chat = has('chat');
  // Portkey and the floor serve the main table and the lanes.
  const beside = chat || has('lanes');
  try {
    const mock = await startMock();
    log(`mock upstream at ${mock.baseUrl}`);
    const gh = await startGatehouse('gatehouse', mock.baseUrl, workDir, 'warn');
    log(`gatehouse at ${gh.origin} (pid ${gh.pid}, LOG_LEVEL=warn)`);
    const ghInfo =
      chat && OPTS.infoLog ? await startGatehouse('gatehouse-info', mock.baseUrl, workDir, 'info') : null;
    if (ghInfo) log(`gatehouse-info at ${ghInfo.origin} (LOG_LEVEL=info)`);
    const baseGh =
      (chat || has('lanes')) && OPTS.baseline
        ? await startGatehouse('baseline', mock.baseUrl, workDir, 'warn', OPTS.baseline)
        : null;
    if (baseGh) log(`baseline (${OPTS.baseline}) at ${baseGh.origin}`);

    let portkeyNote = 'not measured (BENCH_PORTKEY=0)';
    let pk: { origin: string; pid: number } | null = null;
    if (beside && OPTS.portkey) {
      log(`installing @portkey-ai/gateway@${OPTS.portkeyVersion} into ${workDir}/portkey`);
      const r = await startPortkey(workDir, mock.baseUrl);
      if ('error' in r) {
        portkeyNote = `could not be measured: ${r.error}`;
        notes.push(`Portkey ${portkeyNote}`);
        log(portkeyNote);
      } else {
        pk = r;
        portkeyNote = r.note;
        log(`portkey at ${r.origin}`);
      }
    }

    const floor =
      beside && OPTS.floor
        ? await startScriptProcess('floor', 'floor-proxy.ts', ['--upstream', `http://127.0.0.1:${mock.port}`])
        : null;
    if (floor) log(`floor proxy at http://127.0.0.1:${floor.port}`);
    const floorFastify =
      chat && OPTS.floor
        ? await startScriptProcess('floor-fastify', 'floor-proxy.ts', [
            '--upstream',
            `http://127.0.0.1:${mock.port}`,
            '--fastify',
          ])
        : null;

    const ghHeaders = { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` };
    const targets: Target[] = [
      {
        name: 'direct',
        origin: `http://127.0.0.1:${mock.port}`,
        path: '/v1/chat/completions',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench-upstream' },
        model: 'fast',
        modes: OPTS.modes,
        pid: mock.pid,
      },
      {
        name: 'gatehouse',
        origin: gh.origin,
        path: '/api/v1/chat/completions',
        headers: ghHeaders,
        model: 'bench/fast',
        modes: OPTS.modes,
        pid: gh.pid,
      },
    ];
    const floors = [
      ['floor', floor],
      ['floor-fastify', floorFastify],
    ] as const;
    let at = 1;
    for (const [name, f] of floors) {
      if (!f) continue;
      targets.splice(at++, 0, {
        name,
        origin: `http://127.0.0.1:${f.port}`,
        path: '/v1/chat/completions',
        headers: { 'content-type': 'application/json' },
        model: 'bench/fast',
        modes: OPTS.modes,
        pid: f.pid,
      });
    }
    if (ghInfo)
      targets.push({
        name: 'gatehouse-info',
        origin: ghInfo.origin,
        path: '/api/v1/chat/completions',
        headers: ghHeaders,
        model: 'bench/fast',
        modes: OPTS.modes.filter((m) => m === 'json'),
        pid: ghInfo.pid,
      });
    if (baseGh)
      targets.push({
        name: 'baseline',
        origin: baseGh.origin,
        path: '/api/v1/chat/completions',
        headers: ghHeaders,
        model: 'bench/fast',
        modes: OPTS.modes,
        pid: baseGh.pid,
      });
    if (pk)
      targets.push({
        name: 'portkey',
        origin: pk.origin,
        path: '/v1/chat/completions',
        headers: { 'content-type': 'application/json', ...portkeyHeaders(mock.baseUrl) },
        model: 'fast',
        modes: OPTS.modes,
        pid: pk.pid,
      });
    if (!chat) targets.length = 0;
    for (const t of targets) await sanity(t);
    // Every server process gets a longer warm-up first (JIT, pools, caches), discarded.
    for (const t of targets.filter((x) => x.name !== 'direct')) {
      for (const mode of t.modes) {
        await runLoad({
          origin: t.origin,
          path: t.path,
          headers: t.headers,
          body: bodyFor(t.model, mode),
          concurrency: Math.max(...levels(mode)),
          warmupMs: 0,
          durationMs: mode === 'json' ? OPTS.prewarmMs : OPTS.prewarmMs / 2,
          stream: mode === 'stream',
        });
      }
      log(`warmed up ${t.name}`);
    }

    const cells: Cell[] = [];
    for (const mode of OPTS.modes) {
      for (const concurrency of levels(mode)) {
        const runs = new Map<TargetName, LoadResult[]>();
        const uses = new Map<TargetName, (ProcessUse | null)[]>();
        for (let round = 0; round < OPTS.rounds; round++) {
          for (const t of targets.filter((x) => x.modes.includes(mode))) {
            const [r, use] = await measuring(t.pid, () =>
              runLoad({
                origin: t.origin,
                path: t.path,
                headers: t.headers,
                body: bodyFor(t.model, mode),
                concurrency,
                warmupMs: OPTS.warmupMs,
                durationMs: OPTS.durationMs,
                stream: mode === 'stream',
              }),
            );
            const s = mode === 'stream' ? r.ttfb : r.total;
            log(
              `${mode} c=${concurrency} round ${round + 1} ${t.name}: p50 ${s.p50} µs p99 ${s.p99} µs ${r.rps} req/s${r.errors ? ` ${r.errors} errors (${r.firstError})` : ''}`,
            );
            runs.set(t.name, [...(runs.get(t.name) ?? []), r]);
            uses.set(t.name, [...(uses.get(t.name) ?? []), use]);
          }
        }
        for (const [name, rs] of runs) cells.push(pool(name, mode, concurrency, rs, uses.get(name) ?? []));
      }
    }

    const opts = {
      rounds: OPTS.rounds,
      durationMs: OPTS.durationMs,
      warmupMs: OPTS.warmupMs,
      prewarmMs: OPTS.prewarmMs,
    };
    const lanes: LanesResult = has('lanes')
      ? await measureLanes({
          mock,
          gatehouse: { origin: gh.origin, pid: gh.pid, headers: ghHeaders },
          floor,
          portkey: pk,
          baseline: baseGh,
          translated: flag('BENCH_LANES_TRANSLATED', true),
          modes: OPTS.modes,
          concurrencies: (env.BENCH_LANES_CONCURRENCY ?? '1,64').split(',').map(Number),
          ...opts,
        })
      : { cells: [], frames: [], skipped: [] };

    // The Gatehouse-only scenarios.
    const others: OtherCell[] = [];
    const directJson: LoadTarget = {
      scenario: '',
      target: 'direct',
      origin: `http://127.0.0.1:${mock.port}`,
      path: '/v1/chat/completions',
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench-upstream' },
      body: bodyFor('fast', 'json'),
      reference: true,
      pid: mock.pid,
    };
    const inference: LoadTarget[] = [];
    if (has('messages'))
      inference.push({
        scenario: 'messages',
        target: 'gatehouse',
        origin: gh.origin,
        path: '/api/v1/messages',
        method: 'POST',
        headers: ghHeaders,
        body: messagesBody('bench/fast'),
        pid: gh.pid,
      });
    if (has('policy')) {
      const { apiKey } = await keyWithGuardrail(gh.origin);
      inference.push({
        scenario: 'policy',
        target: 'gatehouse',
        origin: gh.origin,
        path: '/api/v1/chat/completions',
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
        body: policyBody('bench/fast'),
        pid: gh.pid,
      });
    }
    if (inference.length) {
      const group = [{ ...directJson, scenario: inference.map((t) => t.scenario).join('+') }, ...inference];
      for (const t of group) await checkTarget(t);
      others.push(...(await measureGroup(group, [1, 64], opts)));
    }
    if (has('mgmt-read')) {
      const mgmtHeaders = { authorization: `Bearer ${MANAGEMENT_KEY}` };
      const reads: LoadTarget[] = [
        {
          scenario: 'mgmt-read',
          target: 'gatehouse (SQLite)',
          origin: gh.origin,
          path: `/api/v1/guardrails/${await createGuardrail(gh.origin)}`,
          method: 'GET',
          headers: mgmtHeaders,
          body: '',
          pid: gh.pid,
        },
      ];
      const db = await freshPostgresDatabase(OPTS.pgUrl);
      if ('error' in db) {
        notes.push(`mgmt-read on PostgreSQL skipped: ${db.error}`);
        log(`mgmt-read on PostgreSQL skipped: ${db.error}`);
      } else {
        dropPostgres = db.drop;
        const ghPg = await startGatehouse('gatehouse-pg', mock.baseUrl, workDir, 'warn', undefined, {
          DATABASE_URL: db.url,
        });
        log(`gatehouse-pg at ${ghPg.origin} (PostgreSQL, fresh database)`);
        reads.push({
          scenario: 'mgmt-read',
          target: 'gatehouse (PostgreSQL)',
          origin: ghPg.origin,
          path: `/api/v1/guardrails/${await createGuardrail(ghPg.origin)}`,
          method: 'GET',
          headers: mgmtHeaders,
          body: '',
          pid: ghPg.pid,
        });
      }
      for (const t of reads) await checkTarget(t);
      others.push(...(await measureGroup(reads, [64], opts)));
    }
    if (has('workers')) {
      // The same lane through one process and through `serve --workers 2` (a primary and two
      // workers sharing the port), interleaved; the load generator shares the machine with them.
      const ghW = await startGatehouseProcess('gatehouse-workers', mock.baseUrl, workDir, 'warn', undefined, {
        args: ['--workers', '2'],
        env: { GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY: MANAGEMENT_KEY },
      });
      log(`gatehouse-workers at ${ghW.origin} (serve --workers 2)`);
      const lane = (target: string, origin: string, pid: number | undefined): LoadTarget => ({
        scenario: 'workers',
        target,
        origin,
        path: '/api/v1/chat/completions',
        method: 'POST',
        headers: ghHeaders,
        body: bodyFor('bench/fast', 'json'),
        pid,
      });
      const group = [
        { ...directJson, scenario: 'workers' },
        lane('gatehouse (1 process)', gh.origin, gh.pid),
        lane('gatehouse --workers 2', ghW.origin, ghW.pid),
      ];
      for (const t of group) await checkTarget(t);
      const measured = await measureGroup(group, [64], opts);
      others.push(...measured);
      const one = measured.find((c) => c.target === 'gatehouse (1 process)');
      const two = measured.find((c) => c.target === 'gatehouse --workers 2');
      if (one && two && one.rps > 0)
        notes.push(
          `workers: \`serve --workers 2\` served ${(two.rps / one.rps).toFixed(2)}× the requests per second of one process at concurrency 64 (${two.rps} vs ${one.rps} req/s; CPU ${two.cpuUsPerRequest ?? '–'} vs ${one.cpuUsPerRequest ?? '–'} µs per request).`,
        );
    }

    const date = new Date().toISOString().slice(0, 10);
    const gitCommit = readGitCommit();
    const meta = {
      date,
      finishedAt: new Date().toISOString(),
      wallSeconds: Math.round((Date.now() - started) / 1000),
      machine: machineInfo(OPTS.machine),
      gitCommit,
      options: OPTS,
      portkey: portkeyNote,
    };
    const errors = [...cells, ...lanes.cells, ...others].reduce((n, c) => n + c.errors, 0);
    if (errors > 0) notes.push(`${errors} requests failed; see the errors column and the JSON (firstError).`);
    mkdirSync(OPTS.out, { recursive: true });
    // A second run on the same day and machine (another scenario, say) gets a file of its own.
    const first = join(OPTS.out, `${date}-${OPTS.machine}`);
    let base = first;
    for (let n = 2; existsSync(`${base}.md`) || existsSync(`${base}.json`); n++) base = `${first}-${n}`;
    writeJson(`${base}.json`, { meta, notes, cells, lanes, others });
    const md = report(meta, cells, lanes, others, notes);
    writeFileSync(`${base}.md`, md);
    process.stdout.write(`${md}\n`);
    log(`wrote ${relative(ROOT, base)}.md and .json in ${meta.wallSeconds} s`);
  } finally {
    await stopChildren();
    if (dropPostgres)
      await dropPostgres().catch((err: Error) => log(`dropping the bench database failed: ${err.message}`));
    if (OPTS.cpuProf) log(`CPU profile of the Gatehouse child in ${OPTS.cpuProf}`);
    if (!OPTS.keep) rmSync(workDir, { recursive: true, force: true });
    else log(`kept ${workDir}`);
  }
}

runBenchmark(main);
