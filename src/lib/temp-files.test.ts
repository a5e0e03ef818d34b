import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sweepOrphanedTempFiles, TempFiles } from './temp-files.js';

/** The pid of a process that has ended (a child run to completion). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(child.stdout.toString());
}

describe('temp upload directories', () => {
  let dir: string;
  let priorTmp: string | undefined;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'temp-files-test-'));
    priorTmp = process.env.TMPDIR;
    process.env.TMPDIR = dir;
  });
  afterEach(() => {
    if (priorTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = priorTmp;
    rmSync(dir, { recursive: true, force: true });
  });

  it("names a request's directory after its process, and removes it on cleanup", async () => {
    const temp = new TempFiles('audio');
    const file = await temp.path();
    writeFileSync(file, 'audio');
    expect(readdirSync(dir)).toEqual([expect.stringMatching(new RegExp(`^gatehouse-audio-${process.pid}-`))]);
    await temp.cleanup();
    expect(readdirSync(dir)).toEqual([]);
  });

  it('removes the directories of processes that no longer run, and keeps the live ones', async () => {
    const dead = join(dir, `gatehouse-media-${deadPid()}-abc123`);
    mkdirSync(dead);
    writeFileSync(join(dead, 'upload'), 'image');
    const mine = new TempFiles('audio');
    await mine.path();
    // The parent of this test process (the test runner) is running.
    const live = join(dir, `gatehouse-audio-${process.ppid}-def456`);
    mkdirSync(live);
    const unrelated = join(dir, 'gatehouse-bench-xyz');
    mkdirSync(unrelated);

    expect(await sweepOrphanedTempFiles(dir)).toBe(1);
    expect(existsSync(dead)).toBe(false);
    expect(existsSync(live)).toBe(true);
    expect(existsSync(await mine.dir())).toBe(true);
    expect(existsSync(unrelated)).toBe(true);
    await mine.cleanup();
  });

  it("removes an earlier version's directories (no pid in the name) only after a day", async () => {
    const old = join(dir, 'gatehouse-audio-Xy12ab');
    const recent = join(dir, 'gatehouse-media-Zz34cd');
    mkdirSync(old);
    mkdirSync(recent);
    const twoDaysAgo = new Date(Date.now() - 2 * 24 * 3600 * 1000);
    utimesSync(old, twoDaysAgo, twoDaysAgo);

    expect(await sweepOrphanedTempFiles(dir)).toBe(1);
    expect(existsSync(old)).toBe(false);
    expect(existsSync(recent)).toBe(true);
  });

  it('finds nothing to do in a directory that does not exist', async () => {
    expect(await sweepOrphanedTempFiles(join(dir, 'missing'))).toBe(0);
  });
});
