/**
 * The source's layering, checked: the HTTP toolkit (src/server) and the shared helpers (src/lib)
 * import no domain, and no module imports itself back through others — type-only imports included,
 * since a cycle of types still ties two files together for a reader.
 */
import { relative, resolve } from 'node:path';
import { type DependencyTree, globFiles, parseCircular, parseDependencyTree } from 'dpdm';
import { beforeAll, describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '..');
let tree: DependencyTree;

beforeAll(async () => {
  const files = await globFiles('src/**/*.ts', root);
  tree = await parseDependencyTree(files, {
    context: root,
    tsconfig: resolve(root, 'tsconfig.json'),
    transform: false,
    skipDynamicImports: false,
  });
}, 120_000);

/** The project files a source file imports, as paths under src/. */
function importsOf(file: string): string[] {
  return (tree[file] ?? [])
    .map((d) => d.id)
    .filter((id): id is string => id?.startsWith('src/') ?? false)
    .map((id) => relative(root, resolve(root, id)));
}

describe('architecture', () => {
  it('has no import cycles', () => {
    const cycles = parseCircular(tree).map((c) => c.join(' -> '));
    expect(cycles).toEqual([]);
  });

  it.each([
    ['src/server/', ['src/server/', 'src/lib/']],
    ['src/lib/', ['src/lib/']],
  ])('%s imports only %j', (layer, allowed) => {
    const offending = Object.keys(tree)
      .filter((f) => f.startsWith(layer))
      .flatMap((f) => importsOf(f).map((to) => `${f} -> ${to}`))
      .filter((edge) => !allowed.some((a) => edge.split(' -> ')[1]?.startsWith(a)));
    expect(offending).toEqual([]);
  });
});
