/**
 * Where the filesystem store may live. Everything under its directory is reachable through
 * `/files`, which needs no authentication, so the directory must not hold (or be a parent of)
 * the gateway's own files: the data directory with `master.key`, the SQLite database, the usage
 * journal, the interns' working directories. Checked at start on real paths (symbolic links
 * resolved), so a link cannot smuggle the data directory in.
 */
import { existsSync, realpathSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';

/** The real path of `path`, resolving links in the part that exists (the rest may be created later). */
export function realPathOf(path: string): string {
  const abs = resolve(path);
  if (existsSync(abs)) return realpathSync(abs);
  const parent = dirname(abs);
  return parent === abs ? abs : join(realPathOf(parent), basename(abs));
}

/** Whether `inner` is `outer` or lies under it. */
function within(inner: string, outer: string): boolean {
  const rel = relative(outer, inner);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !rel.startsWith(sep));
}

export interface GatewayFiles {
  dataDir: string;
  /** `sqlite:<path>` or a PostgreSQL URL (nothing on disk then). */
  databaseUrl: string;
  internsDir: string;
}

/**
 * Why `storeDir` would expose the gateway's files, or null when it is safe. It may be a dedicated
 * directory inside the data directory (the default, `<data dir>/objects`), never the data
 * directory itself, one of its parents, or a directory holding the database, the journal or the
 * interns' directories.
 */
export function storeDirProblem(storeDir: string, files: GatewayFiles): string | null {
  const store = realPathOf(storeDir);
  const data = realPathOf(files.dataDir);
  const name = 'GATEHOUSE_MEDIA_STORE_DIR';
  if (within(data, store))
    return `${name} (${store}) is the data directory or contains it (${data}): /files would serve master.key and the database. Use a directory of its own, e.g. ${join(data, 'objects')}`;
  const guarded: [string, string][] = [
    ['the usage journal', join(data, 'journal')],
    ["the interns' directories", realPathOf(files.internsDir)],
  ];
  const sqlite = /^sqlite:/.test(files.databaseUrl) ? files.databaseUrl.replace(/^sqlite:(\/\/)?/, '') : null;
  if (sqlite && sqlite !== ':memory:') guarded.push(['the SQLite database', realPathOf(sqlite)]);
  for (const [what, path] of guarded)
    if (within(path, store) || within(store, path))
      return `${name} (${store}) overlaps ${what} (${path}): /files would serve it. Use a directory of its own, e.g. ${join(data, 'objects')}`;
  return null;
}
