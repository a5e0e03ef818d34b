/**
 * The batches benchmark (`npm run bench:batches`). See bench/README.md, "Batches", for how to read it.
 *
 * Gatehouse runs as its own process (`node dist/cli.js serve`, built first) on a throwaway SQLite data
 * directory with the model `bench/fast` → the instant mock upstream (bench/mock-upstream.ts, also its own
 * process); this process only generates load and samples the gateway's memory from /proc.
 *
 * 1. Ingestion: a ~200 MB batch body (200,000 chat requests of ~1 KB, varied user text) is generated
 *    on the fly (never held in memory here) and streamed to `POST /api/v1/batches` of a fresh gateway
 *    started with GATEHOUSE_WORKER=off, so none of its requests runs. Measured: time to the 202, MB/s,
 *    and the gateway's RSS (VmRSS sampled every 20 ms, plus VmHWM reset just before the upload through
 *    /proc/<pid>/clear_refs) before, at the peak and after. Each round on a fresh gateway.
 * 2. Worker vs synchronous: one gateway with the worker on (concurrency 64 overall and per provider,
 *    poll 50 ms). Alternately, for several rounds: (a) synchronous `POST /api/v1/chat/completions` at
 *    concurrency 64 with the closed-loop load generator (bench/loadgen.ts); (b) a 10,000-request batch,
 *    timed from its 202 to `completed` (polled every 100 ms with results_limit=0), every result then
 *    downloaded (JSONL) and checked. Medians and the ratio worker / sync.
 *
 * Results: bench/results/<date>-<machine>-batches.md and .json. Every address is 127.0.0.1.
 *
 * Before each measurement it waits (up to BENCH_QUIET_WAIT_S) until other work on the machine uses
 * less than BENCH_QUIET_CORES cores, and it records the CPU the gateway and everything else used during
 * each measurement (from /proc), so a run disturbed by a neighbour shows it.
 *
 * Knobs (environment): BENCH_PHASES ("ingest,worker"), BENCH_INGEST_ROUNDS (5), BENCH_INGEST_REQUESTS
 * (200000), BENCH_ROUNDS (3 rounds of sync + batch), BENCH_BATCH_REQUESTS (10000), BENCH_SYNC_MS (10000
 * measured per round, after BENCH_WARMUP_MS = 700), BENCH_SYNC (1; 0 skips the synchronous runs, e.g. to
 * profile the worker alone), BENCH_CONCURRENCY (64: sync load and worker concurrency), BENCH_POLL_MS (50:
 * the worker's GATEHOUSE_BATCH_POLL_MS), BENCH_STATUS_POLL_MS (100: how often the batch status is read),
 * BENCH_QUIET_CORES (0.25), BENCH_QUIET_WAIT_S (120), BENCH_NODE_ARGS (extra Node options for the
 * gateways, e.g. "--max-semi-space-size=32"), BENCH_SKIP_BUILD (0), BENCH_CPU_PROF (a directory:
 * every Gatehouse child runs with --cpu-prof, one file per process, named after it; the log prints each
 * measurement's --window for bench/profile.ts), BENCH_MACHINE, BENCH_OUT (bench/results), BENCH_KEEP (0).
 */
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { request } from 'undici';
import { batchChunks, bodySize, bodyStream, itemJson, prng } from './batch-body.js';
import { runLoad } from './loadgen.js';
import { mbOfKiB, procMem, resetPeak, sampleRss } from './memory.js';
import {
  API_KEY,
  build,
  type CpuUse,
  cpuMeter,
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
  stopChild,
  stopChildren,
  waitQuiet,
  writeJson,
} from './processes.js';

const env = process.env;
const num = (name: string, fallback: number) => (env[name] ? Number(env[name]) : fallback);
const flag = (name: string, fallback: boolean) => (env[name] ? env[name] !== '0' : fallback);

const OPTS = {
  phases: (env.BENCH_PHASES ?? 'ingest,worker').split(','),
  ingestRounds: num('BENCH_INGEST_ROUNDS', 5),
  ingestRequests: num('BENCH_INGEST_REQUESTS', 200_000),
  rounds: num('BENCH_ROUNDS', 3),
  batchRequests: num('BENCH_BATCH_REQUESTS', 10_000),
  syncMs: num('BENCH_SYNC_MS', 10_000),
  warmupMs: num('BENCH_WARMUP_MS', 700),
  sync: flag('BENCH_SYNC', true),
  concurrency: num('BENCH_CONCURRENCY', 64),
  workerPollMs: num('BENCH_POLL_MS', 50),
  statusPollMs: num('BENCH_STATUS_POLL_MS', 100),
  rssSampleMs: 20,
  build: !flag('BENCH_SKIP_BUILD', false),
  cpuProf: env.BENCH_CPU_PROF ? resolve(env.BENCH_CPU_PROF) : null,
  machine: env.BENCH_MACHINE ?? defaultMachineName(),
  out: resolve(env.BENCH_OUT ?? join(ROOT, 'bench', 'results')),
  keep: flag('BENCH_KEEP', false),
  /** Extra Node options for the gateway processes (space-separated), e.g. "--max-semi-space-size=32". */
  nodeArgs: nodeArgsFromEnv('BENCH_NODE_ARGS'),
  /** Wait before each measurement until other work on the machine uses less than this many cores. */
  quietCores: num('BENCH_QUIET_CORES', 0.25),
  quietWaitMs: num('BENCH_QUIET_WAIT_S', 120) * 1000,
};

