/**
 * What the benchmarks share: building dist/, starting the processes under test (the instant mock
 * upstream, Gatehouse on a throwaway SQLite data directory with the model `bench/fast` → the mock,
 * credits granted through the operator API), stopping them, and the machine description written
 * into every result. Used by bench/run.ts (`npm run bench`) and bench/batches.ts
 * (`npm run bench:batches`). Every address is 127.0.0.1.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, hostname, release, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { mbOfKiB, procMem, resetPeak } from './memory.js';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const env = process.env;

export const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// Child processes

const children: ChildProcess[] = [];
/** Children being stopped on purpose: their exit is not reported as a failure. */
const expected = new WeakSet<ChildProcess>();
let stopping = false;

export function startChild(
  name: string,
  cmd: string,
  args: string[],
  childEnv: NodeJS.ProcessEnv,
  cwd = ROOT,
  /** Also write the child's stdout and stderr to this file. */
  logFile?: string,
) {
  const child = spawn(cmd, args, { cwd, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  if (logFile) {
    const out = createWriteStream(logFile);
    child.stdout?.pipe(out, { end: false });
    child.stderr?.pipe(out, { end: false });
    child.once('close', () => out.end());
  }
  children.push(child);
  let tail = '';
  const keep = (d: Buffer) => {
    tail = (tail + d.toString('utf8')).slice(-4000);
  };
  child.stderr?.on('data', keep);
  // Read stdout too (and keep its tail): a child writing to a pipe nobody reads blocks once it is full.
  child.stdout?.on('data', keep);
  child.on('exit', (code, signal) => {
    if (code !== 0 && code !== null && !stopping && !expected.has(child))
      log(`${name} exited with ${code ?? signal}: ${tail.trim()}`);
  });
  return { child, tail: () => tail };
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the child has exited. */
export function stopChild(c: ChildProcess, graceMs = 10_000): Promise<void> {
  expected.add(c);
  return new Promise<void>((done) => {
    if (c.exitCode !== null || c.signalCode !== null) return done();
    const force = setTimeout(() => c.kill('SIGKILL'), graceMs);
    c.once('exit', () => {
      clearTimeout(force);
      done();
    });
    c.kill('SIGTERM');
  });
}

export async function stopChildren() {
  stopping = true;
  await Promise.all(children.map((c) => stopChild(c)));
}

export async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => done(port));
    });
  });
}

/** Retries `probe` until it resolves true (or throws after `timeoutMs`). */
export async function waitFor(what: string, probe: () => Promise<boolean>, timeoutMs = 30_000) {
  const until = Date.now() + timeoutMs;
  let last: unknown = null;
  while (Date.now() < until) {
    try {
      if (await probe()) return;
    } catch (err) {
      last = err;
    }
    await sleep(100);
  }
  throw new Error(`${what} did not come up in ${timeoutMs} ms${last ? `: ${(last as Error).message}` : ''}`);
}

