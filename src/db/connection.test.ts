import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type DbHandle, openDatabase, walMode } from './connection.js';
import { migrateToLatest } from './migrate.js';

describe('SQLite transactions with another writer on the file', () => {
  let dir: string;
  let handle: DbHandle;
  let other: SQLite.Database;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-sqlite-'));
    const path = join(dir, 'db.sqlite');
    handle = openDatabase(path);
    await migrateToLatest(handle);
    // A second connection, as a `gatehouse worker` process on the same file has.
    other = new SQLite(path);
    other.pragma('busy_timeout = 5000');
  });
  afterEach(async () => {
    other.close();
    await handle.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a transaction that reads, then writes after the other writer tried to commit, succeeds (BEGIN IMMEDIATE)', async () => {
    const setting = other.prepare('insert into settings (name, value) values (?, ?)');
    await handle.db.transaction().execute(async (tx) => {
      await tx.selectFrom('settings').select('name').execute();
      // The other connection tries to commit now. After a deferred BEGIN it would succeed, and this
      // transaction's write below would then fail with SQLITE_BUSY_SNAPSHOT (no busy timeout
      // applies to a stale snapshot). After BEGIN IMMEDIATE this one holds the write lock, so the
      // other waits for it (here, with no busy timeout, it gives up at once).
      other.pragma('busy_timeout = 0');
      expect(() => setting.run('other', 'x')).toThrow(expect.objectContaining({ code: 'SQLITE_BUSY' }));
      await new Promise((r) => setTimeout(r, 10));
      await tx.insertInto('settings').values({ name: 'mine', value: 'y' }).execute();
    });
    setting.run('other', 'x'); // once this transaction committed, the other writer goes ahead
    const names = (await handle.db.selectFrom('settings').select('name').execute()).map((r) => r.name);
    expect(names).toEqual(expect.arrayContaining(['mine', 'other']));
  });
});

describe('walMode', () => {
  const busy = () => Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
  it('tries the conversion again while another connection makes it busy, then goes on', () => {
    let calls = 0;
    walMode({
      pragma: () => {
        calls++;
        if (calls < 3) throw busy();
        return 'wal';
      },
    } as never);
    expect(calls).toBe(3);
  });
  it('gives up after its wait, and at once on any other error', () => {
    expect(() =>
      walMode(
        {
          pragma: () => {
            throw busy();
          },
        } as never,
        60,
      ),
    ).toThrow('database is locked');
    let calls = 0;
    expect(() =>
      walMode({
        pragma: () => {
          calls++;
          throw Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' });
        },
      } as never),
    ).toThrow('disk I/O error');
    expect(calls).toBe(1);
  });
});
