/**
 * Summarises a V8 CPU profile (`node --cpu-prof`, e.g. from `BENCH_CPU_PROF=<dir> npm run bench`):
 * self time by function and by package / source file, and inclusive time of the functions that
 * matter for the gateway's hot path.
 *
 *   npx tsx bench/profile.ts <file.cpuprofile> [top=30] [--skip=<seconds of start-up to leave out>]
 *     [--callers=<function name>]  (the call paths, 5 frames up, that spend self time in it)
 *     (also: time by the innermost Gatehouse file on the stack — what each part of a call costs)
 *     [--window=<from>-<to>]  (only samples between these CLOCK_MONOTONIC times in µs — the clock of
 *       the profile's timestamps and of process.hrtime() — as bench/batches.ts logs for each phase)
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  startTime: number;
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

const args = process.argv.slice(2);
const skipArg = args.find((a) => a.startsWith('--skip='));
const callersArg = args.find((a) => a.startsWith('--callers='))?.slice('--callers='.length);
const [file, topArg] = args.filter((a) => !a.startsWith('--'));
if (!file) {
  process.stderr.write('usage: tsx bench/profile.ts <file.cpuprofile> [top]\n');
  process.exit(2);
}
const top = Number(topArg ?? 30);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const skipUs = skipArg ? Number(skipArg.slice('--skip='.length)) * 1e6 : 0;
const windowArg = args.find((a) => a.startsWith('--window='))?.slice('--window='.length);
const [fromUs, toUs] = windowArg ? windowArg.split('-').map(Number) : [-Infinity, Infinity];
const self = new Map<number, number>();
let total = 0;
let at = 0;
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas[i] ?? 0;
  at += dt;
  if (at < skipUs) return;
  const abs = profile.startTime + at;
  if (abs < (fromUs as number) || abs > (toUs as number)) return;
  self.set(id, (self.get(id) ?? 0) + dt);
  total += dt;
});

const where = (n: Node) => {
  const url = n.callFrame.url.replace(/^file:\/\//, '');
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1] as string;
  if (url.includes('/dist/')) return url.slice(url.indexOf('/dist/') + 1);
  return url || '(native)';
};
const label = (n: Node) =>
  `${n.callFrame.functionName || '(anonymous)'} ${where(n)}${n.callFrame.url ? `:${n.callFrame.lineNumber + 1}` : ''}`;

/**
 * The innermost Gatehouse source file on the stack (`dist/…`, not its packages), or the package
 * running the sample when there is none (undici's socket work, Fastify's request handling): which
 * part of Gatehouse a package's time is spent for (the budget of a call, NOTES.md §10).
 */
const owner = (id: number) => {
  let pkg: string | null = null;
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const w = where(byId.get(cur) as Node);
    if (w.startsWith('dist/')) return w;
    if (pkg === null && w !== '(native)' && !w.startsWith('node:')) pkg = `${w} (no Gatehouse frame)`;
  }
  return pkg ?? '(runtime)';
};

const callers = new Map<string, number>();
const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
const selfByFn = new Map<string, number>();
const selfByPlace = new Map<string, number>();
const inclusive = new Map<string, number>();
const byOwner = new Map<string, number>();
for (const [id, t] of self) {
  const n = byId.get(id) as Node;
  const fn = n.callFrame.functionName;
  if (fn !== '(idle)') add(byOwner, fn === '(garbage collector)' ? '(garbage collector)' : owner(id), t);
  add(selfByFn, label(n), t);
  add(selfByPlace, where(n), t);
  if (callersArg && n.callFrame.functionName === callersArg) {
    const path: string[] = [];
    for (let cur = parent.get(id), i = 0; cur !== undefined && i < 5; cur = parent.get(cur), i++)
      path.push(label(byId.get(cur) as Node));
    add(callers, path.join(' < '), t);
  }
  // Inclusive: each distinct label on the stack once.
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const l = label(byId.get(cur) as Node);
    if (!seen.has(l)) {
      seen.add(l);
      add(inclusive, l, t);
    }
  }
}

const pct = (t: number) => `${((t / total) * 100).toFixed(1).padStart(5)}%`;
const print = (title: string, m: Map<string, number>, n: number) => {
  process.stdout.write(`\n## ${title}\n`);
  for (const [k, t] of [...m].sort((a, b) => b[1] - a[1]).slice(0, n))
    process.stdout.write(`${pct(t)}  ${k}\n`);
};
process.stdout.write(`${file}: ${(total / 1e6).toFixed(2)} s sampled\n`);
print('self time by package / file', selfByPlace, top);
print('self time by function', selfByFn, top);
print('inclusive time by function', inclusive, top);
print('time by innermost Gatehouse file (idle left out; shares of all samples)', byOwner, top);
if (callersArg) print(`callers of ${callersArg}`, callers, top);
