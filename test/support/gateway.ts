import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { type Config, loadConfig } from '../../src/config.js';
import { type Gateway, startGateway } from '../../src/gateway.js';
import type { AppOptions } from '../../src/http.js';
import { auditLogStream, registerMasterKey, registerSecret } from './secrets-audit.js';

export type DbKind = 'sqlite' | 'postgres';

/** The PostgreSQL server for store tests (CI sets TEST_DATABASE_URL; see .ci/run). */
export const postgresUrl = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL || null;

/** The databases every store test runs on. PostgreSQL is skipped loudly when no URL is set. */
export const databases: DbKind[] = postgresUrl ? ['sqlite', 'postgres'] : ['sqlite'];
if (!postgresUrl) {
  console.warn(
    '\n!!! PostgreSQL tests SKIPPED: set TEST_DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/test) to run them !!!\n',
  );
}

export const ADMIN_TOKEN = `test-admin-${randomBytes(16).toString('hex')}`;

export interface TestGateway extends Gateway {
  db: DbKind;
  managementKey: string;
  apiKey: string;
  organizationId: string;
  ownerUserId: string;
  /** Stops the server; `keepData` leaves the database for a restart test. */
  stop(opts?: { keepData?: boolean }): Promise<void>;
  /** Starts a new server process-equivalent on the same data (restart persistence). */
  restart(): Promise<TestGateway>;
}

interface Storage {
  dataDir: string;
  env: Record<string, string>;
  schema?: string;
  drop(): Promise<void>;
}

async function makeStorage(db: DbKind): Promise<Storage> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-test-'));
  if (db === 'sqlite') {
    return { dataDir, env: {}, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
  if (!postgresUrl) throw new Error('postgres requested without TEST_DATABASE_URL');
  // One schema per test server keeps parallel test files apart on one database.
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  await client.query(`create schema ${schema}`);
  await client.end();
  return {
    dataDir,
    env: { DATABASE_URL: postgresUrl },
    schema,
    drop: async () => {
      const c = new pg.Client({ connectionString: postgresUrl });
      await c.connect();
      await c.query(`drop schema if exists ${schema} cascade`);
      await c.end();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Starts a real gateway on a loopback port with its own database (a temp SQLite file, or a fresh
 * PostgreSQL schema), known bootstrap keys and the operator API enabled.
 */
export async function startTestGateway(
  db: DbKind = 'sqlite',
  opts: {
    env?: Record<string, string>;
    logStream?: NodeJS.WritableStream;
    /** Sees every route of the app as it is registered. */
    onRoute?: AppOptions['onRoute'];
  } = {},
): Promise<TestGateway> {
  const storage = await makeStorage(db);
  const managementKey = `sk-gh-v1-${randomBytes(32).toString('hex')}`;
  const apiKey = `sk-gh-v1-${randomBytes(32).toString('hex')}`;
  const env = {
    PORT: '0',
    HOST: '127.0.0.1',
    GATEHOUSE_DATA_DIR: storage.dataDir,
    GATEHOUSE_ADMIN_TOKEN: ADMIN_TOKEN,
    // Suites probe admin routes with many wrong tokens from one address; the throttle has its own tests.
    GATEHOUSE_ADMIN_AUTH_FAILURES: '100000',
    // Suites write vaults far faster than any member may; the write limit has its own tests.
    GATEHOUSE_VAULT_WRITE_LIMIT: '100000',
    // Suites script upstream failures call after call, and reuse one conversation's opening across
    // tests: the credential breakers and sticky routing have their own tests (credentials.test.ts).
    GATEHOUSE_CREDENTIAL_BREAKER: 'off',
    GATEHOUSE_STICKY_ROUTING: 'off',
    // /metrics on a free loopback port of its own (TestGateway.metricsUrl).
    GATEHOUSE_METRICS_PORT: '0',
    GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY: managementKey,
    GATEHOUSE_BOOTSTRAP_API_KEY: apiKey,
    LOG_LEVEL: 'warn',
    ...storage.env,
    ...opts.env,
  };
  const boot = async (): Promise<TestGateway> => {
    let config: Config;
    try {
      config = loadConfig(env);
    } catch (err) {
      await storage.drop(); // a refused configuration leaves no temp directory behind
      throw err;
    }
    registerSecret('api-key', apiKey);
    registerSecret('api-key', managementKey);
    registerMasterKey(config.masterKey);
    // Under the secrets audit every gateway logs at info into the audit (and to the test's stream).
    const audit = auditLogStream();
    const stream = opts.logStream && audit ? tee(opts.logStream, audit) : (opts.logStream ?? audit);
    const log = stream ? { level: 'info', stream } : { level: process.env.TEST_LOG_LEVEL ?? 'silent' };
    let g: Awaited<ReturnType<typeof startGateway>>;
    try {
      g = await startGateway(config, { schema: storage.schema, log, onRoute: opts.onRoute });
    } catch (err) {
      await storage.drop(); // leave no half-made schema behind
      throw err;
    }
    return {
      ...g,
      db,
      managementKey,
      apiKey,
      organizationId: g.bootstrap.organizationId,
      ownerUserId: g.bootstrap.ownerUserId,
      stop: async ({ keepData = false } = {}) => {
        await g.close();
        if (!keepData) await storage.drop();
      },
      restart: async () => {
        await g.close();
        return boot();
      },
    };
  };
  return boot();
}

/** A log destination writing to both streams. */
const tee = (a: NodeJS.WritableStream, b: { write(chunk: string): boolean }) => ({
  write(chunk: string) {
    a.write(chunk);
    b.write(chunk);
    return true;
  },
});
