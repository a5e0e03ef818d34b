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
 */

import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
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
  await calls(n);
  const used = process.cpuUsage(before);
  process.stdout.write(`${JSON.stringify({ cpu_us_per_call: (used.user + used.system) / n })}\n`);
  await g.close();
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
  const run = async (dist: string): Promise<number> => {
    // Asynchronously: the mock answers from this process's event loop.
    return new Promise((done, fail) =>
      execFile(
        process.execPath,
        ['--import', 'tsx', import.meta.filename, '--measure', resolve(dist), mock.baseUrl, String(n)],
        (err, stdout) =>
          err ? fail(err) : done(JSON.parse(stdout.trim().split('\n').at(-1) as string).cpu_us_per_call),
      ),
    );
  };
  const ratios: number[] = [];
  for (let i = 0; i < k; i++) {
    const x = await run(a);
    const y = await run(b);
    ratios.push(x / y);
    process.stdout.write(
      `pair ${i + 1}: A ${x.toFixed(1)} µs, B ${y.toFixed(1)} µs, A/B ${(x / y).toFixed(3)}\n`,
    );
  }
  const sorted = [...ratios].sort((p, q) => p - q);
  const median = sorted[sorted.length >> 1] as number;
  process.stdout.write(`median A/B CPU per call over ${k} pairs: ${median.toFixed(3)}\n`);
  await mock.close();
}

await main();
