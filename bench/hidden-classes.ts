/**
 * Which object literals with a spread make a new hidden class (V8 map) on every call: on Node 20's
 * V8, `{ ...a, k: v }` with a key `a` lacks does once its code is optimized — ~0.5 µs a key,
 * garbage, and every later read of the object megamorphic (src/lib/objects.ts, NOTES §32).
 *
 * Copies `dist/` to `bench/.base/hidden-classes/dist`, wraps every outermost object literal that
 * holds a spread in a probe that counts its results whose map (hidden class) it has not seen
 * before, then makes warm calls in process (bench/inproc-ab.ts --measure: Chat Completions and
 * Messages, on their lanes and translated, whole and streamed) and lists the literals that made a
 * new map at least once in ten calls, with how often per call.
 *
 *   npm run build:server && npx tsx bench/hidden-classes.ts [calls=6000]
 *
 * A literal whose input takes a few shapes makes a few maps and is not listed.
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

/**
 * The probe, preloaded with --allow-natives-syntax: per literal, the results with a map not seen
 * before among its first eight (a literal whose input takes a few shapes settles on a few maps; one
 * that makes a map per call never does), written at exit.
 */
const PROBE = `
import { writeFileSync } from 'node:fs';
const seen = new Map(), fresh = new Map();
globalThis.__probe = (id, o) => {
  const maps = seen.get(id) ?? [];
  if (!maps.some((m) => %HaveSameMap(m, o))) {
    if (maps.length < 8) maps.push(o);
    seen.set(id, maps);
    fresh.set(id, (fresh.get(id) ?? 0) + 1);
  }
  return o;
};
process.on('exit', () => writeFileSync(process.env.PROBE_OUT, JSON.stringify([...fresh])));
`;

const run = promisify(execFile);
const sites = instrument();
const dir = mkdtempSync(join(tmpdir(), 'hidden-classes-'));
const probe = join(dir, 'probe.mjs');
writeFileSync(probe, PROBE);
const mock = await startMockUpstream();
try {
  for (const [call, translated] of [
    ['chat', '0'],
    ['messages', '0'],
    ['chat', '1'],
    ['messages', '1'],
  ] as const)
    for (const stream of ['0', '1']) {
      const out = join(dir, `${call}-${translated}-${stream}.json`);
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
          env: {
            ...process.env,
            BENCH_CALL: call,
            BENCH_TRANSLATED: translated,
            BENCH_STREAM: stream,
            PROBE_OUT: out,
          },
          maxBuffer: 1 << 24,
        },
      );
      const changed = JSON.parse(readFileSync(out, 'utf8')) as [number, number][];
      const rows = changed
        .map(([id, n]) => [n / (CALLS + WARM_UP), sites[id]] as const)
        .filter(([perCall]) => perCall >= 0.1)
        .sort((a, b) => b[0] - a[0]);
      const what = `${call}${translated === '1' ? ' translated' : ' lane'}${stream === '1' ? ', streamed' : ''}`;
      process.stdout.write(`\n${what}: ${rows.length} literal(s)\n`);
      for (const [perCall, site] of rows) process.stdout.write(`  ${perCall.toFixed(2)} a call  ${site}\n`);
    }
} finally {
  await mock.close();
  rmSync(dir, { recursive: true, force: true });
}
