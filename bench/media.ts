/**
 * The media service benchmark (`npm run bench:media`): the service as its own process
 * (`node dist/cli.js media`, built-in local generator, filesystem store), this process as the client.
 *
 * 1. Overhead per request, concurrency 1 on one keep-alive connection, timed to the end of the body:
 *    `GET /health` (Fastify + one loopback hop: the floor), `GET /api/status`, `POST /api/t2i/model-a`
 *    rejected by validation (JSON body parsed, validated, error envelope — everything the service does
 *    before a generator is called), the same rejected as multipart, and full local generations
 *    (`t2i/model-a`, 1024×1024 WebP): their end-to-end time minus the generator's own time as the
 *    service reports it (`/api/status` median) is the service's share around a generation (storing
 *    the output included).
 * 2. Memory: 50 concurrent multipart uploads of a ~10 MB PNG to `i2i/model-b` (streamed from disk by
 *    undici, Content-Length set), on a fresh service each: (a) rejected after the upload (no prompt:
 *    the file is streamed to the temp dir, then validation fails) — the upload path alone; (b) full
 *    generations from those uploads. VmRSS of the service sampled every 20 ms on a worker thread, and
 *    VmHWM reset through /proc/<pid>/clear_refs just before and read after. Target (issue 6): peak RSS
 *    under 250 MB.
 *
 * Writes bench/results/<date>-<machine>-media.md and .json. MB = 10⁶ bytes. Only 127.0.0.1 is contacted.
 */
import { randomBytes } from 'node:crypto';
import {
  createReadStream,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import sharp from 'sharp';
import { Agent, Pool, request } from 'undici';
import { mbOfKiB, procMem, resetPeak, sampleRss } from './memory.js';
import {
  build,
  cpuMeter,
  defaultMachineName,
  freePort,
  GATEHOUSE_NODE_FLAGS,
  gitCommit,
  log,
  machineInfo,
  nodeArgsFromEnv,
  ROOT,
  runBenchmark,
  sleep,
  startChild,
  stopChild,
  waitFor,
  waitQuiet,
  writeJson,
} from './processes.js';

/** kB as MB, to 0.1. */
const mbOf = (kib: number) => Math.round(mbOfKiB(kib) * 10) / 10;

const env = process.env;
const MB = 1e6;
const OPTS = {
  requests: Number(env.BENCH_REQUESTS ?? 2000),
  warmup: Number(env.BENCH_WARMUP ?? 200),
  generations: Number(env.BENCH_GENERATIONS ?? 40),
  uploads: Number(env.BENCH_UPLOADS ?? 50),
  uploadMB: Number(env.BENCH_UPLOAD_MB ?? 10),
  rssSampleMs: Number(env.BENCH_RSS_MS ?? 20),
  targetMB: 250,
  /** GATEHOUSE_MEDIA_QUEUE of the service: room for every upload (the default 16 would 429 the rest). */
  queue: Number(env.BENCH_MEDIA_QUEUE ?? 64),
  phases: (env.BENCH_PHASES ?? 'latency,upload,generate').split(','),
  nodeArgs: nodeArgsFromEnv('BENCH_NODE_ARGS'),
  quietCores: Number(env.BENCH_QUIET_CORES ?? 0.25),
  quietWaitS: Number(env.BENCH_QUIET_WAIT_S ?? 60),
  machine: env.BENCH_MACHINE || defaultMachineName(),
  out: env.BENCH_OUT || join(ROOT, 'bench', 'results'),
  keep: env.BENCH_KEEP === '1',
  skipBuild: env.BENCH_SKIP_BUILD === '1',
  // As `npm start` runs the services (package.json); MALLOC_ARENA_MAX= (empty) measures glibc's default.
  mallocArenaMax: env.MALLOC_ARENA_MAX ?? '2',
};

// ---------------------------------------------------------------------------------------------
// The service

async function startService(workDir: string, name: string) {
  const dataDir = join(workDir, name);
  mkdirSync(dataDir, { recursive: true });
  const port = await freePort();
  const { child, tail } = startChild(
    name,
    process.execPath,
    [...GATEHOUSE_NODE_FLAGS, ...OPTS.nodeArgs, join(ROOT, 'dist', 'cli.js'), 'media'],
    {
      PATH: env.PATH,
      HOME: env.HOME,
      NODE_ENV: 'production',
      MEDIA_PORT: String(port),
      MEDIA_HOST: '127.0.0.1',
      GATEHOUSE_DATA_DIR: dataDir,
      GATEHOUSE_MEDIA_STORE_DIR: join(dataDir, 'objects'),
      GATEHOUSE_MEDIA_MAX_UPLOAD_BYTES: String(Math.ceil(OPTS.uploadMB * MB * 2)),
      GATEHOUSE_MEDIA_TIMEOUT_MS: '600000',
      GATEHOUSE_MEDIA_QUEUE: String(OPTS.queue),
      LOG_LEVEL: 'warn',
      TMPDIR: join(dataDir, 'tmp'),
      // glibc's per-thread malloc arenas hold what sharp/libvips freed (recorded in the options).
      ...(OPTS.mallocArenaMax ? { MALLOC_ARENA_MAX: OPTS.mallocArenaMax } : {}),
    },
  );
  mkdirSync(join(dataDir, 'tmp'), { recursive: true });
  const origin = `http://127.0.0.1:${port}`;
  await waitFor(name, async () => {
    if (child.exitCode !== null) throw new Error(`${name} exited: ${tail()}`);
    const res = await request(`${origin}/health`);
    await res.body.text();
    return res.statusCode === 200;
  });
  const pid = child.pid as number;
  return { origin, pid, child, dataDir };
}

// ---------------------------------------------------------------------------------------------
// 1. Overhead per request

interface Timing {
  n: number;
  errors: number;
  statuses: Record<string, number>;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  meanMs: number;
  maxMs: number;
}

function summarize(samplesUs: number[], statuses: Record<string, number>, errors: number): Timing {
  const s = [...samplesUs].sort((a, b) => a - b);
  const at = (q: number) =>
    s.length ? (s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] as number) : NaN;
  const ms = (us: number) => Math.round(us) / 1000;
  return {
    n: s.length,
    errors,
    statuses,
    p50Ms: ms(at(0.5)),
    p90Ms: ms(at(0.9)),
    p99Ms: ms(at(0.99)),
    meanMs: ms(s.reduce((a, b) => a + b, 0) / (s.length || 1)),
    maxMs: ms(s[s.length - 1] ?? NaN),
  };
}

