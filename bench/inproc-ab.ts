/**
 * In-process A/B of two builds' CPU per call — for changes of a few percent, which the socket
 * benchmark (bench/run.ts) cannot see on a VM whose speed drifts by ±10 % between runs.
 *
 * Each measurement is a fresh Node process that builds the gateway of one `dist/` (SQLite in a temp
 * dir, LOG_LEVEL=warn, no worker, no media), points `bench/fast` at the instant mock (run by this
 * process), warms up with 3,000 calls and then makes N non-streaming chat calls at concurrency 64
 * (BENCH_C; BENCH_CALL=messages and BENCH_STREAM=1 for the Messages lane and for streams)
 * through `app.inject` (no client socket: the upstream socket is real), reporting its CPU µs per
 * call (process.cpuUsage, the inject harness included — a constant on both sides). The two builds
 * alternate for K pairs; the verdict is the median of the per-pair ratios.
 *
 *   npm run build && cp -r dist /tmp/base-dist   # (before the change; keep node_modules reachable:
 *                                               #  put it inside the repo, e.g. bench/.base/dist)
 *   BENCH_K=8 BENCH_N=8000 npx tsx bench/inproc-ab.ts dist bench/.base/dist
 *
 * A build outside the repository cannot resolve its packages: copy it inside (and .gitignore it).
 *
 * Tracing: a side named `<dist>@traced` runs with every call sampled (OTEL_TRACES_SAMPLER=always_on)
 * and its spans exported over OTLP/HTTP protobuf to a sink in this process that reads and discards
 * them (a collector's receive), so the child's CPU holds all of tracing's cost (spans, batching,
 * serialization, the export's HTTP) and none of the receiver's:
 *
 *   BENCH_K=6 npx tsx bench/inproc-ab.ts dist@traced dist
 *
 * Four sides compare two ratios in one run (each round measures all four): a change's traced ÷
 * untraced beside its base's —
 *
 *   BENCH_K=8 npx tsx bench/inproc-ab.ts dist@traced dist bench/.base/dist@traced bench/.base/dist
 *
 * On a loaded machine, BENCH_TOGGLE=1 measures each `@traced` side's traced ÷ untraced inside one
 * process (see toggled() below); A/B is then the ratio of the two builds' ratios:
 *
 *   BENCH_TOGGLE=1 BENCH_K=6 npx tsx bench/inproc-ab.ts dist@traced bench/.base/dist@traced
 *
 * Where a call's garbage comes from (one side, its allocations sampled; see sampleAllocations):
 *
 *   npx tsx bench/mock-upstream.ts --port 39111 &
 *   BENCH_HEAP_PROF=/tmp/calls.heapprofile npx tsx bench/inproc-ab.ts --measure dist http://127.0.0.1:39111 10000
 *   npx tsx bench/heap-profile.ts /tmp/calls.heapprofile 10000
 */

import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startMockUpstream } from './mock-upstream.js';
import { writeBenchCatalog } from './processes.js';

const KEY = `sk-gh-v1-${'ab'.repeat(32)}`;
const ADMIN = `inproc-admin-${randomBytes(16).toString('hex')}`;
/** Calls in flight at once (BENCH_C, default 64; 1 shows the per-call costs a busy loop amortizes). */
const CONCURRENCY = Number(process.env.BENCH_C ?? 64);
/**
 * Which call (BENCH_CALL): `chat` (default: Chat Completions on `bench/fast`, a pass-through lane),
 * `messages` (Anthropic Messages on `bench/claude`, the other lane); BENCH_STREAM=1 streams it.
 */
const CALL = process.env.BENCH_CALL === 'messages' ? 'messages' : 'chat';
const STREAM = process.env.BENCH_STREAM === '1';
/**
 * BENCH_TRANSLATED=1: the same call to the other format's model (`bench/claude` for Chat
 * Completions, `bench/fast` for Messages), translated both ways instead of relayed.
 */
const TRANSLATED = process.env.BENCH_TRANSLATED === '1';

/**
 * CPU µs of the event loop's thread alone (Linux: /proc, 10 ms ticks), beside process.cpuUsage's
 * all threads (GC helpers, a tracing export thread): what bounds a single loop's throughput.
 */
function loopThreadCpuUs(): number {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return Number.NaN;
  }
}