const TARGETS = { peakRssMB: 300, ingestMBps: 40, workerVsSync: 1 };
/** The gateways' batch size limit here: far above any body this generates. */
const MAX_BYTES = 1024 * 1024 * 1024;
const MOCK_CONTENT = 'Hello from the benchmark mock.';
const AUTH = { authorization: `Bearer ${API_KEY}` };
const MB = 1e6;

// ---------------------------------------------------------------------------------------------

/** CLOCK_MONOTONIC in µs: the clock of --cpu-prof timestamps (bench/profile.ts --window=<from>-<to>). */
const monoUs = () => Number(process.hrtime.bigint() / 1000n);

// ---------------------------------------------------------------------------------------------
// The API

interface BatchView {
  id: string;
  status: string;
  request_counts: { completed: number; failed: number; total: number };
  results?: {
    custom_id: string;
    response: { status_code: number; body: { choices?: { message?: { content?: string } }[] } } | null;
    error: unknown;
  }[];
}

async function getJson<T>(url: string): Promise<{ status: number; body: T }> {
  const res = await request(url, { headers: AUTH });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`GET ${url}: HTTP ${res.statusCode} ${text.slice(0, 300)}`);
  return { status: res.statusCode, body: JSON.parse(text) as T };
}

/** POSTs a batch body (a Buffer or a stream of known length); resolves at the response. */
async function submit(origin: string, body: Buffer | Readable, bytes: number) {
  const t0 = performance.now();
  const res = await request(`${origin}/api/v1/batches`, {
    method: 'POST',
    headers: { ...AUTH, 'content-type': 'application/json', 'content-length': String(bytes) },
    body,
    headersTimeout: 600_000,
    bodyTimeout: 600_000,
  });
  const tResponse = performance.now();
  const text = await res.body.text();
  if (res.statusCode !== 202)
    throw new Error(`POST /batches: HTTP ${res.statusCode} (expected 202): ${text.slice(0, 500)}`);
  return { ms: tResponse - t0, tResponse, batch: JSON.parse(text) as BatchView };
}

const assert = (ok: unknown, what: string) => {
  if (!ok) throw new Error(what);
};

// ---------------------------------------------------------------------------------------------
// 1. Ingestion

interface IngestRound {
  round: number;
  requests: number;
  bytes: number;
  /** Request start → the 202's headers. */
  ms: number;
  mbps: number;
  /** The last body chunk handed to the socket → the 202 (final insert, admission, acceptance). */
  tailMs: number;
  rssBeforeMB: number;
  /** Highest sampled VmRSS during the upload. */
  peakSampledMB: number;
  /** VmHWM at the 202, reset just before the upload (or since process start when reset failed). */
  peakHwmMB: number;
  hwmReset: boolean;
  /** Peak used for the target: max(sampled, VmHWM). */
  peakMB: number;
  rssAt202MB: number;
  rssAfter2sMB: number;
  samples: number;
  maxSampleGapMs: number;
  dbMB: number;
  /** Round trip of GET /batches/{id}?results_limit=0 on the ingested batch, idle gateway (median of 3). */
  statusGetMs: number;
  /** CPU during the upload: the gateway's, and other work on the machine (cores). */
  gatewayCores: number;
  otherCores: number;
  /** Other work on the machine just before (cores, 1 s). */
  otherBefore: number;
  /** The upload in CLOCK_MONOTONIC µs, for bench/profile.ts --window. */
  window: string;
  series: number[][];
}

const profArgs = (name: string) => [
  ...OPTS.nodeArgs,
  ...(OPTS.cpuProf
    ? ['--cpu-prof', `--cpu-prof-dir=${OPTS.cpuProf}`, `--cpu-prof-name=${name}.cpuprofile`]
    : []),
];

function dirMB(dir: string): number {
  let bytes = 0;
  for (const f of ['gatehouse.db', 'gatehouse.db-wal']) {
    try {
      bytes += statSync(join(dir, f)).size;
    } catch {}
  }
  return Math.round(bytes / MB);
}

