import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';

/**
 * Which operations of the installed `@openrouter/sdk` Gatehouse serves, read from the SDK itself:
 * each operation's method and path (its `funcs/` modules) against the gateway's own API document.
 * Every operation is served unless it is in OUT_OF_SCOPE — the list docs/clients.md gives — so an
 * SDK update that adds an operation fails here until it is served or documented as not.
 */

/** Operations Gatehouse does not serve, by the SDK's function name (docs/clients.md#openroutersdk). */
const OUT_OF_SCOPE = new Set([
  // OAuth (OpenRouter's sign-in for third-party apps) and SCIM.
  'oAuthExchangeAuthCodeForAPIKey',
  'oAuthCreateAuthCode',
  'oAuthListOauthJwks',
  'oAuthCreateOauthToken',
  'scimCreate',
  'scimListMappings',
  'scimDelete',
  'scimRead',
  'scimUpdate',
  'scimListGroups',
  'scimCreateSyncJob',
  'scimGetSyncJob',
  // OpenRouter's own data and products.
  'benchmarksGetBenchmarks',
  'datasetsGetAppRankings',
  'datasetsGetRankingsDaily',
  'datasetsGetSessionCost',
  'classificationsGetTaskClassifications',
  'containersListContainerFiles',
  'containersGetContainerFile',
  'containersDownloadContainerFileContent',
  'containersPromoteContainerFile',
  'alphaDecisionsCreate',
  'systemOneCreate',
]);

interface Operation {
  name: string;
  method: string;
  path: string;
}

/** The SDK's HTTP operations: one `funcs/<name>.js` module each (helpers without a request are skipped). */
function sdkOperations(): Operation[] {
  const require = createRequire(import.meta.url);
  const funcs = join(dirname(require.resolve('@openrouter/sdk/package.json')), 'esm', 'funcs');
  const ops: Operation[] = [];
  for (const file of readdirSync(funcs).filter((f) => f.endsWith('.js'))) {
    const src = readFileSync(join(funcs, file), 'utf8');
    const path = /pathToFunc\("([^"]+)"\)/.exec(src)?.[1];
    const method = /method: "([A-Z]+)"/.exec(src)?.[1];
    if (path && method) ops.push({ name: file.replace(/\.js$/, ''), method, path });
  }
  return ops;
}

/** `/byok/{id}` and `/byok/{whatever}` are one route. */
const shape = (method: string, path: string) => `${method} ${path.replace(/\{[^}]+\}/g, '{}')}`;

describe('@openrouter/sdk operations served', () => {
  let gw: TestGateway;
  let served: Set<string>;
  beforeAll(async () => {
    gw = await startTestGateway('sqlite');
    const doc = (await (await fetch(`${gw.url}/api/v1/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    served = new Set(
      Object.entries(doc.paths).flatMap(([path, ops]) =>
        Object.keys(ops).map((m) => shape(m.toUpperCase(), path)),
      ),
    );
  });
  afterAll(() => gw?.stop());

  it('serves every operation of the SDK but the documented ones', () => {
    const ops = sdkOperations();
    expect(ops.length).toBeGreaterThan(100);
    const unserved = ops.filter((op) => !served.has(shape(op.method, op.path))).map((op) => op.name);
    expect(unserved.sort()).toEqual([...OUT_OF_SCOPE].sort());
  });

  it('documents the same list in docs/clients.md', () => {
    const doc = readFileSync(new URL('../docs/clients.md', import.meta.url), 'utf8');
    const section = doc.slice(doc.indexOf('Not served (404)'));
    // Each out-of-scope family is named there by its SDK namespace.
    for (const family of ['oAuth', 'scim', 'benchmarks', 'datasets'])
      expect(section).toContain(`\`${family}`);
    for (const family of ['classifications', 'containers', 'alpha.decisions', 'systemOne'])
      expect(section).toContain(`\`${family}\``);
  });
});