/** One gateway of `dist` in this process, on the mock, with `calls(total)` making its calls. */
async function startSide(dist: string, mockBaseUrl: string) {
  const { loadConfig } = await import(pathToFileURL(join(dist, 'config.js')).href);
  const { prepareGateway } = await import(pathToFileURL(join(dist, 'gateway.js')).href);
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-inproc-'));
  const catalog = writeBenchCatalog(dir, mockBaseUrl);
  const config = loadConfig({
    NODE_ENV: 'production',
    GATEHOUSE_DATA_DIR: dir,
    GATEHOUSE_CONFIG: catalog,
    GATEHOUSE_DEV_PROVIDER: 'false',
    GATEHOUSE_ADMIN_TOKEN: ADMIN,
    GATEHOUSE_BOOTSTRAP_API_KEY: KEY,
    GATEHOUSE_RATE_LIMIT_REQUESTS: '1000000000',
    GATEHOUSE_RATE_LIMIT_WINDOW: '60',
    GATEHOUSE_MEDIA: 'off',
    GATEHOUSE_WORKER: 'off',
    LOG_LEVEL: 'warn',
  });
  const g = await prepareGateway(config, { log: { level: 'silent' } });
  const json = { 'content-type': 'application/json' };
  const granted = await g.app.inject({
    method: 'POST',
    url: '/api/v1/admin/credits',
    headers: { ...json, authorization: `Bearer ${ADMIN}` },
    payload: JSON.stringify({ organization_id: g.bootstrap.organizationId, amount_usd: 1e9 }),
  });
  if (granted.statusCode >= 300) throw new Error(`credits: ${granted.statusCode} ${granted.body}`);
  const payload = JSON.stringify({
    model: (CALL === 'messages') !== TRANSLATED ? 'bench/claude' : 'bench/fast',
    ...(CALL === 'messages' ? { system: 'You are a helpful assistant.' } : {}),
    messages: [
      ...(CALL === 'messages' ? [] : [{ role: 'system', content: 'You are a helpful assistant.' }]),
      { role: 'user', content: 'Say hello in one short sentence, please.' },
    ],
    max_tokens: 32,
    ...(STREAM ? { stream: true } : {}),
  });
  const url = CALL === 'messages' ? '/api/v1/messages' : '/api/v1/chat/completions';
  const end = CALL === 'messages' ? 'event: message_stop' : 'data: [DONE]';
  const headers = { ...json, authorization: `Bearer ${KEY}` };
  const calls = async (total: number) => {
    let started = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (started++ < total) {
          const r = await g.app.inject({ method: 'POST', url, headers, payload });
          if (r.statusCode !== 200 || (STREAM && !r.body.includes(end)))
            throw new Error(`${r.statusCode} ${r.body}`);
        }
      }),
    );
  };
  return { calls, close: () => g.close(), dir };
}

/** Child mode: `--measure <dist> <mock base URL> <n>` prints `{cpu_us_per_call}`. */
async function measure(dist: string, mockBaseUrl: string, n: number): Promise<void> {
  const { calls, close, dir } = await startSide(dist, mockBaseUrl);
  await calls(3_000);
  if (TOGGLE) return toggled(dist, calls, n, close, dir);
  const allocations = await sampleAllocations();
  const before = process.cpuUsage();
  const loopBefore = loopThreadCpuUs();
  await calls(n);
  await allocations?.stop();
  // Closing sends the spans still buffered (traced): their cost is the calls' too.
  await close();
  const used = process.cpuUsage(before);
  const loop = loopThreadCpuUs() - loopBefore;
  process.stdout.write(
    `${JSON.stringify({ cpu_us_per_call: (used.user + used.system) / n, loop_us_per_call: loop / n })}\n`,
  );
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}

/**
 * BENCH_HEAP_PROF=<file> (with `--measure`): V8's sampling heap profiler over the measured calls,
 * keeping the objects garbage collection already freed (a plain `--heap-prof` keeps only what is
 * still alive at its end: none of a call's garbage). Summarize with bench/heap-profile.ts. Sampling
 * every BENCH_HEAP_INTERVAL bytes (512) slows the calls severalfold: read bytes, not times.
 */
async function sampleAllocations(): Promise<{ stop(): Promise<void> } | null> {
  const file = process.env.BENCH_HEAP_PROF;
  if (!file) return null;
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: Number(process.env.BENCH_HEAP_INTERVAL ?? 512),
    // CDP flags Node's own --heap-prof does not set (not in Node's inspector types).
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  } as object);
  return {
    async stop() {
      const { profile } = (await session.post('HeapProfiler.stopSampling')) as { profile: unknown };
      writeFileSync(file, JSON.stringify(profile));
      session.disconnect();
    },
  };
}

/**
 * BENCH_TOGGLE=1 (a `@traced` side): one process, tracing switched on and off (the spans module's
 * switch, as when the SDK stops) for alternate blocks of BENCH_BLOCK calls, the order flipped each
 * round — traced and untraced calls share the machine's state of the moment, which a loaded VM's
 * separate processes do not. Prints the traced ÷ untraced CPU per call of the loop's thread and of
 * the process (spans still buffered when a block ends are exported during later blocks, so
 * some export work lands on untraced blocks; the export thread's share blurs the process ratio).
 */