export async function post(origin: string, path: string, headers: Record<string, string>, body: unknown) {
  const res = await request(`${origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.statusCode, text: await res.body.text() };
}

// ---------------------------------------------------------------------------------------------
// The processes under test

/** Starts one of the bench/*.ts servers as its own process; resolves once it printed its ready line. */
export async function startScript(name: string, script: string, args: string[]): Promise<number> {
  return (await startScriptProcess(name, script, args)).port;
}

/** startScript with the process id (for its CPU and memory); `extra` adds Node options and environment. */
export async function startScriptProcess(
  name: string,
  script: string,
  args: string[],
  extra: { nodeArgs?: string[]; env?: Record<string, string> } = {},
): Promise<{ port: number; pid: number }> {
  const port = await freePort();
  const { child } = startChild(
    name,
    process.execPath,
    [
      '--import',
      'tsx',
      ...(extra.nodeArgs ?? []),
      join(ROOT, 'bench', script),
      '--port',
      String(port),
      ...args,
    ],
    { PATH: env.PATH, HOME: env.HOME, NODE_ENV: 'production', ...extra.env },
  );
  await new Promise<void>((done, fail) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString('utf8');
      if (out.includes('"ready":true')) done();
    });
    child.once('exit', (code) => fail(new Error(`${name} exited with ${code}`)));
  });
  return { port, pid: child.pid ?? 0 };
}

export async function startMock() {
  const { port, pid } = await startScriptProcess('mock', 'mock-upstream.ts', []);
  return { port, pid, baseUrl: `http://127.0.0.1:${port}/v1` };
}

export interface ProcessUse {
  /** Cores the process kept busy on average over the measurement. */
  cores: number;
  /** Its peak RSS during the measurement, kB (VmHWM after a reset; since start where refused). */
  peakKiB: number;
}

/** The rounds' process use pooled: mean cores, CPU per request at the pooled rate, max peak RSS. */
export function poolUse(uses: (ProcessUse | null)[], rps: number) {
  const got = uses.filter((u): u is ProcessUse => u !== null);
  if (!got.length) return { cpuCores: null, cpuUsPerRequest: null, peakRssMB: null };
  const cores = got.reduce((n, u) => n + u.cores, 0) / got.length;
  return {
    cpuCores: Math.round(cores * 100) / 100,
    cpuUsPerRequest: rps > 0 ? Math.round((cores * 1e6) / rps) : null,
    peakRssMB: Math.round(mbOfKiB(Math.max(...got.map((u) => u.peakKiB)))),
  };
}

/** The CPU and memory cells of a report row. */
export const processCells = (x: {
  cpuCores: number | null;
  cpuUsPerRequest: number | null;
  peakRssMB: number | null;
}) => `${x.cpuCores ?? '–'} | ${x.cpuUsPerRequest ?? '–'} | ${x.peakRssMB ?? '–'}`;

/**
 * Runs `fn` while measuring one process's CPU and peak memory — with its child processes' (the
 * workers of `serve --workers N`: cores summed, peak RSS summed over the processes).
 */
export async function measuring<T>(
  pid: number | undefined,
  fn: () => Promise<T>,
): Promise<[T, ProcessUse | null]> {
  if (!pid) return [await fn(), null];
  const tree = [pid, ...descendants(pid)];
  for (const p of tree) resetPeak(p);
  const meter = cpuMeter(Object.fromEntries(tree.map((p) => [String(p), p])));
  const r = await fn();
  const use = meter();
  return [
    r,
    {
      cores: Object.values(use.cores).reduce((n, c) => n + c, 0),
      peakKiB: tree.reduce((n, p) => n + procMem(p).hwmKiB, 0),
    },
  ];
}

/** The processes below `pid` (from /proc: each one's parent). */
export function descendants(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parentOf.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {}
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const [child, parent] of parentOf)
      if (parent === p) {
        out.push(child);
        walk(child);
      }
  };
  walk(pid);
  return out;
}

export const API_KEY = `sk-gh-v1-bench-${randomBytes(16).toString('hex')}`;
export const ADMIN_TOKEN = `bench-admin-${randomBytes(16).toString('hex')}`;

export interface GatehouseExtra {
  /** Extra environment (overrides the defaults below). */
  env?: Record<string, string>;
  /** Node options before the script, e.g. --cpu-prof. */
  nodeArgs?: string[];
  /** Write the gateway's stdout and stderr to `<data dir>/gateway.log` (e.g. for --trace-gc). */
  log?: boolean;
  /** Arguments after `serve`, e.g. `--workers 2`. */
  args?: string[];
}

/** Space-separated Node options from an environment variable (BENCH_NODE_ARGS and the like). */
export const nodeArgsFromEnv = (name: string): string[] => (env[name] ?? '').split(' ').filter(Boolean);

/** The Node flags Gatehouse runs with (`npm start` and the `gatehouse` bin's shebang pass them). */
export const GATEHOUSE_NODE_FLAGS = ['--max-semi-space-size=32'];

/**
 * Writes `<dir>/catalog.json` (GATEHOUSE_CONFIG), the development provider off, two priced models
 * on the mock: `bench/fast` → an `openai-compatible` provider (its Chat Completions wire) and
 * `bench/claude` → an `anthropic` provider (its Messages wire; the same mock answers both), so
 * each pass-through lane and each translation has a model. Returns the file's path.
 */
export function writeBenchCatalog(dir: string, mockBaseUrl: string): string {
  const file = join(dir, 'catalog.json');
  const pricing = { prompt: 0.1, completion: 0.2 };
  writeFileSync(
    file,
    JSON.stringify({
      development_provider: false,
      providers: [
        { slug: 'bench', kind: 'openai-compatible', base_url: mockBaseUrl },
        // The Anthropic adapter takes the base URL with or without /v1; no model data, so the
        // catalog holds only the models below.
        {
          slug: 'bench-claude',
          kind: 'anthropic',
          base_url: mockBaseUrl,
          api_key: 'sk-bench-upstream',
          model_data: false,
        },
      ],
      models: [
        { id: 'bench/fast', endpoints: [{ provider: 'bench', upstream_model: 'fast', pricing }] },
        { id: 'bench/claude', endpoints: [{ provider: 'bench-claude', upstream_model: 'claude', pricing }] },
      ],
    }),
  );
  return file;
}

