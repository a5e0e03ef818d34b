import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import type { GenerationsTable as GenerationRow } from '../db/schema.js';

/**
 * A local write-ahead journal of recorded generations. The accountant writes generations to the
 * database in group commits a few milliseconds after the response went out; a process killed
 * (SIGKILL, OOM) in between would lose calls the client was answered for — unbilled. So every row
 * is first appended to a journal file (a plain write: it survives the process, not the machine) and
 * the file is deleted once all of its rows are in the database.
 *
 * Files are segments named `usage-<pid>-<start ms>-<seq>.jsonl`: the accountant starts a new
 * segment at each flush, and deletes a segment when none of its rows is still queued. At start-up,
 * the segments of processes no longer running (on this data directory) are replayed — their rows
 * inserted where missing — and deleted.
 */
let nodeSeq = 0;
/**
 * A segment takes new rows for at least this long: rotating at every group commit (~25 ms) cost an
 * open, a close and an unlink per commit (~1 % of a call's CPU at concurrency 1). A segment is still
 * deleted as soon as it is rotated and all its rows are in the database.
 */
const SEGMENT_MS = 1000;
/** Journals open in this process (tests run several gateways in one process). */
const openHere = new Set<string>();

export class UsageJournal {
  private readonly node = `${process.pid}-${Date.now()}${nodeSeq++ % 1000}`;
  private seq = 0;
  private fd: number | null = null;
  private current = '';
  private openedAt = 0;
  /** Rows appended to each segment and not yet written to the database. */
  private readonly open = new Map<string, number>();
  private readonly segmentOf = new WeakMap<GenerationRow, string>();
  /** Lines appended in this turn of the event loop, not written yet, and when they will be. */
  private pending = '';
  private lineWrite: Promise<void> | null = null;

  constructor(
    private readonly dir: string,
    private readonly onError: (err: Error) => void = (err) =>
      process.emitWarning(`usage journal write failed: ${err.message}`),
  ) {
    mkdirSync(dir, { recursive: true });
    openHere.add(this.node);
  }

  /**
   * Appends `row`. The lines of the calls that end in one turn of the event loop are written
   * together, by one write at the end of that turn (setImmediate): the returned promise resolves
   * once this row's line has been written, and callers await it before the response is sent.
   * `line` is the row's JSON when the caller made it already (the accountant's writer thread takes
   * the same text).
   */
  append(row: GenerationRow, line: string = JSON.stringify(row)): Promise<void> {
    if (this.fd === null) {
      this.current = join(this.dir, `usage-${this.node}-${++this.seq}.jsonl`);
      this.fd = openSync(this.current, 'a', 0o600);
      this.openedAt = Date.now();
    }
    this.pending += `${line}\n`;
    this.segmentOf.set(row, this.current);
    this.open.set(this.current, (this.open.get(this.current) ?? 0) + 1);
    this.lineWrite ??= new Promise<void>((resolve) => {
      setImmediate(() => {
        this.writePending();
        resolve();
      });
    });
    return this.lineWrite;
  }

  /** Writes the buffered lines to the current segment (they all belong to it: see rotate). */
  private writePending(): void {
    this.lineWrite = null;
    if (!this.pending || this.fd === null) return;
    const text = this.pending;
    this.pending = '';
    try {
      writeSync(this.fd, text);
    } catch (err) {
      // The rows are still queued for the database; only their crash safety is lost (disk full).
      this.onError(err as Error);
    }
  }

  /**
   * Later rows go to a new segment (called as a flush starts) once the current one is SEGMENT_MS
   * old; a younger one keeps taking rows, and is deleted after a later rotation (or at close).
   */
  rotate(): void {
    if (this.fd === null || Date.now() - this.openedAt < SEGMENT_MS) return;
    this.writePending();
    closeSync(this.fd);
    this.fd = null;
    this.deleteIfDone(this.current);
  }

  /** These rows are in the database: segments left with none queued are deleted. */
  written(rows: GenerationRow[]): void {
    const touched = new Set<string>();
    for (const row of rows) {
      const seg = this.segmentOf.get(row);
      if (!seg) continue;
      this.segmentOf.delete(row);
      this.open.set(seg, (this.open.get(seg) ?? 1) - 1);
      touched.add(seg);
    }
    for (const seg of touched) this.deleteIfDone(seg);
  }

  private deleteIfDone(seg: string): void {
    if ((this.open.get(seg) ?? 0) > 0 || (seg === this.current && this.fd !== null)) return;
    this.open.delete(seg);
    try {
      unlinkSync(seg);
    } catch {}
  }

  close(): void {
    openHere.delete(this.node);
    this.writePending();
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
    this.deleteIfDone(this.current);
  }

  /** Segments left by processes that are not running any more, with their rows. */
  leftovers(): { path: string; rows: GenerationRow[] }[] {
    if (!existsSync(this.dir)) return [];
    const out: { path: string; rows: GenerationRow[] }[] = [];
    for (const name of readdirSync(this.dir)) {
      const m = /^usage-(\d+)-(\d+)-\d+\.jsonl$/.exec(name);
      if (!m || openHere.has(`${m[1]}-${m[2]}`) || alive(Number(m[1]))) continue;
      const path = join(this.dir, name);
      const rows: GenerationRow[] = [];
      for (const line of readFileSync(path, 'utf8').split('\n')) {
        if (!line) continue;
        try {
          rows.push(JSON.parse(line) as GenerationRow);
        } catch {
          // A line cut by the kill itself: that call's response was never sent.
        }
      }
      out.push({ path, rows });
    }
    return out;
  }

  /** Deletes a replayed segment. */
  discard(path: string): void {
    try {
      unlinkSync(path);
    } catch {}
  }
}

/** Whether a process with this id runs (ours excluded: a segment of ours is of an earlier start). */
function alive(pid: number): boolean {
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
