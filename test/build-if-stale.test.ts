/** `npm start` rebuilds only what changed: the staleness rule of scripts/build-if-stale.mjs. */
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module script (npm start runs it without a compiler)
import { staleParts } from '../scripts/build-if-stale.mjs';

const root = mkdtempSync(join(tmpdir(), 'gatehouse-stale-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const at = (path: string, seconds: number) => {
  const p = join(root, path);
  mkdirSync(join(p, '..'), { recursive: true });
  writeFileSync(p, '');
  utimesSync(p, seconds, seconds);
};

describe('build-if-stale', () => {
  it('builds both on a fresh clone, nothing once built, and what a change touches after', () => {
    at('src/cli.ts', 100);
    at('console/src/main.tsx', 100);
    at('package.json', 100);
    expect(staleParts(root)).toEqual({ server: true, console: true });
    at('dist/cli.js', 200);
    at('dist/console/index.html', 200);
    expect(staleParts(root)).toEqual({ server: false, console: false });
    // A console page changed: the console only.
    at('console/src/pages/keys.tsx', 300);
    expect(staleParts(root)).toEqual({ server: false, console: true });
    at('dist/console/index.html', 400);
    // A server source changed: both (the console's API types come from the server's routes).
    at('src/http.ts', 500);
    expect(staleParts(root)).toEqual({ server: true, console: true });
  });
});
