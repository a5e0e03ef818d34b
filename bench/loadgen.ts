/**
 * A closed-loop HTTP load generator on undici with microsecond timing.
 *
 * `concurrency` workers each keep exactly one request in flight on their own keep-alive connection
 * (an undici Pool with that many connections, no pipelining) for a fixed duration, after a warm-up
 * of the same shape whose samples are discarded. Every request is timed with
 * `process.hrtime.bigint()`: from just before it is handed to undici to its first body chunk
 * (time to first byte) and to the end of its body (total). Percentiles are exact, taken over all
 * samples (sorted), in microseconds with sub-microsecond precision — no millisecond rounding.
 *
 * Requests go through undici's low-level `dispatch` (no body stream objects, no promises per
 * chunk), so the generator spends as little CPU as possible: on a 2-core machine it shares the
 * cores with whatever it measures.
 */
import { Pool } from 'undici';
import { runWrk } from './loadgen-wrk.js';

export interface LoadSpec {
  /** Origin, e.g. `http://127.0.0.1:8080`; only loopback addresses are accepted. */
  origin: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  concurrency: number;
  warmupMs: number;
  durationMs: number;
  /** Streamed responses must end with `streamEnd` to count as successes. */
  stream: boolean;
  /** What the last chunk of a successful stream holds: `data: [DONE]` (default; OpenAI's wire) or,
   * for an Anthropic Messages stream, `event: message_stop`. */
  streamEnd?: string;
  /** POST (default, with `body`) or GET (no body). */
  method?: 'GET' | 'POST';
}

/** Percentiles of one measure, in microseconds. */
export interface Summary {
  count: number;
  min: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
}

export interface LoadResult {
  concurrency: number;
  /** Successful requests started in the measured window. */
  requests: number;
  errors: number;
  firstError: string | null;
  /** Measured window (to the last response), ms. */
  durationMs: number;
  /** Successful requests per second over the measured window. */
  rps: number;
  /** Request to end of body. */
  total: Summary;
  /** Request to first body chunk. */
  ttfb: Summary;
  /** The raw samples (µs), to pool several runs before taking percentiles. */
  samples: { total: Float64Array; ttfb: Float64Array };
}

/** A growable array of float samples. */
class Samples {
  private data = new Float64Array(1 << 16);
  length = 0;

  push(v: number): void {
    if (this.length === this.data.length) {
      const next = new Float64Array(this.data.length * 2);
      next.set(this.data);
      this.data = next;
    }
    this.data[this.length++] = v;
  }

  values(): Float64Array {
    return this.data.slice(0, this.length);
  }
}

/** Exact percentiles over all samples (nearest rank), rounded to 0.1 µs. */
export function summarize(values: Float64Array): Summary {
  const n = values.length;
  const sorted = Float64Array.from(values).sort();
  const at = (p: number) =>
    n === 0 ? Number.NaN : (sorted[Math.min(n - 1, Math.max(0, Math.ceil(p * n) - 1))] ?? 0);
  let sum = 0;
  for (let i = 0; i < n; i++) sum += sorted[i] ?? 0;
  const round = (v: number) => Math.round(v * 10) / 10;
  return {
    count: n,
    min: round(at(0)),
    mean: round(n === 0 ? Number.NaN : sum / n),
    p50: round(at(0.5)),
    p90: round(at(0.9)),
    p99: round(at(0.99)),
    p999: round(at(0.999)),
    max: round(n === 0 ? Number.NaN : (sorted[n - 1] ?? 0)),
  };
}

interface Timing {
  ok: boolean;
  error?: string;
  /** µs from dispatch to first body byte, and to the end. */
  ttfbUs: number;
  totalUs: number;
}

const DONE = 'data: [DONE]';