/**
 * `node <cli> serve` on `<workDir>/<name>` (SQLite), the models of writeBenchCatalog (`bench/fast`,
 * `bench/claude`) on the mock, bootstrap API key, the rate limit out of the way, and
 * $1,000,000 of credits granted through the operator API.
 */
export async function startGatehouse(
  name: string,
  mockBaseUrl: string,
  workDir: string,
  logLevel: string,
  cli = join(ROOT, 'dist', 'cli.js'),
  extra: GatehouseExtra = {},
) {
  const dataDir = join(workDir, name);
  mkdirSync(dataDir, { recursive: true });
  const configFile = writeBenchCatalog(dataDir, mockBaseUrl);
  const port = await freePort();
  const logFile = extra.log ? join(dataDir, 'gateway.log') : undefined;
  const nodeArgs = [...GATEHOUSE_NODE_FLAGS, ...(extra.nodeArgs ?? []), cli, 'serve', ...(extra.args ?? [])];
  const { child, tail } = startChild(
    name,
    process.execPath,
    nodeArgs,
    {
      PATH: env.PATH,
      HOME: env.HOME,
      NODE_ENV: 'production',
      PORT: String(port),
      HOST: '127.0.0.1',
      GATEHOUSE_DATA_DIR: dataDir,
      GATEHOUSE_CONFIG: configFile,
      GATEHOUSE_DEV_PROVIDER: 'false',
      GATEHOUSE_ADMIN_TOKEN: ADMIN_TOKEN,
      GATEHOUSE_BOOTSTRAP_API_KEY: API_KEY,
      GATEHOUSE_RATE_LIMIT_REQUESTS: '1000000000',
      GATEHOUSE_RATE_LIMIT_WINDOW: '60',
      LOG_LEVEL: logLevel,
      // The gateway alone: the media service (bench/media.ts measures it) would add its memory and port.
      GATEHOUSE_MEDIA: 'off',
      // /metrics on a free loopback port: several gateways run at once.
      GATEHOUSE_METRICS_PORT: '0',
      ...extra.env,
    },
    ROOT,
    logFile,
  );
  const origin = `http://127.0.0.1:${port}`;
  await waitFor(name, async () => {
    if (child.exitCode !== null) throw new Error(`${name} exited: ${tail()}`);
    const res = await request(`${origin}/health`);
    await res.body.text();
    return res.statusCode === 200;
  });
  // Credits for the bootstrap organization, through the operator API.
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const orgs = await request(`${origin}/api/v1/admin/organizations`, { headers: admin });
  const orgId = ((await orgs.body.json()) as { data: { id: string }[] }).data[0]?.id;
  if (!orgId) throw new Error(`${name}: no organization after bootstrap`);
  const credit = await post(origin, '/api/v1/admin/credits', admin, {
    organization_id: orgId,
    amount_usd: 1_000_000,
  });
  if (credit.status !== 201)
    throw new Error(`${name}: granting credits failed: ${credit.status} ${credit.text}`);
  return { origin, pid: child.pid, logLevel, child, dataDir, logFile, tail };
}

// ---------------------------------------------------------------------------------------------
// Build and machine description

/** `npm run build` (dist/ is what the benchmarks run). */
export function build() {
  log('building (npm run build)');
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
}

export const defaultMachineName = () => `${hostname().split('.')[0]}-${cpus().length}c`;

export function machineInfo(name: string) {
  return {
    name,
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    os: release(),
    node: process.version,
  };
}