type Req = { method: 'GET' | 'POST'; path: string; headers?: Record<string, string>; body?: string | Buffer };

/** `n` requests one after another on one keep-alive connection, each timed to the end of its body. */
async function timeSequential(pool: Pool, req: Req, n: number, warmup: number, expect: number) {
  const samples: number[] = [];
  const statuses: Record<string, number> = {};
  let errors = 0;
  for (let i = 0; i < warmup + n; i++) {
    const t0 = process.hrtime.bigint();
    const res = await pool.request(req);
    await res.body.arrayBuffer();
    const us = Number(process.hrtime.bigint() - t0) / 1000;
    if (i < warmup) continue;
    samples.push(us);
    statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
    if (res.statusCode !== expect) errors++;
  }
  return summarize(samples, statuses, errors);
}

function formBody(fields: [string, string][]) {
  const boundary = `----gatehouse-bench-${randomBytes(8).toString('hex')}`;
  const body = Buffer.from(
    `${fields.map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`).join('')}--${boundary}--\r\n`,
  );
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

async function latencyPhase(workDir: string) {
  const svc = await startService(workDir, 'latency');
  const pool = new Pool(svc.origin, { connections: 1, headersTimeout: 600_000, bodyTimeout: 600_000 });
  const json = { 'content-type': 'application/json' };
  const form = formBody([
    ['prompt', 'a lighthouse'],
    ['output_format', 'bmp'],
  ]);
  const scenarios: { name: string; what: string; req: Req; expect: number; n: number; warmup: number }[] = [
    {
      name: 'GET /health',
      what: 'Fastify, the onSend hook and one loopback round trip: the floor of any request',
      req: { method: 'GET', path: '/health' },
      expect: 200,
      n: OPTS.requests,
      warmup: OPTS.warmup,
    },
    {
      name: 'GET /api/status',
      what: 'the status hint (median of the last 100 generation times)',
      req: { method: 'GET', path: '/api/status' },
      expect: 200,
      n: OPTS.requests,
      warmup: OPTS.warmup,
    },
    {
      name: 'POST t2i/model-a, JSON, 400',
      what: 'JSON body parsed and validated (output_format "bmp" rejected), error envelope: the work before a generator is called',
      req: {
        method: 'POST',
        path: '/api/t2i/model-a',
        headers: json,
        body: JSON.stringify({ prompt: 'a lighthouse', output_format: 'bmp' }),
      },
      expect: 400,
      n: OPTS.requests,
      warmup: OPTS.warmup,
    },
    {
      name: 'POST t2i/model-a, multipart, 400',
      what: 'the same as multipart/form-data (busboy, per-request temp-dir bookkeeping)',
      req: {
        method: 'POST',
        path: '/api/t2i/model-a',
        headers: { 'content-type': form.contentType },
        body: form.body,
      },
      expect: 400,
      n: OPTS.requests,
      warmup: OPTS.warmup,
    },
    {
      name: 'POST t2i/model-a, 1024² WebP, 200',
      what: 'a full generation by the local generator, the output stored on disk',
      req: {
        method: 'POST',
        path: '/api/t2i/model-a',
        headers: json,
        body: JSON.stringify({ prompt: 'a red lighthouse on a cliff at dusk', output_format: 'webp' }),
      },
      expect: 200,
      n: OPTS.generations,
      warmup: 3,
    },
  ];
  const results: (Timing & { name: string; what: string; cpu: ReturnType<ReturnType<typeof cpuMeter>> })[] =
    [];
  for (const s of scenarios) {
    await waitQuiet(OPTS.quietCores, OPTS.quietWaitS * 1000);
    const meter = cpuMeter({ media: svc.pid });
    const t = await timeSequential(pool, s.req, s.n, s.warmup, s.expect);
    const cpu = meter();
    log(
      `${s.name}: n=${t.n} p50 ${t.p50Ms} ms p99 ${t.p99Ms} ms (errors ${t.errors}; other work ${cpu.otherCores} cores)`,
    );
    results.push({ name: s.name, what: s.what, ...t, cpu });
  }
  // The generator's own time, as the service measures it (generation only; storing is after it).
  const status = await pool.request({ method: 'GET', path: '/api/status' });
  const st = (await status.body.json()) as { median_generation_ms: number | null; generations: number };
  await pool.close();
  const rss = mbOf(procMem(svc.pid).rssKiB);
  await stopChild(svc.child);
  const gen = results[results.length - 1] as Timing;
  const generatorMs = st.median_generation_ms;
  return {
    scenarios: results,
    generatorMedianMs: generatorMs,
    generations: st.generations,
    aroundGenerationMs: generatorMs === null ? null : Math.round((gen.p50Ms - generatorMs) * 10) / 10,
    rssAfterMB: rss,
  };
}

// ---------------------------------------------------------------------------------------------
// 2. Memory with concurrent 10 MB uploads

/** A random-noise RGB PNG (stored deflate, so it stays about `mb` MB), made once per run. */
async function noisePng(dir: string, mb: number) {
  const side = Math.floor(Math.sqrt((mb * MB) / 3));
  const file = join(dir, `noise-${side}.png`);
  const png = await sharp(randomBytes(side * side * 3), { raw: { width: side, height: side, channels: 3 } })
    .png({ compressionLevel: 0 })
    .toBuffer();
  writeFileSync(file, png);
  return { file, bytes: png.length, side };
}

/** A multipart body streamed from disk: text fields, then the file part; Content-Length known. */
function streamedForm(fields: [string, string][], field: string, file: string, size: number) {
  const boundary = `----gatehouse-bench-${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(
    `${fields.map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`).join('')}--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="noise.png"\r\nContent-Type: image/png\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  async function* parts() {
    yield head;
    for await (const chunk of createReadStream(file, { highWaterMark: 64 * 1024 })) yield chunk as Buffer;
    yield tail;
  }
  return {
    body: Readable.from(parts()),
    headers: {
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'content-length': String(head.length + size + tail.length),
    },
  };
}

