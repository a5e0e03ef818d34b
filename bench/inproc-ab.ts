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
 */

import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
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

/** Child mode: `--measure <dist> <mock base URL> <n>` prints `{cpu_us_per_call}`. */
async function measure(dist: string, mockBaseUrl: string, n: number): Promise<void> {
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
    model: CALL === 'messages' ? 'bench/claude' : 'bench/fast',
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
  await calls(3_000);
  const before = process.cpuUsage();
  const loopBefore = loopThreadCpuUs();
  await calls(n);
  // Closing sends the spans still buffered (traced): their cost is the calls' too.
  await g.close();
  const used = process.cpuUsage(before);
  const loop = loopThreadCpuUs() - loopBefore;
  process.stdout.write(
    `${JSON.stringify({ cpu_us_per_call: (used.user + used.system) / n, loop_us_per_call: loop / n })}\n`,
  );
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args[0] === '--measure') return measure(resolve(args[1] as string), args[2] as string, Number(args[3]));
  const [a, b] = args;
  if (!a || !b) throw new Error('usage: tsx bench/inproc-ab.ts <dist A> <dist B>');
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
  const run = async (side: string): Promise<{ cpu: number; loop: number }> => {
    const traced = side.endsWith('@traced');
    const dist = traced ? side.slice(0, -'@traced'.length) : side;
    // Asynchronously: the mock answers from this process's event loop.
    return new Promise((done, fail) =>
      execFile(
        process.execPath,
        [
          ...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
          '--import',
          'tsx',
          import.meta.filename,
          '--measure',
          resolve(dist),
          mock.baseUrl,
          String(n),
        ],
        { env: traced ? traceEnv : process.env, maxBuffer: 1 << 24 },
        (err, stdout) => {
          if (err) return fail(err);
          const m = JSON.parse(stdout.trim().split('\n').at(-1) as string);
          done({ cpu: m.cpu_us_per_call, loop: m.loop_us_per_call });
        },
      ),
    );
  };
  const ratios: number[] = [];
  const loopRatios: number[] = [];
  for (let i = 0; i < k; i++) {
    const x = await run(a);
    const y = await run(b);
    ratios.push(x.cpu / y.cpu);
    loopRatios.push(x.loop / y.loop);
    process.stdout.write(
      `pair ${i + 1}: A ${x.cpu.toFixed(1)} µs (loop thread ${x.loop.toFixed(1)}), B ${y.cpu.toFixed(1)} µs (loop thread ${y.loop.toFixed(1)}), A/B ${(x.cpu / y.cpu).toFixed(3)} (loop thread ${(x.loop / y.loop).toFixed(3)})\n`,
    );
  }
  const median = (v: number[]) => ([...v].sort((p, q) => p - q)[v.length >> 1] as number).toFixed(3);
  process.stdout.write(
    `median A/B CPU per call over ${k} pairs: ${median(ratios)} (the event loop's thread alone: ${median(loopRatios)})\n`,
  );
  if (exported.requests)
    process.stdout.write(
      `OTLP sink: ${exported.requests} exports, ${(exported.bytes / 1e6).toFixed(1)} MB (${Math.round(exported.bytes / (k * (n + 3000)))} B a call)\n`,
    );
  await mock.close();
  sink.close();
}

await main();
