import { spawnSync } from 'node:child_process';
import { mkdirSync, rmdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');

/**
 * Brings dist/ up to date as `npm start` does (scripts/build-if-stale.mjs: the server and the
 * console, each only when its sources changed). Test files run in parallel and the console build
 * empties dist/console first: this takes the lock directory the console's browser tests build
 * under (test/console/browser.ts), so one file builds while the others wait. `withBuild` runs
 * before the lock is let go: what reads the whole build (npm pack) sees no other file's rebuild.
 */
export async function ensureBuilt(env: NodeJS.ProcessEnv, withBuild?: () => void): Promise<void> {
  const lock = join(ROOT, 'dist/.console-build.lock');
  mkdirSync(join(ROOT, 'dist'), { recursive: true });
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // Another file is building (a lock over 5 minutes old is left over from a killed run).
      const since = statSync(lock, { throwIfNoEntry: false })?.mtimeMs;
      if (since !== undefined && Date.now() - since > 300_000) rmdirSync(lock);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  try {
    // Without NODE_ENV=test (vitest's), which would make Vite bundle React's development build.
    const run = spawnSync('node', ['scripts/build-if-stale.mjs'], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...env, NODE_ENV: 'production' },
    });
    if (run.status !== 0) throw new Error(`the build failed:\n${run.stdout}\n${run.stderr}`);
    withBuild?.();
  } finally {
    rmdirSync(lock);
  }
}
