/**
 * What a large request body costs: Gatehouse beside the floor proxy (bench/floor-proxy.ts: parse,
 * rewrite the model, re-serialise, forward — the least a Node.js gateway does with a body), on the
 * same mock upstream, in one run.
 *
 * 1. CPU per call for bodies of BENCH_BODY_MB (20) MB, one call at a time: a base64 image (one long
 *    string) and an agent's long history (thousands of messages), on each pass-through lane
 *    (`/chat/completions` → an OpenAI-compatible provider, `/messages` → an Anthropic one) and, for
 *    Gatehouse only, translated (`/chat/completions` → the Anthropic provider). Reported per call
 *    and per MB: the whole process and its event loop's thread (Linux /proc), and wall time.
 * 2. What the event loop's time on a large body does to the other callers of the same process: small
 *    streamed calls at concurrency 8 (time to first byte), alone, then while a second process sends
 *    the image bodies back to back (BENCH_BODY_SECONDS, 6 s each).
 *
 * Results: bench/results/<date>-<machine>-large-bodies.md and .json. Every address is 127.0.0.1.
 * Knobs: BENCH_BODY_MB, BENCH_BODY_CALLS (6 per case, after one warm-up call), BENCH_BODY_SECONDS,
 * BENCH_SKIP_BUILD, BENCH_MACHINE, BENCH_OUT.
 *
 *   npm run bench:bodies
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { request } from 'undici';
import { type LoadResult, runLoad } from './loadgen.js';
import {
  API_KEY,
  build,
  cpuOf,
  defaultMachineName,
  gitCommit,
  log,
  machineInfo,
  ROOT,
  runBenchmark,
  startChild,
  startGatehouse,
  startMock,
  startScriptProcess,
  stopChild,
  stopChildren,
  writeJson,
} from './processes.js';

const env = process.env;
const num = (name: string, fallback: number) => (env[name] ? Number(env[name]) : fallback);
const OPTS = {
  mb: num('BENCH_BODY_MB', 20),
  calls: num('BENCH_BODY_CALLS', 6),
  seconds: num('BENCH_BODY_SECONDS', 6),
  build: env.BENCH_SKIP_BUILD !== '1',
  machine: env.BENCH_MACHINE ?? defaultMachineName(),
  out: resolve(env.BENCH_OUT ?? join(ROOT, 'bench', 'results')),
};

type Wire = 'chat' | 'messages';
type Shape = 'image' | 'history';

/** A body of about `mb` MB in the wire's format: one base64 image, or an agent's long history. */
export function largeBody(wire: Wire, shape: Shape, model: string, mb: number): string {
  const base = { model, max_tokens: 64 };
  if (shape === 'image') {
    const data = 'A'.repeat(Math.round(mb * 1e6));
    const image =
      wire === 'chat'
        ? { type: 'image_url', image_url: { url: `data:image/png;base64,${data}` } }
        : { type: 'image', source: { type: 'base64', media_type: 'image/png', data } };
    return JSON.stringify({
      ...base,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is in this picture?' }, image] }],
    });
  }
  // Turns of ~3.7 KB (a file's lines, a tool's output), alternating as a long session's do.
  const turns = Math.round((mb * 1e6) / 3700);
  return JSON.stringify({
    ...base,
    messages: Array.from({ length: turns }, (_, i) => ({
      role: i % 2 ? 'assistant' : 'user',
      content: `src/module-${i}.ts: export const line = ${i};\n`.repeat(90),
    })),
  });
}

interface Target {
  name: 'floor' | 'gatehouse';
  pid: number;
  origin: string;
  /** The path prefix of the inference routes. */
  prefix: string;
  headers: Record<string, string>;
}

interface Case {
  label: string;
  wire: Wire;
  shape: Shape;
  model: string;
  /** Translated: Gatehouse only (the floor forwards one format as it is). */
  translated?: boolean;
}

const CASES: Case[] = [
  { label: 'chat lane, image', wire: 'chat', shape: 'image', model: 'bench/fast' },
  { label: 'chat lane, history', wire: 'chat', shape: 'history', model: 'bench/fast' },
  { label: 'messages lane, image', wire: 'messages', shape: 'image', model: 'bench/claude' },
  { label: 'messages lane, history', wire: 'messages', shape: 'history', model: 'bench/claude' },
  {
    label: 'chat → Anthropic, history',
    wire: 'chat',
    shape: 'history',
    model: 'bench/claude',
    translated: true,
  },
];

const pathOf = (t: Target, wire: Wire) => `${t.prefix}${wire === 'chat' ? '/chat/completions' : '/messages'}`;

async function call(t: Target, wire: Wire, body: string): Promise<void> {
  const res = await request(`${t.origin}${pathOf(t, wire)}`, { method: 'POST', headers: t.headers, body });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`${t.name} ${wire}: ${res.statusCode} ${text.slice(0, 300)}`);
}

interface CostRow {
  target: Target['name'];
  label: string;
  mb: number;
  processMs: number;
  loopMs: number;
  wallMs: number;
}

async function measureCost(t: Target, c: Case): Promise<CostRow> {
  const body = largeBody(c.wire, c.shape, c.model, OPTS.mb);
  await call(t, c.wire, body);
  const before = cpuOf(t.pid);
  const t0 = performance.now();
  for (let i = 0; i < OPTS.calls; i++) await call(t, c.wire, body);
  const wallMs = (performance.now() - t0) / OPTS.calls;
  const after = cpuOf(t.pid);
  return {
    target: t.name,
    label: c.label,
    mb: body.length / 1e6,
    processMs: (after.process - before.process) / 1000 / OPTS.calls,
    loopMs: (after.loop - before.loop) / 1000 / OPTS.calls,
    wallMs,
  };
}