const TOGGLE = process.env.BENCH_TOGGLE === '1';
async function toggled(
  dist: string,
  calls: (total: number) => Promise<void>,
  n: number,
  close: () => Promise<void>,
  dir: string,
): Promise<void> {
  const spans = await import(pathToFileURL(join(dist, 'telemetry/spans.js')).href);
  const block = Number(process.env.BENCH_BLOCK ?? 1000);
  const sum = { on: { loop: 0, cpu: 0, calls: 0 }, off: { loop: 0, cpu: 0, calls: 0 } };
  for (let round = 0; round * block * 2 < n; round++) {
    for (const mode of round % 2 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
      spans.setTracing(mode === 'on');
      const before = process.cpuUsage();
      const loopBefore = loopThreadCpuUs();
      await calls(block);
      const used = process.cpuUsage(before);
      sum[mode].loop += loopThreadCpuUs() - loopBefore;
      sum[mode].cpu += used.user + used.system;
      sum[mode].calls += block;
    }
  }
  spans.setTracing(true);
  await close();
  const per = (m: 'on' | 'off', k: 'loop' | 'cpu') => sum[m][k] / sum[m].calls;
  process.stdout.write(
    `${JSON.stringify({ cpu_us_per_call: per('on', 'cpu') / per('off', 'cpu'), loop_us_per_call: per('on', 'loop') / per('off', 'loop'), on: { cpu: per('on', 'cpu'), loop: per('on', 'loop') }, off: { cpu: per('off', 'cpu'), loop: per('off', 'loop') } })}\n`,
  );
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}

/**
 * BENCH_INTERLEAVE=1: both builds in one process, each its own gateway (its own modules, database
 * and upstream agent) on the same mock, taking alternate blocks of BENCH_BLOCK calls, the order
 * flipped each round. A VM's drift between processes (±25 % here from one to the next) then hits
 * both sides alike; what they share is the heap, so a collection can land in the other side's block
 * (blocks of a thousand calls keep most of a side's young-generation garbage in its own). Prints
 * A ÷ B CPU per call of the loop's thread and of the process.
 */