async function uploadPhase(
  workDir: string,
  name: string,
  image: { file: string; bytes: number },
  generate: boolean,
) {
  const svc = await startService(workDir, name);
  const agent = new Agent({ connections: OPTS.uploads + 10, headersTimeout: 900_000, bodyTimeout: 900_000 });
  // One warm request of the same kind (small), so JIT and lazy module loading are not in the peak.
  const warm = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#345' } })
    .png()
    .toBuffer();
  const warmFile = join(workDir, 'warm.png');
  writeFileSync(warmFile, warm);
  const warmForm = streamedForm(generate ? [['prompt', 'warm-up']] : [], 'image', warmFile, warm.length);
  const w = await request(`${svc.origin}/api/i2i/model-b`, {
    method: 'POST',
    ...warmForm,
    dispatcher: agent,
  });
  await w.body.text();
  await sleep(1000);
  await waitQuiet(OPTS.quietCores, OPTS.quietWaitS * 1000);
  const before = procMem(svc.pid);
  const reset = resetPeak(svc.pid);
  const sampler = await sampleRss(svc.pid, OPTS.rssSampleMs);
  const meter = cpuMeter({ media: svc.pid });
  const t0 = performance.now();
  const statuses: Record<string, number> = {};
  const codes: Record<string, number> = {};
  const times: number[] = [];
  let failures = 0;
  await Promise.all(
    Array.from({ length: OPTS.uploads }, async (_, i) => {
      const fields: [string, string][] = generate ? [['prompt', `upload ${i}`]] : [];
      const form = streamedForm(fields, 'image', image.file, image.bytes);
      const start = performance.now();
      try {
        const res = await request(`${svc.origin}/api/i2i/model-b`, {
          method: 'POST',
          ...form,
          dispatcher: agent,
        });
        const body = (await res.body.json()) as { success?: boolean; error?: { code?: string } };
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
        const code = body.success ? 'ok' : (body.error?.code ?? 'unknown');
        codes[code] = (codes[code] ?? 0) + 1;
      } catch (err) {
        failures++;
        codes[(err as Error).message] = (codes[(err as Error).message] ?? 0) + 1;
      }
      times.push(performance.now() - start);
    }),
  );
  const wallMs = Math.round(performance.now() - t0);
  const cpu = meter();
  const sampled = await sampler.stop();
  const after = procMem(svc.pid);
  await sleep(2000);
  const after2s = procMem(svc.pid);
  await agent.close();
  await stopChild(svc.child);
  const peakSampledMB = mbOf(sampled.peakKiB);
  const peakHwmMB = mbOf(after.hwmKiB);
  const peakMB = Math.max(peakSampledMB, peakHwmMB);
  times.sort((a, b) => a - b);
  const out = {
    name,
    generate,
    uploads: OPTS.uploads,
    uploadBytes: image.bytes,
    totalMB: Math.round((OPTS.uploads * image.bytes) / MB),
    statuses,
    codes,
    failures,
    wallMs,
    mbps: Math.round(((OPTS.uploads * image.bytes) / MB / (wallMs / 1000)) * 10) / 10,
    slowestMs: Math.round(times[times.length - 1] ?? 0),
    medianMs: Math.round(times[Math.floor(times.length / 2)] ?? 0),
    rssBeforeMB: mbOf(before.rssKiB),
    peakSampledMB,
    peakHwmMB,
    hwmReset: reset,
    peakMB,
    rssAfterMB: mbOf(after.rssKiB),
    rssAfter2sMB: mbOf(after2s.rssKiB),
    underTarget: peakMB < OPTS.targetMB,
    samples: sampled.count,
    maxGapMs: sampled.maxGapMs,
    cpu,
    series: sampled.series,
  };
  log(
    `${name}: ${OPTS.uploads} × ${(image.bytes / MB).toFixed(1)} MB in ${wallMs} ms; statuses ${JSON.stringify(statuses)} ${JSON.stringify(codes)}; RSS before ${out.rssBeforeMB} MB, peak ${peakSampledMB} MB sampled / ${peakHwmMB} MB VmHWM, after ${out.rssAfterMB} MB, +2 s ${out.rssAfter2sMB} MB (${sampled.count} samples, max gap ${sampled.maxGapMs} ms); other work ${cpu.otherCores} cores`,
  );
  return out;
}

