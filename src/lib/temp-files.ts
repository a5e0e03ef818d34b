/**
 * Uploads too large to hold in memory (audio to transcribe, input images of the media service,
 * uploaded files until their form is read) go
 * to a temp directory per request, removed when the request ends. A process killed mid-request
 * cannot remove its own: each directory's name carries the process id (`gatehouse-audio-<pid>-…`),
 * so the next Gatehouse process started on the machine recognises the directories of processes
 * that no longer run and removes them (`sweepOrphanedTempFiles`).
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type TempKind = 'audio' | 'media' | 'files';

/** `gatehouse-<kind>-<pid>-<random>`; names without a pid are an earlier version's. */
const NAME = /^gatehouse-(audio|media|files)-(?:(\d+)-)?/;
/** An earlier version's directories (no pid in the name) are left this long, then removed. */
const UNNAMED_TTL_MS = 24 * 60 * 60 * 1000;

/** A request's temp directory, created on first use; `cleanup()` removes it and everything in it. */
export class TempFiles {
  private made: Promise<string> | null = null;

  constructor(private readonly kind: TempKind) {}

  /** The directory (made now if it was not). */
  dir(): Promise<string> {
    // Read per request, not once per process: TMPDIR decides, as for any temp file.
    this.made ??= mkdtemp(join(tmpdir(), `gatehouse-${this.kind}-${process.pid}-`));
    return this.made;
  }

  /** A new file name in the directory. */
  async path(): Promise<string> {
    return join(await this.dir(), randomUUID());
  }

  async cleanup(): Promise<void> {
    const made = this.made;
    this.made = null;
    if (made) await rm(await made, { recursive: true, force: true }).catch(() => {});
  }
}

/** Whether a process with this id runs (one of another user counts: it cannot be signalled). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the temp directories of Gatehouse processes that no longer run (a pid reused since only
 * delays its directory to a later start), and an earlier version's after a day. Returns how many.
 * Never throws: a directory it cannot read or remove is left.
 */
export async function sweepOrphanedTempFiles(dir = tmpdir(), now = Date.now()): Promise<number> {
  const names = await readdir(dir).catch(() => [] as string[]);
  let removed = 0;
  for (const name of names) {
    const m = NAME.exec(name);
    if (!m) continue;
    const path = join(dir, name);
    if (m[2] !== undefined) {
      const pid = Number(m[2]);
      if (pid === process.pid || running(pid)) continue;
    } else {
      const mtime = await stat(path).then(
        (s) => s.mtimeMs,
        () => now,
      );
      if (now - mtime < UNNAMED_TTL_MS) continue;
    }
    if (
      await rm(path, { recursive: true, force: true }).then(
        () => true,
        () => false,
      )
    )
      removed++;
  }
  return removed;
}

/** `sweepOrphanedTempFiles` in the background, logging what it removed; for a process's start. */
export function sweepOrphanedTempFilesLater(log: { info(obj: object, msg: string): void }): void {
  void sweepOrphanedTempFiles().then((removed) => {
    if (removed > 0)
      log.info({ removed }, 'removed the temp uploads of Gatehouse processes that no longer run');
  });
}
