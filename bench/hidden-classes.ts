/**
 * Which object literals with a spread make a new hidden class (V8 map) on every call: on Node 20's
 * V8, `{ ...a, k: v }` with a key `a` lacks does once its code is optimized — ~0.5 µs a key,
 * garbage, and every later read of the object megamorphic (src/lib/objects.ts, NOTES §32).
 *
 * Copies `dist/` to `bench/.base/hidden-classes/dist`, wraps every outermost object literal that
 * holds a spread in a probe that compares its result's map with the previous result's of the same
 * literal, then makes warm calls in process (bench/inproc-ab.ts --measure: Chat Completions and
 * Messages, whole and streamed) and lists the literals whose map changed at least once in ten
 * calls, with how often per call.
 *
 *   npm run build:server && npx tsx bench/hidden-classes.ts [calls=6000]
 *
 * A literal whose input legitimately varies in shape shows too; read the count beside the code.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { startMockUpstream } from './mock-upstream.js';

const ROOT = join(import.meta.dirname, '..');
const COPY = join(ROOT, 'bench', '.base', 'hidden-classes', 'dist');
const CALLS = Number(process.argv[2] ?? 6000);
/** inproc-ab's warm-up before its measured calls: the probe counts both. */
const WARM_UP = 3000;

const jsFiles = (dir: string): string[] =>
  readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) return f === 'console' ? [] : jsFiles(p);
    return p.endsWith('.js') ? [p] : [];
  });

/** Wraps each outermost spread literal of the copy in `globalThis.__probe(id, …)`; their sources. */
function instrument(): string[] {
  rmSync(COPY, { recursive: true, force: true });
  cpSync(join(ROOT, 'dist'), COPY, { recursive: true });
  const sites: string[] = [];
  for (const file of jsFiles(COPY)) {
    const text = readFileSync(file, 'utf8');
    const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
    const found: ts.ObjectLiteralExpression[] = [];
    const visit = (node: ts.Node): void => {
      if (ts.isObjectLiteralExpression(node) && node.properties.some(ts.isSpreadAssignment)) found.push(node);
      else ts.forEachChild(node, visit);
    };
    visit(src);
    let out = text;
    for (const node of found.sort((a, b) => b.getStart() - a.getStart())) {
      const line = src.getLineAndCharacterOfPosition(node.getStart()).line + 1;
      const code = node.getText().replace(/\s+/g, ' ').slice(0, 100);
      out = `${out.slice(0, node.getStart())}globalThis.__probe(${sites.length}, ${node.getText()})${out.slice(node.getEnd())}`;
      sites.push(`${relative(COPY, file)}:${line}  ${code}`);
    }
    writeFileSync(file, out);
  }
  return sites;
}

/** The probe, preloaded with --allow-natives-syntax: map changes per literal, written at exit. */
const PROBE = `
import { writeFileSync } from 'node:fs';
const last = new Map(), changes = new Map();
globalThis.__probe = (id, o) => {
  const prev = last.get(id);
  if (prev !== undefined && !%HaveSameMap(prev, o)) changes.set(id, (changes.get(id) ?? 0) + 1);
  last.set(id, o);
  return o;
};
process.on('exit', () => writeFileSync(process.env.PROBE_OUT, JSON.stringify([...changes])));
`;

const run = promisify(execFile);
const sites = instrument();
const dir = mkdtempSync(join(tmpdir(), 'hidden-classes-'));
const probe = join(dir, 'probe.mjs');
writeFileSync(probe, PROBE);
const mock = await startMockUpstream();
try {
  for (const call of ['chat', 'messages'])
    for (const stream of ['0', '1']) {
      const out = join(dir, `${call}-${stream}.json`);
      // Asynchronously: the mock answers from this process's event loop.
      await run(
        process.execPath,
        [
          '--allow-natives-syntax',
          '--import',
          probe,
          '--import',
          'tsx',
          join(ROOT, 'bench', 'inproc-ab.ts'),
          '--measure',
          COPY,
          mock.baseUrl,
          String(CALLS),
        ],
        {
          env: { ...process.env, BENCH_CALL: call, BENCH_STREAM: stream, PROBE_OUT: out },
          maxBuffer: 1 << 24,
        },
      );
      const changed = JSON.parse(readFileSync(out, 'utf8')) as [number, number][];
      const rows = changed
        .map(([id, n]) => [n / (CALLS + WARM_UP), sites[id]] as const)
        .filter(([perCall]) => perCall >= 0.1)
        .sort((a, b) => b[0] - a[0]);
      process.stdout.write(`\n${call}${stream === '1' ? ' (streamed)' : ''}: ${rows.length} literal(s)\n`);
      for (const [perCall, site] of rows) process.stdout.write(`  ${perCall.toFixed(2)} a call  ${site}\n`);
    }
} finally {
  await mock.close();
  rmSync(dir, { recursive: true, force: true });
}
