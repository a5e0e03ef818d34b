import { existsSync, realpathSync } from 'node:fs';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';

/** A file tool's refusal: its message becomes the tool result. */
export class FileRefusal extends Error {
  override name = 'FileRefusal';
}

const READ_CAP = 64 * 1024;
const WRITE_CAP = 1024 * 1024;

/**
 * The intern's working directory as its file tools see it: every path is relative to it, nothing
 * outside it (`..`, absolute paths elsewhere, symlinks leading out) is reachable, and the
 * runtime's own entries (sessions, config) are hidden.
 */
export class Workspace {
  private readonly realRoot: string;

  constructor(
    readonly root: string,
    private readonly hidden: readonly string[],
  ) {
    this.realRoot = realpathSync(root);
  }

  /** The absolute path of `p` inside the working directory, or a FileRefusal. */
  resolve(p: unknown): string {
    if (typeof p !== 'string' || p.length === 0) throw new FileRefusal('path must be a non-empty string');
    if (p.includes('\0')) throw new FileRefusal('path must not contain NUL characters');
    const abs = resolve(this.root, p);
    this.assertInside(relative(this.root, abs), p);
    // Symlinks: the nearest existing ancestor (or the file itself) must resolve inside the root.
    let probe = abs;
    while (!existsSync(probe)) probe = dirname(probe);
    const real = realpathSync(probe);
    this.assertInside(relative(this.realRoot, real), p);
    return abs;
  }

  private assertInside(rel: string, p: string): void {
    if (rel === '') return;
    if (rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel))
      throw new FileRefusal(`Refused: ${p} is outside the working directory`);
    const first = rel.split(sep)[0] ?? '';
    if (this.hidden.includes(first)) throw new FileRefusal(`Refused: ${p} is not accessible`);
  }

  async read(p: unknown): Promise<string> {
    const abs = this.resolve(p);
    const info = await stat(abs).catch(() => null);
    if (!info) throw new FileRefusal(`No such file: ${String(p)}`);
    if (!info.isFile()) throw new FileRefusal(`${String(p)} is not a file`);
    const buf = await readFile(abs);
    if (buf.length <= READ_CAP) return buf.toString('utf8');
    return `${buf.subarray(0, READ_CAP).toString('utf8')}\n[… truncated: ${buf.length} bytes in all]`;
  }

  async write(p: unknown, content: unknown): Promise<number> {
    if (typeof content !== 'string') throw new FileRefusal('content must be a string');
    const bytes = Buffer.byteLength(content);
    if (bytes > WRITE_CAP) throw new FileRefusal(`content is larger than ${WRITE_CAP} bytes`);
    const abs = this.resolve(p);
    if (abs === this.root) throw new FileRefusal('path names the working directory itself');
    await mkdir(dirname(abs), { recursive: true });
    // The directories just made are inside the root; the file itself is checked again (a symlink).
    this.resolve(p);
    await writeFile(abs, content);
    return bytes;
  }

  async list(p: unknown = '.'): Promise<string[]> {
    const abs = this.resolve(p === undefined || p === null || p === '' ? '.' : p);
    const entries = await readdir(abs, { withFileTypes: true }).catch(() => {
      throw new FileRefusal(`No such directory: ${String(p ?? '.')}`);
    });
    const atRoot = abs === this.root;
    return entries
      .filter((e) => !(atRoot && this.hidden.includes(e.name)))
      .map((e) => (e.isDirectory() ? `${e.name}/` : e.name))
      .sort();
  }

  /** A path as the intern names it (relative to the working directory). */
  display(abs: string): string {
    return relative(this.root, abs) || '.';
  }

  join(...parts: string[]): string {
    return join(this.root, ...parts);
  }
}