/** The checked-out commit (short), read from .git without running git; 'unknown' if there is none. */
export function gitCommit(): string {
  try {
    const gitDir = join(ROOT, '.git');
    const head = readFileSync(join(gitDir, 'HEAD'), 'utf8').trim();
    if (!head.startsWith('ref: ')) return head.slice(0, 7);
    const ref = head.slice(5);
    let sha = '';
    try {
      sha = readFileSync(join(gitDir, ref), 'utf8').trim();
    } catch {
      const packed = readFileSync(join(gitDir, 'packed-refs'), 'utf8');
      sha =
        packed
          .split('\n')
          .find((l) => l.endsWith(` ${ref}`))
          ?.split(' ')[0] ?? '';
    }
    return /^[0-9a-f]{40}$/.test(sha) ? sha.slice(0, 7) : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** Writes `value` as JSON in the project's style, so `npm run lint` stays clean with results checked in. */
export function writeJson(file: string, value: unknown) {
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
  try {
    execFileSync(join(ROOT, 'node_modules', '.bin', 'biome'), ['format', '--write', file], {
      cwd: ROOT,
      stdio: 'ignore',
    });
  } catch {}
}

// ---------------------------------------------------------------------------------------------
// CPU accounting from /proc (Linux): what the processes under test used, and what else ran

/** Process ids of the children still running. */
export const liveChildPids = () =>
  children.flatMap((c) => (c.exitCode === null && c.signalCode === null && c.pid ? [c.pid] : []));

let clockTicks = 0;
/** USER_HZ (`getconf CLK_TCK`, 100 nearly everywhere). */
function ticksPerSecond(): number {
  if (!clockTicks) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** Busy ticks of the whole machine (user, nice, system, irq, softirq, steal), from /proc/stat. */
function machineBusyTicks(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
  const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number);
  return (user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0);
}

/** utime + stime of a process (all its threads), ticks; 0 once it is gone. */
export function processTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(f[11]) + Number(f[12]);
  } catch {
    return 0;
  }
}

/** CPU µs used so far by process `pid` (all threads) and by its main thread (Linux; 10 ms ticks). */
export function cpuOf(pid: number): { process: number; loop: number } {
  const ticks = (file: string) => {
    const stat = readFileSync(file, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * 10_000;
  };
  return { process: ticks(`/proc/${pid}/stat`), loop: ticks(`/proc/${pid}/task/${pid}/stat`) };
}

export interface CpuUse {
  seconds: number;
  /** Cores busy on average: the whole machine, the given processes each, and everything else. */
  machineCores: number;
  cores: Record<string, number>;
  /** Machine busy minus this process, its children and the given processes: other work on the box. */
  otherCores: number;
}

/** Starts measuring CPU use; `named` processes are reported each (e.g. { gateway: pid }). */
export function cpuMeter(named: Record<string, number> = {}) {
  const ours = () => [process.pid, ...liveChildPids()].filter((p, i, a) => a.indexOf(p) === i);
  const pids = [...new Set([...ours(), ...Object.values(named)])];
  const start = new Map(pids.map((p) => [p, processTicks(p)]));
  const busy0 = machineBusyTicks();
  const t0 = performance.now();
  return (): CpuUse => {
    const seconds = (performance.now() - t0) / 1000;
    const hz = ticksPerSecond();
    const used = (p: number) => Math.max(0, processTicks(p) - (start.get(p) ?? 0));
    const oursTicks = pids.reduce((n, p) => n + used(p), 0);
    const busy = machineBusyTicks() - busy0;
    const cores = (t: number) => Math.round((t / hz / seconds) * 100) / 100;
    return {
      seconds: Math.round(seconds * 100) / 100,
      machineCores: cores(busy),
      cores: Object.fromEntries(Object.entries(named).map(([k, p]) => [k, cores(used(p))])),
      otherCores: cores(Math.max(0, busy - oursTicks)),
    };
  };
}

/**
 * Waits (up to `maxWaitMs`) until other work on the machine uses less than `threshold` cores over a
 * one-second window, so a measurement does not start while, say, a test suite runs next to it.
 * Returns the last window's reading.
 */
export async function waitQuiet(threshold: number, maxWaitMs: number): Promise<CpuUse> {
  const until = Date.now() + maxWaitMs;
  let warned = false;
  for (;;) {
    const meter = cpuMeter();
    await sleep(1000);
    const use = meter();
    if (use.otherCores < threshold || Date.now() >= until) return use;
    if (!warned) {
      log(
        `other work on this machine uses ${use.otherCores} cores; waiting up to ${Math.round(maxWaitMs / 1000)} s for it to stop`,
      );
      warned = true;
    }
  }
}

/** Runs a benchmark's `main`: every child process is stopped on SIGINT and on failure. */
export function runBenchmark(main: () => Promise<void>): void {
  process.on('SIGINT', () => {
    void stopChildren().then(() => process.exit(130));
  });
  main().catch(async (err: unknown) => {
    log(`failed: ${(err as Error)?.stack ?? err}`);
    await stopChildren();
    process.exit(1);
  });
}