async function ingestRound(round: number, mockBaseUrl: string, workDir: string, bytes: number) {
  const name = `ingest-r${round}`;
  const gh = await startGatehouse(name, mockBaseUrl, workDir, 'warn', undefined, {
    env: {
      GATEHOUSE_WORKER: 'off',
      GATEHOUSE_BATCH_MAX_BYTES: String(MAX_BYTES),
      GATEHOUSE_BATCH_RATE_LIMIT: '0',
    },
    nodeArgs: profArgs(name),
    log: true,
  });
  const pid = gh.pid as number;
  try {
    // A small batch first: the code paths are warm and the API answers as expected.
    const warm = [...batchChunks(100, 'warm-')];
    const warmBody = Buffer.concat(warm);
    const w = await submit(gh.origin, warmBody, warmBody.length);
    assert(w.batch.status === 'validating', `warm-up batch: status ${w.batch.status}`);
    assert(w.batch.request_counts.total === 100, `warm-up batch: total ${w.batch.request_counts.total}`);
    await sleep(1000);

    const quiet = await waitQuiet(OPTS.quietCores, OPTS.quietWaitMs);
    const before = procMem(pid);
    const hwmReset = resetPeak(pid);
    const sampler = await sampleRss(pid, OPTS.rssSampleMs);
    let tLast = 0;
    const stream = bodyStream(batchChunks(OPTS.ingestRequests, 'req-'), () => {
      tLast = performance.now();
    });
    const fromUs = monoUs();
    const cpu = cpuMeter({ gateway: pid });
    const r = await submit(gh.origin, stream, bytes);
    const use = cpu();
    const window = `${fromUs}-${monoUs()}`;
    const at202 = procMem(pid);
    const s = await sampler.stop();
    assert(
      r.batch.request_counts.total === OPTS.ingestRequests,
      `ingested batch: total ${r.batch.request_counts.total}, expected ${OPTS.ingestRequests}`,
    );
    await sleep(2000);
    const after = procMem(pid);
    // Visible, and nothing ran (the worker is off).
    // Timed too: what one status poll of a batch this size costs (the median of 3).
    const statusTimes: number[] = [];
    let view = { status: 0, body: r.batch };
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      view = await getJson<BatchView>(`${gh.origin}/api/v1/batches/${r.batch.id}?results_limit=0`);
      statusTimes.push(performance.now() - t);
    }
    assert(view.body.status === 'validating', `ingested batch is ${view.body.status}, expected validating`);
    assert(
      view.body.request_counts.completed + view.body.request_counts.failed === 0,
      'requests ran during the ingestion measurement',
    );
    const peakSampledMB = mbOfKiB(s.peakKiB);
    const peakHwmMB = mbOfKiB(at202.hwmKiB);
    const out: IngestRound = {
      round,
      requests: OPTS.ingestRequests,
      bytes,
      ms: Math.round(r.ms),
      mbps: Math.round((bytes / MB / (r.ms / 1000)) * 10) / 10,
      tailMs: Math.round(r.tResponse - tLast),
      rssBeforeMB: Math.round(mbOfKiB(before.rssKiB)),
      peakSampledMB: Math.round(peakSampledMB),
      peakHwmMB: Math.round(peakHwmMB),
      hwmReset,
      peakMB: Math.round(Math.max(peakSampledMB, peakHwmMB)),
      rssAt202MB: Math.round(mbOfKiB(at202.rssKiB)),
      rssAfter2sMB: Math.round(mbOfKiB(after.rssKiB)),
      samples: s.count,
      maxSampleGapMs: s.maxGapMs,
      dbMB: dirMB(gh.dataDir),
      statusGetMs: Math.round(median(statusTimes)),
      gatewayCores: use.cores.gateway ?? Number.NaN,
      otherCores: use.otherCores,
      otherBefore: quiet.otherCores,
      window,
      series: s.series,
    };
    log(
      `ingest round ${round}: ${(bytes / MB).toFixed(1)} MB in ${out.ms} ms = ${out.mbps} MB/s (last chunk → 202: ${out.tailMs} ms); RSS before ${out.rssBeforeMB} MB, peak ${out.peakSampledMB} MB sampled / ${out.peakHwmMB} MB VmHWM, at 202 ${out.rssAt202MB} MB, +2 s ${out.rssAfter2sMB} MB (${s.count} samples, max gap ${s.maxGapMs} ms); gateway CPU ${out.gatewayCores} cores, other work ${out.otherCores} cores; status GET ${out.statusGetMs} ms`,
    );
    if (OPTS.cpuProf)
      log(`  profile: bench/profile.ts ${OPTS.cpuProf}/${name}.cpuprofile --window=${window}`);
    return out;
  } finally {
    await stopChild(gh.child);
    if (!OPTS.keep) rmSync(gh.dataDir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// 2. Worker vs synchronous

interface SyncRun {
  rps: number;
  requests: number;
  errors: number;
  firstError: string | null;
  p50Ms: number;
  p99Ms: number;
  /** Gateway CPU time per request (ms) and cores, other work on the machine (cores), measured window. */
  gatewayCpuMsPerReq: number;
  gatewayCores: number;
  otherCores: number;
  /** The measured window in CLOCK_MONOTONIC µs, for bench/profile.ts --window. */
  window: string;
}

interface BatchRun {
  requests: number;
  bytes: number;
  /** POST → 202. */
  submitMs: number;
  /** 202 → `completed` seen by the poller. */
  ms: number;
  rps: number;
  /** 202 → the first finished request seen. */
  firstResultMs: number;
  /** Rate between 10 % and 90 % done (poll samples). */
  steadyRps: number;
  completed: number;
  failed: number;
  status: string;
  /** Every result downloaded and checked (status 200, the mock's content, each custom_id once). */
  verified: number;
  /** Round trip of the status polls (GET …?results_limit=0), median and max, ms. */
  pollMs: number;
  pollMaxMs: number;
  /** Gateway CPU time per request (ms) and cores, other work on the machine (cores), 202 → completed. */
  gatewayCpuMsPerReq: number;
  gatewayCores: number;
  otherCores: number;
  /** 202 → completed in CLOCK_MONOTONIC µs, for bench/profile.ts --window. */
  window: string;
  polls: number;
  progress: number[][];
}

/** A representative ~1 KB request body for the synchronous runs (the same shape as batch items). */
function syncBody(): string {
  const item = JSON.parse(itemJson(0, 'sync-', prng(11))) as { body: unknown };
  return JSON.stringify(item.body);
}

async function syncRun(origin: string, pid: number, body: string): Promise<SyncRun> {
  await waitQuiet(OPTS.quietCores, OPTS.quietWaitMs);
  const fromUs = monoUs() + OPTS.warmupMs * 1000;
  // CPU over the measured window only (it starts after the warm-up).
  const meter = sleep(OPTS.warmupMs).then(() => cpuMeter({ gateway: pid }));
  const r = await runLoad({
    origin,
    path: '/api/v1/chat/completions',
    headers: { 'content-type': 'application/json', ...AUTH },
    body,
    concurrency: OPTS.concurrency,
    warmupMs: OPTS.warmupMs,
    durationMs: OPTS.syncMs,
    stream: false,
  });
  const use = (await meter)();
  return {
    rps: r.rps,
    requests: r.requests,
    errors: r.errors,
    firstError: r.firstError,
    p50Ms: Math.round(r.total.p50 / 100) / 10,
    p99Ms: Math.round(r.total.p99 / 100) / 10,
    ...cpuFields(use, r.requests),
    window: `${fromUs}-${monoUs()}`,
  };
}

function cpuFields(use: CpuUse, requests: number) {
  const gatewayCores = use.cores.gateway ?? Number.NaN;
  return {
    gatewayCpuMsPerReq: Math.round(((gatewayCores * use.seconds * 1000) / requests) * 1000) / 1000,
    gatewayCores,
    otherCores: use.otherCores,
  };
}

const FINAL = new Set(['completed', 'failed', 'expired', 'cancelled']);

async function batchRun(origin: string, pid: number, n: number, prefix: string): Promise<BatchRun> {
  const body = Buffer.concat([...batchChunks(n, prefix, 1000 + n)]);
  await waitQuiet(OPTS.quietCores, OPTS.quietWaitMs);
  const sub = await submit(origin, body, body.length);
  const meter = cpuMeter({ gateway: pid });
  const fromUs = monoUs();
  const id = sub.batch.id;
  const t202 = sub.tResponse;
  const progress: number[][] = [];
  let view = sub.batch;
  let doneMs = 0;
  let toUs = fromUs;
  const pollTimes: number[] = [];
  for (let k = 1; ; k++) {
    // A fixed cadence from the 202: poll k at k × 100 ms (or at once if the last poll ran late).
    const wait = t202 + k * OPTS.statusPollMs - performance.now();
    if (wait > 0) await sleep(wait);
    const tPoll = performance.now();
    view = (await getJson<BatchView>(`${origin}/api/v1/batches/${id}?results_limit=0`)).body;
    pollTimes.push(performance.now() - tPoll);
    const at = performance.now() - t202;
    progress.push([Math.round(at), view.request_counts.completed + view.request_counts.failed]);
    if (FINAL.has(view.status)) {
      doneMs = at;
      break;
    }
    toUs = monoUs();
    if (at > 600_000) throw new Error(`batch ${id} not finished after 10 minutes: ${JSON.stringify(view)}`);
  }
  const use = meter();
  const { completed, failed } = view.request_counts;
  const at = (share: number) => progress.find((p) => (p[1] as number) >= share * n);
  const p10 = at(0.1);
  const p90 = at(0.9);
  const steadyRps =
    p10 && p90 && (p90[0] as number) > (p10[0] as number)
      ? Math.round(
          (((p90[1] as number) - (p10[1] as number)) / ((p90[0] as number) - (p10[0] as number))) * 1000,
        )
      : Number.NaN;
  const verified = await verify(origin, id, n, prefix);
  const step = Math.max(1, Math.ceil(progress.length / 100));
  return {
    requests: n,
    bytes: body.length,
    submitMs: Math.round(sub.ms),
    ms: Math.round(doneMs),
    rps: Math.round((n / doneMs) * 1000),
    firstResultMs: Math.round(progress.find((p) => (p[1] as number) > 0)?.[0] ?? Number.NaN),
    steadyRps,
    completed,
    failed,
    status: view.status,
    verified,
    ...cpuFields(use, n),
    window: `${fromUs}-${toUs}`,
    polls: progress.length,
    pollMs: Math.round(median(pollTimes) * 10) / 10,
    pollMaxMs: Math.round(Math.max(...pollTimes)),
    progress: progress.filter((_, i) => i % step === 0 || i === progress.length - 1),
  };
}

/**
 * Checks every result of the batch: the JSONL download has one line per request, each custom_id once,
 * status 200 and the mock's content; and one page of the poll API at a random offset agrees.
 */
async function verify(origin: string, id: string, n: number, prefix: string): Promise<number> {
  const res = await request(`${origin}/api/v1/batches/${id}/results`, { headers: AUTH });
  const text = await res.body.text();
  assert(res.statusCode === 200, `GET /batches/${id}/results: HTTP ${res.statusCode} ${text.slice(0, 300)}`);
  const seen = new Set<string>();
  let ok = 0;
  let firstBad: string | null = null;
  for (const line of text.split('\n')) {
    if (!line) continue;
    const r = JSON.parse(line) as NonNullable<BatchView['results']>[number];
    const content = r.response?.body.choices?.[0]?.message?.content;
    if (r.response?.status_code === 200 && content === MOCK_CONTENT && r.custom_id.startsWith(prefix)) ok++;
    else firstBad ??= line.slice(0, 400);
    seen.add(r.custom_id);
  }
  assert(firstBad === null, `batch ${id}: a result is not a success with the mock's content: ${firstBad}`);
  assert(
    ok === n && seen.size === n,
    `batch ${id}: ${ok} good results, ${seen.size} custom_ids, expected ${n}`,
  );
  const k = Math.floor(Math.random() * n);
  const page = (
    await getJson<BatchView>(`${origin}/api/v1/batches/${id}?results_offset=${k}&results_limit=1`)
  ).body;
  const r = page.results?.[0];
  assert(
    r?.custom_id === `${prefix}${k}` &&
      r.response?.status_code === 200 &&
      r.response.body.choices?.[0]?.message?.content === MOCK_CONTENT,
    `batch ${id}: result ${k} is not ${prefix}${k} with the mock's content: ${JSON.stringify(r).slice(0, 400)}`,
  );
  return ok;
}

async function workerPhase(mockBaseUrl: string, workDir: string) {
  const name = 'worker';
  const gh = await startGatehouse(name, mockBaseUrl, workDir, 'warn', undefined, {
    env: {
      GATEHOUSE_BATCH_CONCURRENCY: String(OPTS.concurrency),
      GATEHOUSE_BATCH_PROVIDER_CONCURRENCY: String(OPTS.concurrency),
      GATEHOUSE_BATCH_POLL_MS: String(OPTS.workerPollMs),
      GATEHOUSE_BATCH_MAX_BYTES: String(MAX_BYTES),
      GATEHOUSE_BATCH_RATE_LIMIT: '0',
    },
    nodeArgs: profArgs(name),
    log: true,
  });
  log(`gatehouse (worker on) at ${gh.origin}, pid ${gh.pid}`);
  const pid = gh.pid as number;
  try {
    const body = syncBody();
    // Sanity: one synchronous call.
    const res = await request(`${gh.origin}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...AUTH },
      body,
    });
    const text = await res.body.text();
    assert(
      res.statusCode === 200 && text.includes(MOCK_CONTENT),
      `sync sanity: ${res.statusCode} ${text.slice(0, 300)}`,
    );
    // Warm-up (discarded): JIT, pools, caches, both paths.
    if (OPTS.sync)
      await runLoad({
        origin: gh.origin,
        path: '/api/v1/chat/completions',
        headers: { 'content-type': 'application/json', ...AUTH },
        body,
        concurrency: OPTS.concurrency,
        warmupMs: 0,
        durationMs: 3000,
        stream: false,
      });
    const warm = await batchRun(gh.origin, pid, Math.min(2000, OPTS.batchRequests), 'warm-');
    log(`warmed up: a ${warm.requests}-request batch in ${warm.ms} ms`);

    /** rssMB: the gateway's RSS after the round. */
    const rounds: { round: number; sync: SyncRun | null; batch: BatchRun; rssMB: number }[] = [];
    for (let round = 1; round <= OPTS.rounds; round++) {
      let sync: SyncRun | null = null;
      if (OPTS.sync) {
        sync = await syncRun(gh.origin, pid, body);
        log(
          `round ${round} sync c=${OPTS.concurrency}: ${sync.rps} req/s, p50 ${sync.p50Ms} ms, p99 ${sync.p99Ms} ms, gateway ${sync.gatewayCpuMsPerReq} CPU ms/req (${sync.gatewayCores} cores), other work ${sync.otherCores} cores${sync.errors ? `, ${sync.errors} errors (${sync.firstError})` : ''}`,
        );
      }
      const batch = await batchRun(gh.origin, pid, OPTS.batchRequests, `r${round}-`);
      log(
        `round ${round} batch: ${batch.requests} requests (${(batch.bytes / MB).toFixed(1)} MB, 202 in ${batch.submitMs} ms), 202 → ${batch.status} in ${batch.ms} ms = ${batch.rps} req/s (steady ${batch.steadyRps} req/s, first result after ${batch.firstResultMs} ms); completed ${batch.completed}, failed ${batch.failed}, verified ${batch.verified}; gateway ${batch.gatewayCpuMsPerReq} CPU ms/req (${batch.gatewayCores} cores), other work ${batch.otherCores} cores`,
      );
      if (OPTS.cpuProf)
        log(
          `  profile: bench/profile.ts ${OPTS.cpuProf}/${name}.cpuprofile --window=… sync ${sync?.window ?? '–'}, batch ${batch.window}`,
        );
      rounds.push({ round, sync, batch, rssMB: Math.round(mbOfKiB(procMem(pid).rssKiB)) });
    }
    const mem = procMem(gh.pid as number);
    return { rounds, rssMB: Math.round(mbOfKiB(mem.rssKiB)), peakRssMB: Math.round(mbOfKiB(mem.hwmKiB)) };
  } finally {
    await stopChild(gh.child, 30_000);
  }
}

// ---------------------------------------------------------------------------------------------
// Reporting

function median(values: number[]): number {
  const v = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return Number.NaN;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? (v[mid] as number) : ((v[mid - 1] as number) + (v[mid] as number)) / 2;
}

const fmt = (v: number, digits = 0) =>
  Number.isFinite(v)
    ? v.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
    : '–';
const met = (ok: boolean) => (ok ? 'met' : '**NOT met**');

type WorkerResult = Awaited<ReturnType<typeof workerPhase>>;

function summarizeAll(ingest: IngestRound[], worker: WorkerResult | null) {
  const ingestSummary = ingest.length
    ? {
        mbps: median(ingest.map((r) => r.mbps)),
        ms: median(ingest.map((r) => r.ms)),
        peakMB: Math.max(...ingest.map((r) => r.peakMB)),
        rssBeforeMB: median(ingest.map((r) => r.rssBeforeMB)),
        rssAfter2sMB: median(ingest.map((r) => r.rssAfter2sMB)),
      }
    : null;
  const syncs = worker?.rounds.flatMap((r) => (r.sync ? [r.sync] : [])) ?? [];
  const workerSummary = worker
    ? {
        syncRps: syncs.length ? median(syncs.map((s) => s.rps)) : Number.NaN,
        batchRps: median(worker.rounds.map((r) => r.batch.rps)),
        steadyRps: median(worker.rounds.map((r) => r.batch.steadyRps)),
        syncCpuMsPerReq: syncs.length ? median(syncs.map((s) => s.gatewayCpuMsPerReq)) : Number.NaN,
        batchCpuMsPerReq: median(worker.rounds.map((r) => r.batch.gatewayCpuMsPerReq)),
        ratio: Number.NaN,
        cpuRatio: Number.NaN,
      }
    : null;
  if (workerSummary) {
    workerSummary.ratio = workerSummary.batchRps / workerSummary.syncRps;
    workerSummary.cpuRatio = workerSummary.batchCpuMsPerReq / workerSummary.syncCpuMsPerReq;
  }
  const targets = [];
  if (ingestSummary) {
    targets.push({
      name: 'peak RSS during ingestion',
      target: `< ${TARGETS.peakRssMB} MB`,
      value: `${fmt(ingestSummary.peakMB)} MB (highest of ${ingest.length} rounds; ${ingest.filter((r) => r.peakMB >= TARGETS.peakRssMB).length} of ${ingest.length} rounds at or above ${TARGETS.peakRssMB} MB; median peak ${fmt(median(ingest.map((r) => r.peakMB)))} MB)`,
      met: ingestSummary.peakMB < TARGETS.peakRssMB,
    });
    targets.push({
      name: 'ingestion throughput',
      target: `≥ ${TARGETS.ingestMBps} MB/s`,
      value: `${fmt(ingestSummary.mbps, 1)} MB/s (median of ${ingest.length} rounds)`,
      met: ingestSummary.mbps >= TARGETS.ingestMBps,
    });
  }
  if (workerSummary && Number.isFinite(workerSummary.ratio)) {
    targets.push({
      name: 'worker throughput vs synchronous',
      target: `worker ≥ sync (ratio ≥ ${TARGETS.workerVsSync})`,
      value: `${fmt(workerSummary.batchRps)} vs ${fmt(workerSummary.syncRps)} req/s = ${workerSummary.ratio.toFixed(2)}× (medians of ${worker?.rounds.length} rounds)`,
      met: workerSummary.ratio >= TARGETS.workerVsSync,
    });
  }
  return { ingest: ingestSummary, worker: workerSummary, targets };
}

function report(
  meta: { date: string; machine: ReturnType<typeof machineInfo>; gitCommit: string; wallSeconds: number },
  ingest: IngestRound[],
  worker: WorkerResult | null,
  summary: ReturnType<typeof summarizeAll>,
  notes: string[],
) {
  const m = meta.machine;
  const lines: string[] = [
    `# Batches benchmark — ${meta.date}, ${m.name}`,
    '',
    `Machine: ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, Linux ${m.os}, Node ${m.node}. Gatehouse at commit \`${meta.gitCommit}\` (plus the working tree).`,
    '',
    `Run: \`npm run bench:batches\` (${meta.wallSeconds} s). Gatehouse: \`node dist/cli.js serve\` as its own process, SQLite on a temp dir, model \`bench/fast\` → the instant mock upstream (its own process) as \`openai-compatible\` with prices, credits granted, rate limits out of the way, LOG_LEVEL=warn${OPTS.nodeArgs.length ? `, Node options \`${OPTS.nodeArgs.join(' ')}\`` : ''}. MB = 10⁶ bytes throughout (RSS too).`,
    '',
  ];
  if (ingest.length) {
    const r0 = ingest[0] as IngestRound;
    lines.push(
      `## Ingestion: ${fmt(r0.requests)} requests, ${fmt(r0.bytes / MB, 1)} MB`,
      '',
      `One \`POST /api/v1/batches\` per round, the body generated and streamed by the load generator (Content-Length set, ~1 KB chat requests with varied user text), each round on a fresh gateway with GATEHOUSE_WORKER=off (nothing runs) and GATEHOUSE_BATCH_MAX_BYTES = 1 GiB, after a 100-request warm-up batch. RSS of the gateway process: VmRSS sampled every ${OPTS.rssSampleMs} ms during the upload, and VmHWM reset (\`/proc/<pid>/clear_refs\`) just before it and read at the 202; peak = the higher of the two.`,
      '',
      '| round | time to 202 ms | MB/s | last chunk → 202 ms | RSS before MB | peak RSS MB (sampled / VmHWM) | RSS at 202 MB | RSS +2 s MB | DB on disk MB | status GET ms | gateway CPU cores | other work cores |',
      '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    );
    for (const r of ingest)
      lines.push(
        `| ${r.round} | ${fmt(r.ms)} | ${fmt(r.mbps, 1)} | ${fmt(r.tailMs)} | ${fmt(r.rssBeforeMB)} | ${fmt(r.peakMB)} (${fmt(r.peakSampledMB)} / ${fmt(r.peakHwmMB)}) | ${fmt(r.rssAt202MB)} | ${fmt(r.rssAfter2sMB)} | ${fmt(r.dbMB)} | ${fmt(r.statusGetMs)} | ${fmt(r.gatewayCores, 2)} | ${fmt(r.otherCores, 2)} |`,
      );
    const s = summary.ingest;
    if (s)
      lines.push(
        `| **median** | ${fmt(s.ms)} | **${fmt(s.mbps, 1)}** |  | ${fmt(s.rssBeforeMB)} | **${fmt(s.peakMB)}** (highest) |  | ${fmt(s.rssAfter2sMB)} |  |  |  |  |`,
      );
    lines.push('');
  }
  if (worker) {
    lines.push(
      `## Worker throughput vs synchronous, concurrency ${OPTS.concurrency}`,
      '',
      `One gateway with the worker on (GATEHOUSE_BATCH_CONCURRENCY = GATEHOUSE_BATCH_PROVIDER_CONCURRENCY = ${OPTS.concurrency}, GATEHOUSE_BATCH_POLL_MS = ${OPTS.workerPollMs}), warmed up first (3 s of synchronous load and a 2,000-request batch, discarded). Each round: (a) synchronous \`POST /api/v1/chat/completions\` at concurrency ${OPTS.concurrency}, closed loop, ${OPTS.warmupMs} ms warm-up + ${OPTS.syncMs / 1000} s measured, one ~1 KB body of the same shape as the batch items; then (b) a ${fmt(OPTS.batchRequests)}-request batch, timed from its 202 to \`completed\` as seen by polling \`GET /batches/{id}?results_limit=0\` every ${OPTS.statusPollMs} ms; every result then downloaded (JSONL) and checked: status 200, the mock's content, each custom_id once.`,
      '',
    );
    if (OPTS.sync) {
      lines.push(
        '(a) Synchronous:',
        '',
        '| round | req/s | p50 ms | p99 ms | errors | gateway CPU ms / request | gateway CPU cores | other work cores |',
        '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
      );
      for (const { round, sync: x } of worker.rounds)
        if (x)
          lines.push(
            `| ${round} | ${fmt(x.rps)} | ${fmt(x.p50Ms, 1)} | ${fmt(x.p99Ms, 1)} | ${x.errors} | ${fmt(x.gatewayCpuMsPerReq, 3)} | ${fmt(x.gatewayCores, 2)} | ${fmt(x.otherCores, 2)} |`,
          );
      const s = summary.worker;
      if (s)
        lines.push(`| **median** | **${fmt(s.syncRps)}** |  |  |  | ${fmt(s.syncCpuMsPerReq, 3)} |  |  |`);
      lines.push('');
    }
    lines.push(
      `(b) Batch of ${fmt(OPTS.batchRequests)}:`,
      '',
      '| round | POST → 202 ms | 202 → completed ms | req/s | steady req/s (10–90 %) | first result ms | completed / failed | verified | poll ms (median / max) | gateway CPU ms / request | gateway CPU cores | other work cores |',
      '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    );
    for (const { round, batch: b } of worker.rounds)
      lines.push(
        `| ${round} | ${fmt(b.submitMs)} | ${fmt(b.ms)} | ${fmt(b.rps)} | ${fmt(b.steadyRps)} | ${fmt(b.firstResultMs)} | ${fmt(b.completed)} / ${fmt(b.failed)} | ${fmt(b.verified)} | ${fmt(b.pollMs, 1)} / ${fmt(b.pollMaxMs)} | ${fmt(b.gatewayCpuMsPerReq, 3)} | ${fmt(b.gatewayCores, 2)} | ${fmt(b.otherCores, 2)} |`,
      );
    const s = summary.worker;
    if (s)
      lines.push(
        `| **median** |  |  | **${fmt(s.batchRps)}** | ${fmt(s.steadyRps)} |  |  |  |  | ${fmt(s.batchCpuMsPerReq, 3)} |  |  |`,
        '',
        `Worker / sync: **${Number.isFinite(s.ratio) ? `${s.ratio.toFixed(2)}×` : '–'}** in req/s (median batch req/s over median sync req/s); gateway CPU per request, batch / sync: ${Number.isFinite(s.cpuRatio) ? `${s.cpuRatio.toFixed(2)}×` : '–'}. Gateway RSS after each round: ${worker.rounds.map((r) => `${r.rssMB} MB`).join(', ')} (peak ${worker.peakRssMB} MB).`,
      );
    lines.push('');
  }
  if (summary.targets.length) {
    lines.push('## Targets (issue 4)', '');
    for (const t of summary.targets)
      lines.push(`- ${t.name}: ${t.value} — target ${t.target}: ${met(t.met)}`);
    lines.push('');
  }
  if (notes.length) lines.push('Notes:', '', ...notes.map((n) => `- ${n}`), '');
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const started = Date.now();
  if (OPTS.build) build();
  const workDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-batches-'));
  const notes: string[] = [];
  try {
    const mock = await startMock();
    log(`mock upstream at ${mock.baseUrl}`);

    const ingest: IngestRound[] = [];
    if (OPTS.phases.includes('ingest')) {
      const t = performance.now();
      const bytes = bodySize(OPTS.ingestRequests, 'req-');
      log(
        `ingestion body: ${fmt(OPTS.ingestRequests)} requests, ${fmt(bytes)} bytes (${(bytes / OPTS.ingestRequests).toFixed(0)} B each on average), generated in ${Math.round(performance.now() - t)} ms`,
      );
      for (let round = 1; round <= OPTS.ingestRounds; round++)
        ingest.push(await ingestRound(round, mock.baseUrl, workDir, bytes));
      if (ingest.some((r) => !r.hwmReset))
        notes.push('VmHWM could not be reset here: the VmHWM column is the peak since the process started.');
    }

    const worker = OPTS.phases.includes('worker') ? await workerPhase(mock.baseUrl, workDir) : null;
    if (worker && !OPTS.sync) notes.push('Synchronous runs skipped (BENCH_SYNC=0): no ratio.');
    // Other work on the machine during a measurement takes CPU from what is measured.
    const busy = [
      ...ingest.map((r) => ({ what: `ingestion round ${r.round}`, cores: r.otherCores })),
      ...(worker?.rounds ?? []).flatMap((r) => [
        ...(r.sync ? [{ what: `sync round ${r.round}`, cores: r.sync.otherCores }] : []),
        { what: `batch round ${r.round}`, cores: r.batch.otherCores },
      ]),
    ].filter((b) => b.cores >= OPTS.quietCores);
    if (busy.length)
      notes.push(
        `Other work ran on this machine during ${busy.map((b) => `${b.what} (${b.cores} cores)`).join(', ')}: those numbers are low by up to that share of the ${machineInfo(OPTS.machine).cores} cores.`,
      );

    const date = new Date().toISOString().slice(0, 10);
    const meta = {
      date,
      finishedAt: new Date().toISOString(),
      wallSeconds: Math.round((Date.now() - started) / 1000),
      machine: machineInfo(OPTS.machine),
      gitCommit: gitCommit(),
      options: OPTS,
      targets: TARGETS,
    };
    const summary = summarizeAll(ingest, worker);
    mkdirSync(OPTS.out, { recursive: true });
    const base = join(OPTS.out, `${date}-${OPTS.machine}-batches`);
    writeJson(`${base}.json`, { meta, notes, summary, ingest, worker });
    const md = report(meta, ingest, worker, summary, notes);
    writeFileSync(`${base}.md`, md);
    process.stdout.write(`${md}\n`);
    log(`wrote ${relative(ROOT, base)}.md and .json in ${meta.wallSeconds} s`);
  } finally {
    await stopChildren();
    if (OPTS.cpuProf) log(`CPU profiles of the Gatehouse children in ${OPTS.cpuProf}`);
    if (!OPTS.keep) rmSync(workDir, { recursive: true, force: true });
    else log(`kept ${workDir}`);
  }
}

runBenchmark(main);
