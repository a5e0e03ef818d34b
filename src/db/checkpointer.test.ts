import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from './connection.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Commits ~4 MB (about 1,000 WAL pages: below the writer's own checkpoint threshold of 10,000). */
function write4MB(sqlite: NonNullable<ReturnType<typeof openDatabase>['sqlite']>) {
  sqlite.exec('create table if not exists blobs (b text)');
  const insert = sqlite.prepare('insert into blobs values (?)');
  sqlite.transaction(() => {
    for (let i = 0; i < 1000; i++) insert.run(`${i}`.padEnd(4000, 'x'));
  })();
}

/** A fresh SQLite file in a temp dir (removed after the test). */
function tempDatabase(backgroundCheckpoints: boolean) {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-checkpoint-'));
  dirs.push(dir);
  const path = join(dir, 'g.db');
  return { path, handle: openDatabase(`sqlite:${path}`, { backgroundCheckpoints }) };
}

async function dbFileSizeAfter(backgroundCheckpoints: boolean, waitMs: number) {
  const { path, handle } = tempDatabase(backgroundCheckpoints);
  try {
    write4MB(handle.sqlite as NonNullable<typeof handle.sqlite>);
    const deadline = Date.now() + waitMs;
    // The rows reach the database file only through a checkpoint (until then they are in the WAL).
    while (statSync(path).size < 4_000_000 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    return statSync(path).size;
  } finally {
    await handle.close();
  }
}

describe('background WAL checkpoints (SQLite)', () => {
  it('copies committed pages into the database file off the event loop', async () => {
    expect(await dbFileSizeAfter(true, 5_000)).toBeGreaterThan(4_000_000);
  });

  it('without them the pages stay in the WAL until the writer crosses its own threshold', async () => {
    expect(await dbFileSizeAfter(false, 600)).toBeLessThan(1_000_000);
  });

  it('keeps the WAL small while writes go on: it restarts once a checkpoint has caught up', async () => {
    const { path, handle } = tempDatabase(true);
    try {
      // 40 MB in 4 MB commits with pauses: without checkpoints the WAL would hold all of it.
      for (let i = 0; i < 10; i++) {
        write4MB(handle.sqlite as NonNullable<typeof handle.sqlite>);
        await new Promise((r) => setTimeout(r, 400));
      }
      expect(statSync(`${path}-wal`).size).toBeLessThan(16_000_000);
      expect(statSync(path).size).toBeGreaterThan(36_000_000);
    } finally {
      await handle.close();
    }
  });
});
