/**
 * Gatehouse as real child processes (`serve`, `worker`) for crash and multi-process tests: spawn
 * them on a shared database, wait until they are ready, SIGKILL / SIGTERM them, and always kill
 * whatever is left (`killAll`, from afterEach/afterAll).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { ADMIN_TOKEN, type DbKind, postgresUrl } from './gateway.js';
import { auditProcessOutput, registerMasterKey } from './secrets-audit.js';

const ROOT = resolve(import.meta.dirname, '../..');

/** A port nobody listens on right now (127.0.0.1). */
export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => done(port));
    });
  });
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Thrown from a `waitFor` condition: gives up at once instead of polling on. */
export class GiveUp extends Error {}

/**
 * Polls `fn` until it returns a truthy value (returned), or throws after `timeoutMs`. Errors `fn`
 * throws are retried (a server still starting), except `GiveUp`.
 */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | null | undefined | false> | T | null | undefined | false,
  { timeoutMs = 20_000, everyMs = 50 } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      if (err instanceof GiveUp) throw err;
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`,
      );
    await sleep(everyMs);
  }
}

// ---------------------------------------------------------------------------------------------
// The database the processes share

export interface SharedDatabase {
  kind: DbKind;
  /** DATABASE_URL for the processes. */
  url: string;
  /** PostgreSQL: the schema this database lives in (search_path of `url`). */
  schema?: string;
  dataDir: string;
  /** Reads the database directly (`?` placeholders). */
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  drop(): Promise<void>;
}

/**
 * A fresh database for a set of processes: a temp SQLite file, or a new PostgreSQL schema selected
 * through the URL (`?options=-c search_path=<schema>`), which is how a deployment puts Gatehouse in
 * a schema of its own. The processes migrate it themselves when they start — several at once, as
 * in production (the migration takes a lock on both databases; see src/db/migrate.ts).
 */
export async function sharedDatabase(kind: DbKind): Promise<SharedDatabase> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-proc-'));
  if (kind === 'sqlite') {
    const file = join(dataDir, 'g.db');
    let conn: SQLite.Database | null = null;
    return {
      kind,
      url: `sqlite:${file}`,
      dataDir,
      query: async <T>(text: string, params: unknown[] = []) => {
        conn ??= new SQLite(file, { fileMustExist: true });
        return conn.prepare(text).all(...params) as T[];
      },
      drop: async () => {
        conn?.close();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  }
  if (!postgresUrl) throw new Error('postgres requested without TEST_DATABASE_URL');
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: postgresUrl });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  const sep = postgresUrl.includes('?') ? '&' : '?';
  const url = `${postgresUrl}${sep}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  // The test's own reads go through the same URL (so they also prove pg applies its options).
  const reader = new pg.Client({ connectionString: url });
  await reader.connect();
  return {
    kind,
    url,
    schema,
    dataDir,
    query: async <T>(text: string, params: unknown[] = []) => {
      let n = 0;
      const res = await reader.query(
        text.replace(/\?/g, () => `$${++n}`),
        params,
      );
      return res.rows as T[];
    },
    drop: async () => {
      await reader.end().catch(() => {});
      await admin.query(`drop schema if exists ${schema} cascade`).catch(() => {});
      await admin.end().catch(() => {});
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Processes

export interface Keys {
  apiKey: string;
  managementKey: string;
  masterKey: string;
}

export const newKeys = (): Keys => {
  const keys = {
    apiKey: `sk-gh-v1-${randomBytes(32).toString('hex')}`,
    managementKey: `sk-gh-v1-${randomBytes(32).toString('hex')}`,
    masterKey: randomBytes(32).toString('hex'),
  };
  registerMasterKey(keys.masterKey);
  return keys;
};

export interface GatehouseProcess {
  name: string;
  child: ChildProcess;
  /** `http://127.0.0.1:<port>` (serve only). */
  url: string;
  /** Resolves when the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  hasExited(): boolean;
  /** The last 64 KB of its stdout and stderr. */
  output(): string;
  kill(signal: NodeJS.Signals): void;
}

const live = new Set<GatehouseProcess>();
// A safety net for when the test process itself goes away without its hooks running.
process.once('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

/** The environment a process gets: ours without Gatehouse's settings (nor provider keys), plus `env`. */
function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(GATEHOUSE_|DATABASE_URL$|REDIS_URL$|PORT$|HOST$|LOG_LEVEL$)|_API_KEY$|_BASE_URL$/.test(k))
      continue;
    base[k] = v;
  }
  return { ...base, ...env };
}

