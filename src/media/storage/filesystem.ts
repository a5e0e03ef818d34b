/**
 * The default object store: files under a directory (`<data dir>/objects`), written atomically
 * (temp file + rename), served back by the media service under `/files/<key>` — only keys shaped as
 * the service names its outputs, and only regular files inside the store's real directory (not a
 * link, nor reached through a linked directory leading elsewhere).
 */

import { randomUUID } from 'node:crypto';
import { createReadStream, type ReadStream } from 'node:fs';
import { lstat, mkdir, realpath, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, extname, join, resolve, sep } from 'node:path';
import { isObjectKey } from '../object-keys.js';
import { MediaError, type ObjectStore } from '../types.js';

const KEY = /^[A-Za-z0-9_.-]+(?:\/[A-Za-z0-9_.-]+)*$/;

/** Whether `key` is a safe store key: [A-Za-z0-9/_.-], relative, no empty, `.` or `..` segments. */
export function isValidKey(key: string): boolean {
  if (key.length === 0 || key.length > 512 || !KEY.test(key)) return false;
  return key.split('/').every((s) => s !== '.' && s !== '..');
}

const CONTENT_TYPES: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.webp': 'image/webp',
  '.gif': 'image/gif',
  '.avif': 'image/avif',
  '.mp4': 'video/mp4',
  '.webm': 'video/webm',
  '.mov': 'video/quicktime',
  '.json': 'application/json',
};

export function contentTypeFor(key: string): string {
  return CONTENT_TYPES[extname(key).toLowerCase()] ?? 'application/octet-stream';
}

export interface StoredFile {
  stream: ReadStream;
  size: number;
  etag: string;
  contentType: string;
}

/** A full disk (or quota) is the client's 507 `storage_full`, not an internal error. */
function storeError(err: unknown): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT')
    return new MediaError(
      507,
      'storage_full',
      'The object store has no space left; the output was not stored',
    );
  return err;
}

export class FilesystemStore implements ObjectStore {
  readonly root: string;

  /** `publicUrl` is the service's base URL; it may be set once the port is known (`setPublicUrl`). */
  constructor(
    dir: string,
    private publicUrl: string,
  ) {
    this.root = resolve(dir);
  }

  private realRootPromise: Promise<string> | null = null;

  /** The store directory's real path (links resolved), once it exists. */
  private realRoot(): Promise<string> {
    this.realRootPromise ??= realpath(this.root).catch((err) => {
      this.realRootPromise = null; // not created yet: ask again next time
      throw err;
    });
    return this.realRootPromise;
  }

  setPublicUrl(url: string): void {
    this.publicUrl = url.replace(/\/+$/, '');
  }

  urlFor(key: string): string {
    return `${this.publicUrl}/files/${key}`;
  }

  private pathFor(key: string): string | null {
    if (!isValidKey(key)) return null;
    const path = resolve(this.root, key);
    return path.startsWith(this.root + sep) ? path : null;
  }

  async put(key: string, data: Buffer, _contentType: string): Promise<{ url: string; key: string }> {
    const path = this.pathFor(key);
    if (!path) throw new Error(`Invalid object key: ${JSON.stringify(key)}`);
    const tmp = join(dirname(path), `.${randomUUID()}.tmp`);
    try {
      await mkdir(dirname(path), { recursive: true });
      await writeFile(tmp, data, { flag: 'wx' });
      await rename(tmp, path);
    } catch (err) {
      // No partial file stays behind: the temp file is what a failed write leaves.
      await rm(tmp, { force: true }).catch(() => {});
      throw storeError(err);
    }
    return { url: this.urlFor(key), key };
  }

  async delete(key: string): Promise<void> {
    const path = this.pathFor(key);
    if (path) await rm(path, { force: true });
  }

  /**
   * The stored output at `key`, opened for streaming; null when the key is invalid, absent, or not
   * a name the media service gives its outputs (`isObjectKey`): other files in the directory are
   * never served.
   */
  async open(key: string): Promise<StoredFile | null> {
    if (!isObjectKey(key)) return null;
    const path = this.pathFor(key);
    if (!path) return null;
    try {
      const s = await lstat(path); // a symbolic link is not a regular file: not served
      if (!s.isFile()) return null;
      // Nor is a file reached through a linked directory that leads out of the store.
      const real = await realpath(path);
      if (!real.startsWith((await this.realRoot()) + sep)) return null;
      return {
        stream: createReadStream(path),
        size: s.size,
        etag: `"${s.size.toString(16)}-${Math.floor(s.mtimeMs).toString(16)}"`,
        contentType: contentTypeFor(key),
      };
    } catch {
      return null;
    }
  }
}
