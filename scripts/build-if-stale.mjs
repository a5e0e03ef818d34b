#!/usr/bin/env node
/**
 * `npm start`'s build step: builds the server (tsc) and the console (Vite) only when their sources
 * changed since the last build, so a restart is listening in seconds. `npm run build` always builds.
 *
 *   node scripts/build-if-stale.mjs [--check]   (--check: print what is stale, build nothing)
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The newest modification time under `paths` (files, or folders walked; node_modules skipped). */
function newest(root, paths) {
  let max = 0;
  const visit = (p) => {
    const st = statSync(p, { throwIfNoEntry: false });
    if (!st) return;
    if (!st.isDirectory()) {
      max = Math.max(max, st.mtimeMs);
      return;
    }
    for (const name of readdirSync(p)) if (name !== 'node_modules') visit(join(p, name));
  };
  for (const p of paths) visit(join(root, p));
  return max;
}

const mtime = (p) => statSync(p, { throwIfNoEntry: false })?.mtimeMs ?? 0;

/** Which builds are older than their sources (or missing). */
export function staleParts(root) {
  const common = ['src', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json'];
  // The console's API types come from the server's routes: a server change rebuilds it too.
  const consoleInputs = [...common, 'console', 'scripts/openapi.ts'];
  return {
    server: mtime(join(root, 'dist/cli.js')) < newest(root, common),
    console: mtime(join(root, 'dist/console/index.html')) < newest(root, consoleInputs),
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const stale = staleParts(root);
  if (process.argv.includes('--check')) {
    process.stdout.write(`${JSON.stringify(stale)}\n`);
  } else {
    for (const [part, script] of [
      ['server', 'build:server'],
      ['console', 'build:console'],
    ]) {
      if (!stale[part]) continue;
      const run = spawnSync('npm', ['run', script], { cwd: root, stdio: 'inherit' });
      if (run.status !== 0) process.exit(run.status ?? 1);
    }
  }
}
