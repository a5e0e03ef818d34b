/**
 * What the coordination of `serve --workers N` without Redis costs, alone: CPU per rate-limit check
 * made in the primary (rate-limiter-flexible's RateLimiterCluster, one IPC message each way, as the
 * workers do it), on the worker and on the primary. `npx tsx bench/workers-ipc.ts` (BENCH_OPS, 5000).
 * The cluster bus's relay of a billed call's spend costs about as much (one message to the primary,
 * one from it to each other worker).
 */
import cluster from 'node:cluster';
import { RateLimiterCluster, RateLimiterClusterMaster } from 'rate-limiter-flexible';

const OPS = Number(process.env.BENCH_OPS ?? 5000);
const cpuUs = (u: NodeJS.CpuUsage) => u.user + u.system;

if (cluster.isPrimary) {
  new RateLimiterClusterMaster();
  const worker = cluster.fork();
  const start = process.cpuUsage();
  worker.on('message', (m: { workerCpuUs?: number; wallUs?: number }) => {
    if (m.workerCpuUs === undefined || m.wallUs === undefined) return;
    const primary = cpuUs(process.cpuUsage(start)) / OPS;
    const w = m.workerCpuUs / OPS;
    process.stdout.write(
      `${OPS} checks, one at a time: worker ${w.toFixed(1)} µs CPU, primary ${primary.toFixed(1)} µs CPU, ` +
        `${(w + primary).toFixed(1)} µs CPU in all per check; ${(m.wallUs / OPS).toFixed(1)} µs wall per round trip\n`,
    );
    worker.kill();
  });
} else {
  const limiter = new RateLimiterCluster({ points: 1e9, duration: 60, keyPrefix: 'bench', timeoutMs: 5_000 });
  // The primary answers the limiter's init first.
  await limiter.consume('warm-up');
  const start = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < OPS; i++) await limiter.consume(`key-${i % 64}`);
  const wallUs = (performance.now() - t0) * 1000;
  process.send?.({ workerCpuUs: cpuUs(process.cpuUsage(start)), wallUs });
}