const INTERLEAVE = process.env.BENCH_INTERLEAVE === '1';
async function interleaved(distA: string, distB: string, mockBaseUrl: string, n: number): Promise<void> {
  const sides = [await startSide(distA, mockBaseUrl), await startSide(distB, mockBaseUrl)] as const;
  for (const side of sides) await side.calls(3_000);
  const block = Number(process.env.BENCH_BLOCK ?? 1000);
  const sum = [
    { loop: 0, cpu: 0 },
    { loop: 0, cpu: 0 },
  ];
  for (let round = 0; round * block * 2 < n; round++) {
    for (const i of round % 2 ? [1, 0] : [0, 1]) {
      const before = process.cpuUsage();
      const loopBefore = loopThreadCpuUs();
      await (sides[i] as (typeof sides)[0]).calls(block);
      const used = process.cpuUsage(before);
      (sum[i] as { loop: number }).loop += loopThreadCpuUs() - loopBefore;
      (sum[i] as { cpu: number }).cpu += used.user + used.system;
    }
  }
  for (const side of sides) {
    await side.close();
    rmSync(side.dir, { recursive: true, force: true });
  }
  const [a, b] = sum as [{ loop: number; cpu: number }, { loop: number; cpu: number }];
  process.stdout.write(
    `${JSON.stringify({ cpu_us_per_call: a.cpu / b.cpu, loop_us_per_call: a.loop / b.loop })}\n`,
  );
  process.exit(0);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args[0] === '--measure') return measure(resolve(args[1] as string), args[2] as string, Number(args[3]));
  if (args[0] === '--interleave')
    return interleaved(
      resolve(args[1] as string),
      resolve(args[2] as string),
      args[3] as string,
      Number(args[4]),
    );
  // Two sides (A B), or two comparisons (A B C D: A/B beside C/D, e.g. a build's traced ÷ untraced
  // beside its base's, all four measured in each round).
  if (INTERLEAVE && args.some((a) => a.endsWith('@traced')))
    throw new Error(
      'BENCH_INTERLEAVE compares builds untraced (BENCH_TOGGLE measures tracing in one process)',
    );
  if (args.length !== 2 && args.length !== 4)
    throw new Error('usage: tsx bench/inproc-ab.ts <dist A> <dist B> [<dist C> <dist D>]');
  const k = Number(process.env.BENCH_K ?? 8);
  const n = Number(process.env.BENCH_N ?? 8000);
  const mock = await startMockUpstream();
  const exported = { requests: 0, bytes: 0 };
  const sink = createServer((req, res) => {
    exported.requests++;
    req.on('data', (c: Buffer) => {
      exported.bytes += c.length;
    });
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((done) => sink.listen(0, '127.0.0.1', done));
  const traceEnv = {
    ...process.env,
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(sink.address() as AddressInfo).port}`,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    OTEL_TRACES_SAMPLER: 'always_on',
  };
  /** A child process of this script with `childArgs`; its last line's CPU per call (or ratios). */
  const child = (childArgs: string[], env: NodeJS.ProcessEnv): Promise<{ cpu: number; loop: number }> =>
    // Asynchronously: the mock answers from this process's event loop.
    new Promise((done, fail) =>
      execFile(
        process.execPath,
        [
          ...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
          '--import',
          'tsx',
          import.meta.filename,
          ...childArgs,
        ],
        { env, maxBuffer: 1 << 24 },
        (err, stdout) => {
          if (err) return fail(err);
          const m = JSON.parse(stdout.trim().split('\n').at(-1) as string);
          done({ cpu: m.cpu_us_per_call, loop: m.loop_us_per_call });
        },
      ),
    );
  const run = (side: string) => {
    const traced = side.endsWith('@traced');
    const dist = traced ? side.slice(0, -'@traced'.length) : side;
    return child(['--measure', resolve(dist), mock.baseUrl, String(n)], traced ? traceEnv : process.env);
  };
  const median = (v: number[]) => [...v].sort((p, q) => p - q)[v.length >> 1] as number;
  const pairs = args.length / 2;
  const ratios: number[][] = Array.from({ length: pairs }, () => []);
  const loopRatios: number[][] = Array.from({ length: pairs }, () => []);
  // BENCH_TOGGLE: each side's number is its traced ÷ untraced ratio, not µs.
  const show = (v: number) => (TOGGLE ? `${v.toFixed(3)}×` : `${v.toFixed(1)} µs`);
  const label = (j: number) => `${args[2 * j]}/${args[2 * j + 1]}`;
  for (let i = 0; i < k; i++) {
    // With two comparisons, the second goes first every other round (no side always runs first).
    for (let step = 0; step < pairs; step++) {
      const j = (step + i) % pairs;
      if (INTERLEAVE) {
        // One process takes both sides; the first goes first every other round.
        const [a, b] = i % 2 ? [args[2 * j + 1], args[2 * j]] : [args[2 * j], args[2 * j + 1]];
        const r = await child(
          ['--interleave', resolve(a as string), resolve(b as string), mock.baseUrl, String(n)],
          process.env,
        );
        const cpu = i % 2 ? 1 / r.cpu : r.cpu;
        const loop = i % 2 ? 1 / r.loop : r.loop;
        (ratios[j] as number[]).push(cpu);
        (loopRatios[j] as number[]).push(loop);
        process.stdout.write(
          `round ${i + 1} ${label(j)} (one process): A/B ${cpu.toFixed(3)} (loop thread ${loop.toFixed(3)})\n`,
        );
        continue;
      }
      const x = await run(args[2 * j] as string);
      const y = await run(args[2 * j + 1] as string);
      (ratios[j] as number[]).push(x.cpu / y.cpu);
      (loopRatios[j] as number[]).push(x.loop / y.loop);
      process.stdout.write(
        `round ${i + 1} ${label(j)}: A ${show(x.cpu)} (loop thread ${show(x.loop)}), B ${show(y.cpu)} (loop thread ${show(y.loop)}), A/B ${(x.cpu / y.cpu).toFixed(3)} (loop thread ${(x.loop / y.loop).toFixed(3)})\n`,
      );
    }
  }
  for (let j = 0; j < pairs; j++)
    process.stdout.write(
      `median ${label(j)} CPU per call over ${k} pairs: ${median(ratios[j] as number[]).toFixed(3)} (the event loop's thread alone: ${median(loopRatios[j] as number[]).toFixed(3)})\n`,
    );
  if (pairs === 2) {
    // Per round: the first comparison's ratio over the second's (both measured in that round).
    const per = (r: number[][]) => (r[0] as number[]).map((v, i) => v / ((r[1] as number[])[i] as number));
    process.stdout.write(
      `median of per-round (first ratio ÷ second ratio): ${median(per(ratios)).toFixed(3)} (loop thread ${median(per(loopRatios)).toFixed(3)})\n`,
    );
  }
  if (exported.requests)
    process.stdout.write(
      `OTLP sink: ${exported.requests} exports, ${(exported.bytes / 1e6).toFixed(1)} MB (${Math.round(exported.bytes / (k * (TOGGLE ? n / 2 + 3000 : n + 3000) * args.filter((a) => a.endsWith('@traced')).length))} B a traced call)\n`,
    );
  await mock.close();
  sink.close();
}

await main();