function once(pool: Pool, spec: LoadSpec, body: Buffer, endMark: Buffer): Promise<Timing> {
  return new Promise((resolve) => {
    let status = 0;
    let first = 0n;
    let last: Buffer | null = null;
    const t0 = process.hrtime.bigint();
    pool.dispatch(
      spec.method === 'GET'
        ? { origin: spec.origin, path: spec.path, method: 'GET', headers: spec.headers }
        : { origin: spec.origin, path: spec.path, method: 'POST', headers: spec.headers, body },
      {
        onRequestStart() {},
        onResponseStart(_c, statusCode) {
          status = statusCode;
        },
        onResponseData(_c, chunk) {
          if (first === 0n) first = process.hrtime.bigint();
          last = chunk;
        },
        onResponseEnd() {
          const end = process.hrtime.bigint();
          const totalUs = Number(end - t0) / 1000;
          const ttfbUs = first === 0n ? totalUs : Number(first - t0) / 1000;
          let ok = status >= 200 && status < 300;
          let error: string | undefined;
          if (!ok) error = `HTTP ${status}: ${(last as Buffer | null)?.toString('utf8').slice(0, 300) ?? ''}`;
          else if (spec.stream) {
            const tail = last as Buffer | null;
            if (!tail || tail.lastIndexOf(endMark) < 0) {
              ok = false;
              error = `stream did not end with ${spec.streamEnd ?? DONE}: ${tail?.toString('utf8').slice(-300) ?? '(empty)'}`;
            }
          }
          resolve({ ok, error, ttfbUs, totalUs });
        },
        onResponseError(_c, err) {
          const totalUs = Number(process.hrtime.bigint() - t0) / 1000;
          resolve({ ok: false, error: err.message, ttfbUs: totalUs, totalUs });
        },
      },
    );
  });
}

/** Runs `concurrency` closed loops for `ms`; records into the sinks when given. */
async function phase(
  pool: Pool,
  spec: LoadSpec,
  body: Buffer,
  ms: number,
  sink: { total: Samples; ttfb: Samples; errors: { n: number; first: string | null } } | null,
): Promise<number> {
  const start = process.hrtime.bigint();
  const end = start + BigInt(Math.round(ms * 1e6));
  const streamEnd = Buffer.from(spec.streamEnd ?? DONE);
  const worker = async () => {
    while (process.hrtime.bigint() < end) {
      const t = await once(pool, spec, body, streamEnd);
      if (!sink) continue;
      if (t.ok) {
        sink.total.push(t.totalUs);
        sink.ttfb.push(t.ttfbUs);
      } else {
        sink.errors.n++;
        sink.errors.first ??= t.error ?? 'unknown error';
      }
    }
  };
  await Promise.all(Array.from({ length: spec.concurrency }, worker));
  return Number(process.hrtime.bigint() - start) / 1e6;
}

export function assertLoopback(origin: string): void {
  const host = new URL(origin).hostname;
  if (!/^127\.\d+\.\d+\.\d+$/.test(host) && host !== 'localhost' && host !== '[::1]') {
    throw new Error(`the load generator only sends traffic to loopback addresses, not ${host}`);
  }
}

/**
 * Warm-up (discarded), then the measured window. `BENCH_LOADGEN=wrk` drives whole answers with wrk
 * instead (loadgen-wrk.ts: less CPU a request on a machine the generator shares); streams stay here.
 */
export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  assertLoopback(spec.origin);
  if (process.env.BENCH_LOADGEN === 'wrk' && !spec.stream) return runWrk(spec);
  const pool = new Pool(spec.origin, {
    connections: spec.concurrency,
    pipelining: 1,
    keepAliveTimeout: 60_000,
    keepAliveMaxTimeout: 60_000,
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
  });
  const body = Buffer.from(spec.body);
  try {
    if (spec.warmupMs > 0) await phase(pool, spec, body, spec.warmupMs, null);
    const sink = {
      total: new Samples(),
      ttfb: new Samples(),
      errors: { n: 0, first: null as string | null },
    };
    const durationMs = await phase(pool, spec, body, spec.durationMs, sink);
    const samples = { total: sink.total.values(), ttfb: sink.ttfb.values() };
    const total = summarize(samples.total);
    return {
      concurrency: spec.concurrency,
      requests: total.count,
      errors: sink.errors.n,
      firstError: sink.errors.first,
      durationMs: Math.round(durationMs),
      rps: Math.round((total.count / durationMs) * 1000),
      total,
      ttfb: summarize(samples.ttfb),
      samples,
    };
  } finally {
    await pool.close();
  }
}