/**
 * A second process sending the image body to `t` back to back until stopped (a child like the
 * others: stopped with them on failure or Ctrl-C).
 */
function startNoise(t: Target): ChildProcess {
  const script = join(ROOT, 'bench', 'large-bodies.ts');
  const args = ['--import', 'tsx', script, '--noise', JSON.stringify(t), String(OPTS.mb)];
  return startChild('noise', process.execPath, args, { PATH: env.PATH, HOME: env.HOME }).child;
}

async function noiseLoop(t: Target, mb: number): Promise<never> {
  const body = largeBody('chat', 'image', 'bench/fast', mb);
  for (;;) await call(t, 'chat', body);
}

interface VictimRow {
  target: Target['name'];
  neighbour: 'none' | 'large bodies';
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function victim(t: Target, neighbour: VictimRow['neighbour']): Promise<VictimRow> {
  const r: LoadResult = await runLoad({
    origin: t.origin,
    path: pathOf(t, 'chat'),
    headers: t.headers,
    body: JSON.stringify({ model: 'bench/fast', messages: [{ role: 'user', content: 'hi' }], stream: true }),
    concurrency: 8,
    warmupMs: 500,
    durationMs: OPTS.seconds * 1000,
    stream: true,
  });
  return { target: t.name, neighbour, rps: r.rps, p50: r.ttfb.p50, p99: r.ttfb.p99, errors: r.errors };
}

async function main() {
  const started = Date.now();
  if (OPTS.build) build();
  const workDir = mkdtempSync(join(tmpdir(), 'gatehouse-bodies-'));
  try {
    const mock = await startMock();
    const floor = await startScriptProcess('floor', 'floor-proxy.ts', [
      '--upstream',
      `http://127.0.0.1:${mock.port}`,
    ]);
    const gh = await startGatehouse('gatehouse', mock.baseUrl, workDir, 'warn', undefined, {
      env: { GATEHOUSE_INFERENCE_BODY_LIMIT: String(Math.ceil(OPTS.mb * 1.2 * 1e6) + 1_000_000) },
    });
    const json = { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' };
    const targets: Target[] = [
      {
        name: 'floor',
        pid: floor.pid,
        origin: `http://127.0.0.1:${floor.port}`,
        prefix: '/v1',
        headers: json,
      },
      {
        name: 'gatehouse',
        pid: gh.pid ?? 0,
        origin: gh.origin,
        prefix: '/api/v1',
        headers: { ...json, authorization: `Bearer ${API_KEY}` },
      },
    ];

    const costs: CostRow[] = [];
    for (const c of CASES)
      for (const t of targets) {
        if (c.translated && t.name === 'floor') continue;
        log(`${t.name}: ${c.label}`);
        costs.push(await measureCost(t, c));
      }

    const victims: VictimRow[] = [];
    for (const t of targets) {
      log(`${t.name}: small streams alone, then beside large bodies`);
      victims.push(await victim(t, 'none'));
      const noise = startNoise(t);
      victims.push(await victim(t, 'large bodies'));
      await stopChild(noise, 2000);
    }

    const date = new Date().toISOString().slice(0, 10);
    const floorOf = (label: string) => costs.find((r) => r.target === 'floor' && r.label === label);
    const ms = (v: number) => v.toFixed(0);
    const lines = [
      `# Large request bodies — ${date}, ${OPTS.machine}`,
      '',
      `Gatehouse beside the floor proxy on the same mock, bodies of ~${OPTS.mb} MB, ${OPTS.calls} calls per case one at a time after a warm-up call. Commit ${gitCommit()}.`,
      '',
      '| case | target | MB | CPU ms/call | loop thread ms/call | loop ms per MB | ÷ floor (loop) | wall ms/call |',
      '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |',
      ...costs.map((r) => {
        const f = floorOf(r.label);
        const ratio = f && r.target !== 'floor' && f.loopMs > 0 ? (r.loopMs / f.loopMs).toFixed(2) : '';
        return `| ${r.label} | ${r.target} | ${r.mb.toFixed(1)} | ${ms(r.processMs)} | ${ms(r.loopMs)} | ${(r.loopMs / r.mb).toFixed(1)} | ${ratio} | ${ms(r.wallMs)} |`;
      }),
      '',
      `Small streamed calls (concurrency 8, ${OPTS.seconds} s) on the same process, alone and while a second process sends the ${OPTS.mb} MB image body to it back to back (time to first byte, ms):`,
      '',
      '| target | neighbour | req/s | p50 ms | p99 ms | errors |',
      '| --- | --- | ---: | ---: | ---: | ---: |',
      ...victims.map(
        (v) =>
          `| ${v.target} | ${v.neighbour} | ${Math.round(v.rps)} | ${(v.p50 / 1000).toFixed(1)} | ${(v.p99 / 1000).toFixed(1)} | ${v.errors} |`,
      ),
      '',
    ];
    const md = lines.join('\n');
    mkdirSync(OPTS.out, { recursive: true });
    const base = join(OPTS.out, `${date}-${OPTS.machine}-large-bodies`);
    writeJson(`${base}.json`, {
      meta: {
        date,
        options: OPTS,
        machine: machineInfo(OPTS.machine),
        commit: gitCommit(),
        wallSeconds: Math.round((Date.now() - started) / 1000),
      },
      costs,
      victims,
    });
    writeFileSync(`${base}.md`, md);
    process.stdout.write(`${md}\n`);
    log(`wrote ${relative(ROOT, base)}.md and .json`);
  } finally {
    await stopChildren();
    rmSync(workDir, { recursive: true, force: true });
  }
}

const noise = process.argv.indexOf('--noise');
if (noise > 0)
  void noiseLoop(JSON.parse(process.argv[noise + 1] as string) as Target, Number(process.argv[noise + 2]));
else runBenchmark(main);