/**
 * Spawns `gatehouse <command>` (`node --import tsx src/cli.ts`) on `db` with `keys` and `env`.
 * `serve` gets a free port and resolves once /health answers; `worker` (at LOG_LEVEL=info) once it
 * logged that it started.
 */
export async function startProcess(
  command: 'serve' | 'worker',
  opts: {
    name: string;
    db: SharedDatabase;
    keys: Keys;
    env?: Record<string, string>;
    readyMs?: number;
    /** Arguments after the command (e.g. `--workers 2`). */
    args?: string[];
  },
): Promise<GatehouseProcess> {
  const port = command === 'serve' ? await freePort() : 0;
  const env = childEnv({
    HOST: '127.0.0.1',
    PORT: String(port),
    DATABASE_URL: opts.db.url,
    GATEHOUSE_DATA_DIR: opts.db.dataDir,
    GATEHOUSE_MASTER_KEY: opts.keys.masterKey,
    GATEHOUSE_BOOTSTRAP_API_KEY: opts.keys.apiKey,
    GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY: opts.keys.managementKey,
    GATEHOUSE_ADMIN_TOKEN: ADMIN_TOKEN,
    LOG_LEVEL: command === 'worker' ? 'info' : 'warn',
    // These tests are about the gateway; several run at once and would contend for the media port.
    GATEHOUSE_MEDIA: 'off',
    // Several gateways run at once: each its own free /metrics port.
    GATEHOUSE_METRICS_PORT: '0',
    ...opts.env,
  });
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', command, ...(opts.args ?? [])], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const append = (chunk: Buffer) => {
    auditProcessOutput(opts.name, chunk);
    out += chunk.toString('utf8');
    if (out.length > 65_536) out = out.slice(-65_536);
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  let done = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.once('exit', (code, signal) => {
      done = true;
      r({ code, signal });
    }),
  );
  const p: GatehouseProcess = {
    name: opts.name,
    child,
    url: `http://127.0.0.1:${port}`,
    exited,
    hasExited: () => done,
    output: () => out,
    kill: (signal) => {
      if (!done && child.pid) process.kill(child.pid, signal);
    },
  };
  live.add(p);
  void exited.then(() => live.delete(p));

  const ready = async () => {
    if (command === 'worker') return out.includes('batch worker started');
    const res = await fetch(`${p.url}/health`).catch(() => null);
    return res?.status === 200;
  };
  try {
    await waitFor(
      `${opts.name} to be ready`,
      async () => {
        if (done) throw new GiveUp(`${opts.name} exited before it was ready`);
        return ready();
      },
      { timeoutMs: opts.readyMs ?? 25_000, everyMs: 50 },
    );
  } catch (err) {
    p.kill('SIGKILL');
    throw new Error(`${opts.name} did not start: ${String(err)}\n--- output ---\n${out}`);
  }
  return p;
}

/** SIGKILLs a process and waits until it is gone. */
export async function killHard(p: GatehouseProcess): Promise<void> {
  p.kill('SIGKILL');
  await p.exited;
}

/** SIGKILLs every process started here that still runs (afterEach / afterAll). */
export async function killAll(): Promise<void> {
  await Promise.all([...live].map((p) => killHard(p)));
}

/** The worker ids a `worker` process logged (`batch worker started` carries it). */
export function workerIdOf(p: GatehouseProcess): string | null {
  for (const line of p.output().split('\n')) {
    if (!line.includes('batch worker started')) continue;
    try {
      return (JSON.parse(line) as { worker?: string }).worker ?? null;
    } catch {}
  }
  return null;
}
