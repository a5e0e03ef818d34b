import { readFileSync, writeFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';

/**
 * Memory of a benchmarked process, from /proc (Linux): RSS now and its peak, the peak reset, and
 * RSS sampled on a worker thread. Shared by bench/batches.ts and bench/media.ts.
 */

const MB = 1e6;

export interface ProcMem {
  /** Resident set size now, kB (KiB). */
  rssKiB: number;
  /** Peak RSS since start (or since the last clear_refs 5), kB. */
  hwmKiB: number;
}

export function procMem(pid: number): ProcMem {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssKiB: kib('VmRSS'), hwmKiB: kib('VmHWM') };
}

/** Resets VmHWM to the current RSS (Linux ≥ 4.0); false where the kernel refuses. */
export function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** kB (KiB) as MB (10⁶ bytes). */
export const mbOfKiB = (kib: number) => (kib * 1024) / MB;

/**
 * Samples a process's VmRSS every `everyMs` on a worker thread, so the sampling cadence does not
 * depend on this process's event loop (busy generating load).
 */
const SAMPLER = `
const { parentPort, workerData } = require('node:worker_threads');
const { readFileSync } = require('node:fs');
const { pid, everyMs } = workerData;
const t0 = performance.now();
const samples = [];
let last = t0;
let maxGapMs = 0;
const take = () => {
  const now = performance.now();
  maxGapMs = Math.max(maxGapMs, now - last);
  last = now;
  try {
    const m = /^VmRSS:\\s+(\\d+) kB/m.exec(readFileSync('/proc/' + pid + '/status', 'utf8'));
    if (m) samples.push([now - t0, Number(m[1])]);
  } catch {}
};
take();
const timer = setInterval(take, everyMs);
parentPort.on('message', () => {
  clearInterval(timer);
  take();
  parentPort.postMessage({ samples, maxGapMs });
});
parentPort.postMessage('started');
`;

export async function sampleRss(pid: number, everyMs: number) {
  const worker = new Worker(SAMPLER, { eval: true, workerData: { pid, everyMs } });
  await new Promise<void>((done, fail) => {
    worker.once('message', () => done());
    worker.once('error', fail);
  });
  return {
    async stop() {
      const got = new Promise<{ samples: [number, number][]; maxGapMs: number }>((done, fail) => {
        worker.once('message', done);
        worker.once('error', fail);
      });
      worker.postMessage('stop');
      const { samples, maxGapMs } = await got;
      await worker.terminate();
      let peak = samples[0] ?? [0, 0];
      for (const s of samples) if (s[1] > peak[1]) peak = s;
      // At most ~150 points kept for the JSON: [ms since the upload started, RSS MB].
      const step = Math.max(1, Math.ceil(samples.length / 150));
      const series = samples
        .filter((_, i) => i % step === 0 || i === samples.length - 1)
        .map(([ms, kib]) => [Math.round(ms), Math.round(mbOfKiB(kib) * 10) / 10]);
      return { count: samples.length, maxGapMs: Math.round(maxGapMs), peakKiB: peak[1], series };
    },
  };
}