// ---------------------------------------------------------------------------------------------
// Results

type Latency = Awaited<ReturnType<typeof latencyPhase>>;
type Upload = Awaited<ReturnType<typeof uploadPhase>>;

function markdown(meta: Record<string, unknown>, latency: Latency | null, uploads: Upload[]) {
  const m = meta.machine as ReturnType<typeof machineInfo>;
  const lines = [
    `# Media service benchmark — ${meta.date}`,
    '',
    `Machine \`${m.name}\`: ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, Linux ${m.os}; Node ${m.node}; commit ${meta.commit}. The service is \`node ${GATEHOUSE_NODE_FLAGS.join(' ')} dist/cli.js media\` (as the \`gatehouse\` bin runs it; local generator, filesystem store, LOG_LEVEL=warn, ${OPTS.mallocArenaMax ? `MALLOC_ARENA_MAX=${OPTS.mallocArenaMax} as \`npm start\` sets it` : "glibc's default malloc arenas"}) as its own process; this process is the client. MB = 10⁶ bytes.`,
    '',
  ];
  if (latency) {
    lines.push(
      '## Overhead per request (concurrency 1, one keep-alive connection)',
      '',
      '| request | n | p50 ms | p90 ms | p99 ms | mean ms | status | service CPU cores | other work cores | what it shows |',
      '| --- | --: | --: | --: | --: | --: | --- | --: | --: | --- |',
      ...latency.scenarios.map(
        (s) =>
          `| ${s.name} | ${s.n} | ${s.p50Ms} | ${s.p90Ms} | ${s.p99Ms} | ${s.meanMs} | ${Object.entries(
            s.statuses,
          )
            .map(([k, v]) => `${v}× ${k}`)
            .join(', ')} | ${s.cpu.cores.media} | ${s.cpu.otherCores} | ${s.what} |`,
      ),
      '',
      `Full generations: the generator's own median (the service's \`/api/status\`) was ${latency.generatorMedianMs ?? '–'} ms, so the service's share around a generation — HTTP, validation, storing the output, the answer — is ≈ ${latency.aroundGenerationMs ?? '–'} ms at the median (a difference of medians). RSS after this phase: ${latency.rssAfterMB} MB.`,
      '',
    );
  }
  if (uploads.length) {
    lines.push(
      `## Memory: ${OPTS.uploads} concurrent multipart uploads to i2i/model-b (target: peak RSS < ${OPTS.targetMB} MB)`,
      '',
      `Each upload is a ${((uploads[0] as Upload).uploadBytes / MB).toFixed(1)} MB random-noise PNG streamed from disk by undici (Content-Length set), all ${OPTS.uploads} started at once on their own connections, on a fresh service (GATEHOUSE_MEDIA_QUEUE=${OPTS.queue}, generation concurrency at its default) after one small warm-up upload. VmRSS sampled every ${OPTS.rssSampleMs} ms on a worker thread; VmHWM reset through \`/proc/<pid>/clear_refs\` just before and read at the end; peak = the higher of the two.`,
      '',
      '| run | answers | wall s | MB/s in | median / slowest s | RSS before MB | peak RSS MB (sampled / VmHWM) | RSS at end MB | +2 s MB | < 250 MB | service CPU cores | other work cores |',
      '| --- | --- | --: | --: | --: | --: | --: | --: | --: | --- | --: | --: |',
      ...uploads.map(
        (u) =>
          `| ${u.generate ? 'uploads + generation' : 'uploads, rejected after (no prompt)'} | ${Object.entries(
            u.codes,
          )
            .map(([k, v]) => `${v}× ${k}`)
            .join(
              ', ',
            )} | ${(u.wallMs / 1000).toFixed(1)} | ${u.mbps} | ${(u.medianMs / 1000).toFixed(1)} / ${(u.slowestMs / 1000).toFixed(1)} | ${u.rssBeforeMB} | **${u.peakMB}** (${u.peakSampledMB} / ${u.peakHwmMB}) | ${u.rssAfterMB} | ${u.rssAfter2sMB} | ${u.underTarget ? 'yes' : '**no**'} | ${u.cpu.cores.media} | ${u.cpu.otherCores} |`,
      ),
      '',
    );
    if (uploads.some((u) => !u.hwmReset))
      lines.push(
        'VmHWM could not be reset here: the VmHWM column is the peak since the process started.',
        '',
      );
  }
  return `${lines.join('\n')}\n`;
}

