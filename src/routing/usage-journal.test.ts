/**
 * The usage journal's segments: a segment takes rows for about a second (rotating at every group
 * commit cost an open, a close and an unlink each time), and is deleted once rotated with all its
 * rows in the database — never while a row of it is still queued.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { GenerationRow } from './accounting.js';
import { UsageJournal } from './usage-journal.js';

const row = (id: string) => ({ id }) as unknown as GenerationRow;

describe('usage journal segments', () => {
  let dir: string;
  let journal: UsageJournal;
  const files = () => readdirSync(dir).filter((f) => f.startsWith('usage-'));
  const lines = () => files().flatMap((f) => readFileSync(join(dir, f), 'utf8').trim().split('\n'));

  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-journal-'));
    journal = new UsageJournal(dir);
  });
  afterEach(() => {
    journal.close();
    vi.useRealTimers();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps a young segment across group commits, and deletes it after a later rotation', async () => {
    const [a, b, c] = [row('a'), row('b'), row('c')];
    await journal.append(a);
    journal.rotate(); // a group commit starts 25 ms later: same segment
    await journal.append(b);
    expect(files()).toHaveLength(1);
    expect(lines().map((l) => JSON.parse(l).id)).toEqual(['a', 'b']);
    journal.written([a, b]);
    // Written, but still the current segment: kept (a crash now replays rows already in the database, skipped).
    expect(files()).toHaveLength(1);

    vi.advanceTimersByTime(1_000);
    journal.rotate();
    expect(files()).toEqual([]);
    await journal.append(c);
    expect(lines().map((l) => JSON.parse(l).id)).toEqual(['c']);
  });

  it('never deletes a rotated segment while one of its rows is still queued', async () => {
    const [a, b] = [row('a'), row('b')];
    await journal.append(a);
    await journal.append(b);
    vi.advanceTimersByTime(1_000);
    journal.rotate();
    journal.written([a]);
    expect(lines().map((l) => JSON.parse(l).id)).toEqual(['a', 'b']);
    journal.written([b]);
    expect(files()).toEqual([]);
  });

  it('deletes the current segment at close when all its rows are written', async () => {
    const a = row('a');
    await journal.append(a);
    journal.written([a]);
    journal.close();
    expect(files()).toEqual([]);
  });
});
