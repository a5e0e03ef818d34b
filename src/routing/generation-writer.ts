import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { type GenerationWriter, SQLITE_GROUP_COMMIT } from './accounting.js';

/** The thread's code (CommonJS, evaluated): better-sqlite3 is required by its resolved path. */
const THREAD = `
const { workerData, parentPort } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path);
db.pragma('synchronous = NORMAL');
db.pragma('foreign_keys = ON');
db.pragma('busy_timeout = 5000');
const sql = workerData.sql;
const generations = db.prepare(sql.generations);
const usageEvents = db.prepare(sql.usageEvents);
const hours = db.prepare(sql.hours);
const columns = sql.generationColumns;
const commit = db.transaction((v) => {
  for (const line of v.generations.split('\\n')) {
    const row = JSON.parse(line);
    generations.run(columns.map((c) => row[c] ?? null));
  }
  for (const row of v.usageEvents) usageEvents.run(row);
  for (const row of v.hours) hours.run(row);
});
parentPort.on('message', (m) => {
  if (m.stop) {
    db.close();
    parentPort.close();
    return;
  }
  try {
    commit(m.values);
    parentPort.postMessage({ id: m.id });
  } catch (err) {
    parentPort.postMessage({ id: m.id, error: String((err && err.message) || err), code: err && err.code });
  }
});
`;

const driver = createRequire(import.meta.url).resolve('better-sqlite3');

/**
 * Runs the accountant's group commits on SQLite on a thread of its own, with its own connection to
 * the file. The inserts (a generation row and its nine index entries, a usage event, the hourly
 * rollup's cells) were ~10 % of a call's CPU on the event loop; here the loop hands over the rows'
 * journal lines (one string) with the usage events' and rollup cells' values. The file already
 * has other writers (`serve --workers`, the batch worker, the checkpointer): every transaction on
 * it is `BEGIN IMMEDIATE` (db/connection.ts), so a commit here makes the loop's writes wait for the
 * lock rather than fail on a stale snapshot.
 */
export function startGenerationWriter(path: string, onError: (message: string) => void): GenerationWriter {
  const worker = new Worker(THREAD, {
    eval: true,
    workerData: { path, driver, sql: SQLITE_GROUP_COMMIT },
    // One connection and the batch in flight (≤ 500 rows).
    resourceLimits: { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 16 },
  });
  // Never what keeps a process alive: the accountant's close() writes what is queued first.
  worker.unref();
  const pending = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();
  let nextId = 0;
  let alive = true;
  const failAll = (message: string) => {
    alive = false;
    for (const p of pending.values()) p.reject(new Error(message));
    pending.clear();
  };
  worker.on('message', (m: { id: number; error?: string; code?: string }) => {
    const p = pending.get(m.id);
    pending.delete(m.id);
    if (!p) return;
    if (m.error === undefined) return p.resolve();
    p.reject(Object.assign(new Error(m.error), m.code ? { code: m.code } : {}));
  });
  worker.on('error', (err) => {
    onError(err.message);
    failAll(`generation writer failed: ${err.message}`);
  });
  const exited = new Promise<void>((resolve) =>
    worker.once('exit', () => {
      failAll('generation writer stopped');
      resolve();
    }),
  );
  let stopping: Promise<void> | null = null;
  return {
    get alive() {
      return alive;
    },
    write(values) {
      if (!alive) return Promise.reject(new Error('generation writer stopped'));
      const id = nextId++;
      return new Promise<void>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        // A write in flight keeps the process alive until it is answered.
        worker.ref();
        worker.postMessage({ id, values });
      }).finally(() => {
        if (pending.size === 0) worker.unref();
      });
    },
    stop() {
      stopping ??= new Promise<void>((resolve) => {
        void exited.then(resolve);
        // Held until it has exited: an unref'd thread would let a process with nothing else left
        // to do end in the middle of its shutdown.
        worker.ref();
        worker.postMessage({ stop: true });
        // A thread that does not answer (stuck on a dead disk) is ended anyway.
        setTimeout(() => void worker.terminate(), 2_000).unref();
      });
      return stopping;
    },
  };
}
