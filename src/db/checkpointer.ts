import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * Checkpoints a SQLite file's WAL on a thread of its own. A checkpoint copies the WAL into the
 * database file and fsyncs both; left to the writing connection (`wal_autocheckpoint`), it runs
 * inside the commit that crossed the threshold, on the event loop: every 10,000 pages (40 MB of
 * usage rows, ~8 s at 1,300 calls/s on a 2-core VM) the gateway stopped answering for 100–180 ms.
 *
 * The thread opens its own connection and runs `PRAGMA wal_checkpoint(PASSIVE)` every
 * `intervalMs`: PASSIVE never waits for readers or writers (and never makes them wait), so the
 * event loop's commits go on while it copies. Once a checkpoint has copied every frame, the next
 * write transaction restarts the WAL from its beginning, so the file stays small. The writing
 * connection keeps its own `wal_autocheckpoint` as a backstop, should this thread fall behind
 * (a batch body written faster than it copies): it then finds most frames already copied.
 */
export interface Checkpointer {
  /** Stops the thread (its connection closes; the last connection to close checkpoints the rest). */
  stop(): Promise<void>;
}

/** The thread's code (CommonJS, evaluated): better-sqlite3 is required by its resolved path. */
const THREAD = `
const { workerData, parentPort } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path);
db.pragma('synchronous = NORMAL');
db.pragma('busy_timeout = 0');
let stopped = false;
const run = () => {
  if (stopped) return;
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch (err) {
    // SQLITE_BUSY: another connection checkpoints right now; the next turn catches up.
    if (err && err.code !== 'SQLITE_BUSY' && err.code !== 'SQLITE_LOCKED') parentPort.postMessage(String(err.message));
  }
  timer = setTimeout(run, workerData.intervalMs);
};
let timer = setTimeout(run, workerData.intervalMs);
parentPort.on('message', () => {
  stopped = true;
  clearTimeout(timer);
  db.close();
  parentPort.close();
});
`;

const driver = createRequire(import.meta.url).resolve('better-sqlite3');

export function startCheckpointer(
  path: string,
  opts: { intervalMs?: number; onError?: (message: string) => void } = {},
): Checkpointer {
  const worker = new Worker(THREAD, {
    eval: true,
    workerData: { path, driver, intervalMs: opts.intervalMs ?? 250 },
    // A small thread: one connection and a timer.
    resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 },
  });
  // Never what keeps a process alive; its failures only cost the backstop's checkpoints.
  worker.unref();
  worker.on('message', (m: string) => opts.onError?.(m));
  worker.on('error', (err) => opts.onError?.(err.message));
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  let stopping: Promise<void> | null = null;
  return {
    stop() {
      stopping ??= new Promise<void>((resolve) => {
        void exited.then(resolve);
        worker.postMessage('stop');
        // A thread that does not answer (stuck in a checkpoint on a dead disk) is ended anyway.
        setTimeout(() => void worker.terminate(), 2_000).unref();
      });
      return stopping;
    },
  };
}
