/**
 * Summarizes a sampling heap profile of calls (bench/inproc-ab.ts with BENCH_HEAP_PROF): bytes
 * allocated per call by function (self: allocated in the function itself; inclusive: by it and what
 * it called), and by package / file. What a busy gateway's garbage collector works through comes
 * from here; the CPU profile (bench/profile.ts) shows what collecting it costs.
 *
 *   npx tsx bench/heap-profile.ts <file.heapprofile> <calls> [top=40] [--callers=<fn>,<fn>…]
 *     (--callers: who allocates inside these functions, one frame up — for built-ins such as
 *      `join`, `Map` or `flatMap`, whose own frames say nothing)
 */
import { readFileSync } from 'node:fs';

interface Node {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: Node[];
}

const args = process.argv.slice(2);
const callers = args
  .find((a) => a.startsWith('--callers='))
  ?.slice('--callers='.length)
  .split(',');
const [file, callsArg, topArg] = args.filter((a) => !a.startsWith('--'));
if (!file || !callsArg) {
  process.stderr.write('usage: tsx bench/heap-profile.ts <file.heapprofile> <calls> [top]\n');
  process.exit(2);
}
const calls = Number(callsArg);
const top = Number(topArg ?? 40);
const { head } = JSON.parse(readFileSync(file, 'utf8')) as { head: Node };

const short = (url: string) =>
  url.replace(/^.*\/(dist|node_modules|bench)\//, '$1/').replace(/^file:\/\//, '');
const nameOf = (n: Node) =>
  `${n.callFrame.functionName || '(anonymous)'} ${short(n.callFrame.url) || '(native)'}:${n.callFrame.lineNumber + 1}`;
const packageOf = (url: string) => {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1] as string;
  if (url.includes('/dist/')) return short(url);
  return url.startsWith('node:') ? url : url ? short(url) : '(native)';
};

const self = new Map<string, number>();
const inclusive = new Map<string, number>();
const byPackage = new Map<string, number>();
const byCaller = new Map<string, number>();
let total = 0;
const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);

// Iterative walk (a deep profile would overflow recursion); a function's inclusive bytes are
// counted once per path even when it recurses.
function walk(root: Node): void {
  const onPath = new Map<string, number>();
  const stack: { node: Node; parent: Node | null; sum: number; child: number }[] = [
    { node: root, parent: null, sum: root.selfSize, child: 0 },
  ];
  enter(root, null);
  while (stack.length) {
    const top = stack[stack.length - 1] as (typeof stack)[number];
    const next = top.node.children[top.child++];
    if (next) {
      enter(next, top.node);
      stack.push({ node: next, parent: top.node, sum: next.selfSize, child: 0 });
      continue;
    }
    stack.pop();
    const k = nameOf(top.node);
    const depth = (onPath.get(k) ?? 1) - 1;
    if (depth === 0) {
      onPath.delete(k);
      add(inclusive, k, top.sum);
    } else onPath.set(k, depth);
    const up = stack[stack.length - 1];
    if (up) up.sum += top.sum;
  }

  function enter(n: Node, parent: Node | null): void {
    const k = nameOf(n);
    onPath.set(k, (onPath.get(k) ?? 0) + 1);
    total += n.selfSize;
    add(self, k, n.selfSize);
    add(byPackage, packageOf(n.callFrame.url), n.selfSize);
    if (parent && callers?.includes(n.callFrame.functionName) && n.selfSize > 0)
      add(byCaller, `${k}  ←  ${nameOf(parent)}`, n.selfSize);
  }
}
walk(head);

const show = (title: string, m: Map<string, number>, n = top) => {
  process.stdout.write(`\n## ${title}\n`);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, n))
    process.stdout.write(`${(v / calls).toFixed(0).padStart(8)} B  ${k}\n`);
};
process.stdout.write(`${file}: ${(total / calls).toFixed(0)} bytes allocated per call (sampled)\n`);
show('self bytes per call, by package / file', byPackage, 25);
show('self bytes per call, by function', self);
show('inclusive bytes per call, by function', inclusive);
if (callers) show(`allocations in ${callers.join(', ')}, by caller`, byCaller);