async function main() {
  if (!OPTS.skipBuild) build();
  const workDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-media-'));
  log(`work dir ${workDir}`);
  const date = new Date().toISOString().slice(0, 10);
  let latency: Latency | null = null;
  const uploads: Upload[] = [];
  try {
    if (OPTS.phases.includes('latency')) latency = await latencyPhase(workDir);
    if (OPTS.phases.includes('upload') || OPTS.phases.includes('generate')) {
      const image = await noisePng(workDir, OPTS.uploadMB);
      log(
        `upload file: ${image.side}×${image.side} noise PNG, ${image.bytes} bytes (${statSync(image.file).size})`,
      );
      if (OPTS.phases.includes('upload')) uploads.push(await uploadPhase(workDir, 'upload', image, false));
      if (OPTS.phases.includes('generate')) uploads.push(await uploadPhase(workDir, 'generate', image, true));
    }
  } finally {
    if (!OPTS.keep) rmSync(workDir, { recursive: true, force: true });
  }
  const meta = { date, commit: gitCommit(), machine: machineInfo(OPTS.machine), options: OPTS };
  mkdirSync(OPTS.out, { recursive: true });
  const base = join(OPTS.out, `${date}-${OPTS.machine}-media`);
  writeFileSync(`${base}.md`, markdown(meta, latency, uploads));
  writeJson(`${base}.json`, { ...meta, latency, uploads });
  log(`wrote ${base}.md and .json`);
  process.stdout.write(readFileSync(`${base}.md`, 'utf8'));
}

runBenchmark(main);
