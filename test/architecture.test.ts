/**
 * The source's layering, checked: the HTTP toolkit (src/server) and the shared helpers (src/lib)
 * import no domain, and no module imports itself back through others — type-only imports included,
 * since a cycle of types still ties two files together for a reader. Route modules and HTTP hooks
 * receive the services they use, never the whole services bag.
 */
import { relative, resolve } from 'node:path';
import { type DependencyTree, globFiles, parseCircular, parseDependencyTree } from 'dpdm';
import ts from 'typescript';
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

/**
 * Every exported function of src/ whose first parameter is the HTTP app (`Router` or a
 * `FastifyInstance`): the route modules and the hooks installed on the app, with the type checker's
 * view of their other parameters.
 */
function registrations(program: ts.Program) {
  const checker = program.getTypeChecker();
  const found: { name: string; params: ts.Type[] }[] = [];
  const takesApp = (params: ts.NodeArray<ts.ParameterDeclaration>) =>
    /^(Router|FastifyInstance)\b/.test(params[0]?.type?.getText() ?? '');
  for (const sf of program.getSourceFiles()) {
    const file = relative(root, sf.fileName);
    if (!file.startsWith('src/') || sf.isDeclarationFile) continue;
    for (const node of sf.statements) {
      const exported =
        ts.canHaveModifiers(node) &&
        ts.getModifiers(node)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
      if (!exported) continue;
      const fns: [string, ts.SignatureDeclaration][] = [];
      if (ts.isFunctionDeclaration(node) && node.name) fns.push([node.name.text, node]);
      if (ts.isVariableStatement(node))
        for (const d of node.declarationList.declarations)
          if (ts.isIdentifier(d.name) && d.initializer && ts.isFunctionLike(d.initializer))
            fns.push([d.name.text, d.initializer as ts.SignatureDeclaration]);
      for (const [name, fn] of fns) {
        if (!takesApp(fn.parameters)) continue;
        const params = fn.parameters.slice(1).map((p) => checker.getTypeAtLocation(p));
        found.push({ name: `${file}#${name}`, params });
      }
    }
  }
  return found;
}

describe('route modules and HTTP hooks', () => {
  let program: ts.Program;
  let services: ts.Type;

  beforeAll(() => {
    const config = ts.getParsedCommandLineOfConfigFile(
      resolve(root, 'tsconfig.json'),
      {},
      {
        ...ts.sys,
        onUnRecoverableConfigFileDiagnostic: (d) => {
          throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
        },
      },
    );
    if (!config) throw new Error('tsconfig.json unreadable');
    const rootNames = config.fileNames.filter(
      (f) => relative(root, f).startsWith('src/') && !f.endsWith('.test.ts'),
    );
    program = ts.createProgram({ rootNames, options: { ...config.options, noEmit: true } });
    const checker = program.getTypeChecker();
    const module = program.getSourceFile(resolve(root, 'src/services.ts'));
    const moduleSymbol = module && checker.getSymbolAtLocation(module);
    const bag = moduleSymbol && checker.getExportsOfModule(moduleSymbol).find((s) => s.name === 'Services');
    if (!bag) throw new Error('src/services.ts exports no Services type');
    services = checker.getDeclaredTypeOfSymbol(bag);
  }, 120_000);

  it('are found: every routes file, and the hooks http.ts installs', () => {
    const names = registrations(program).map((r) => r.name);
    const routeFiles = program
      .getSourceFiles()
      .map((sf) => relative(root, sf.fileName))
      .filter((f) => f.startsWith('src/') && /routes\.ts$/.test(f));
    expect(routeFiles.length).toBeGreaterThan(20);
    expect(routeFiles.filter((f) => !names.some((n) => n.startsWith(`${f}#`)))).toEqual([]);
    expect(names).toEqual(
      expect.arrayContaining([
        'src/guardrails/routes.ts#guardrailsRoutes',
        'src/inference/routes.ts#inferenceRoutes',
        'src/interns/callback.routes.ts#runtimeCallbackRoutes',
        'src/interns/host-proxy.ts#installInternHostProxy',
        'src/audit/hook.ts#installAudit',
      ]),
    );
  });

  it('take the services they use, never the whole Services bag', () => {
    // A parameter holding every service is the bag, however it is spelled (alias, intersection …).
    const all = services.getProperties().map((p) => p.name);
    const whole = (t: ts.Type) => {
      const has = new Set(t.getProperties().map((p) => p.name));
      return all.every((name) => has.has(name));
    };
    const offending = registrations(program)
      .filter((r) => r.params.some(whole))
      .map((r) => r.name);
    expect(offending).toEqual([]);
  });
});
