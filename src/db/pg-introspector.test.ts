import { randomBytes } from 'node:crypto';
import { type Kysely, PostgresIntrospector } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresUrl } from '../../test/support/gateway.js';
import { type DbHandle, openDatabase } from './connection.js';
import { migrateToLatest } from './migrate.js';

/** Other applications' schemas come and go on a shared database while Gatehouse starts. */
describe.skipIf(!postgresUrl)('PostgreSQL introspection on a shared database', () => {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const other = `t_${randomBytes(6).toString('hex')}`;
  let admin: pg.Client;
  let handle: DbHandle;

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: postgresUrl as string });
    await admin.connect();
    await admin.query(`create schema ${schema}`);
    await admin.query(`create schema ${other}`);
    await admin.query(`create table ${other}.theirs (id int)`);
    handle = openDatabase(postgresUrl as string, { schema });
  });
  afterAll(async () => {
    await handle?.close();
    await admin.query(`drop schema if exists ${schema} cascade`);
    await admin.query(`drop schema if exists ${other} cascade`);
    await admin.end();
  });

  /** Creates and drops schemas with a table in each, as fast as it can, until `stop` is set. */
  async function churn(stop: { done: boolean }): Promise<number> {
    const c = new pg.Client({ connectionString: postgresUrl as string });
    await c.connect();
    let n = 0;
    try {
      while (!stop.done) {
        const s = `t_churn_${randomBytes(6).toString('hex')}`;
        await c.query(`create schema ${s}; create table ${s}.x (id int)`);
        await c.query(`drop schema ${s} cascade`);
        n++;
      }
    } finally {
      await c.end();
    }
    return n;
  }

  it('lists only the tables of its search path', async () => {
    await migrateToLatest(handle);
    const tables = await handle.db.introspection.getTables();
    expect(tables.every((t) => t.schema === schema)).toBe(true);
    expect(tables.map((t) => t.name)).toEqual(expect.arrayContaining(['api_keys', 'batches']));
    expect(tables.some((t) => t.name === 'theirs')).toBe(false);
  });

  it('starts (migrates) while other schemas are dropped around it', async () => {
    const stop = { done: false };
    const churning = churn(stop);
    const errors: unknown[] = [];
    try {
      for (let i = 0; i < 40; i++) await migrateToLatest(handle).catch((e) => errors.push(e));
    } finally {
      stop.done = true;
    }
    expect(await churning).toBeGreaterThan(0);
    expect(errors).toEqual([]);
  });

  it('(the reason) Kysely’s own introspector fails under the same churn', async () => {
    const own = new PostgresIntrospector(handle.db as unknown as Kysely<unknown>);
    const stop = { done: false };
    const churning = churn(stop);
    let failures = 0;
    try {
      for (let i = 0; i < 200 && failures === 0; i++)
        await own.getTables({ withInternalKyselyTables: true }).catch(() => failures++);
    } finally {
      stop.done = true;
    }
    await churning;
    expect(failures).toBeGreaterThan(0);
  });
});
