import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { findModel, loadCatalog } from '../routing/catalog.js';
import { DiscoveryLoop, listServerModels } from './refresh.js';

const log = {
  warned: [] as object[],
  info() {},
  warn(obj: object) {
    this.warned.push(obj);
  },
};
const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
  log.warned = [];
});

/** A server whose `GET /v1/models` fails `failures` times, then lists `ids` (`bare`: as a top-level array). */
async function server(ids: string[], failures = 0, bare = false) {
  let calls = 0;
  const headers: string[] = [];
  const s = createServer((req, res) => {
    calls++;
    headers.push(String(req.headers.authorization));
    if (calls <= failures) {
      res.statusCode = 503;
      res.end('down');
      return;
    }
    res.setHeader('content-type', 'application/json');
    const list = [...ids.map((id) => ({ id })), { id: 42 }, null];
    res.end(JSON.stringify(bare ? list : { data: list }));
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  closers.push(() => s.close());
  return { url: `http://127.0.0.1:${(s.address() as AddressInfo).port}/v1`, headers };
}

function catalogFor(baseUrl: string) {
  const path = join(mkdtempSync(join(tmpdir(), 'discovery-')), 'c.json');
  writeFileSync(
    path,
    JSON.stringify({
      providers: [
        { slug: 'local', kind: 'openai-compatible', base_url: baseUrl, api_key: 'sk-local-secret' },
      ],
    }),
  );
  const env = { GATEHOUSE_CONFIG: path };
  return { catalog: loadCatalog(env), env };
}

describe('model discovery', () => {
  it("reads a server's model ids with its key, skipping malformed entries", async () => {
    const s = await server(['a', 'b']);
    const { catalog } = catalogFor(s.url);
    expect(await listServerModels(catalog.providers.get('local')!)).toEqual(['a', 'b']);
    expect(s.headers).toEqual(['Bearer sk-local-secret']);
  });

  it('reads a bare list of models too (as Together answers)', async () => {
    const s = await server(['meta-llama/Llama-3.3-70B-Instruct-Turbo'], 0, true);
    const { catalog } = catalogFor(s.url);
    expect(await listServerModels(catalog.providers.get('local')!)).toEqual([
      'meta-llama/Llama-3.3-70B-Instruct-Turbo',
    ]);
  });

  it('retries a failing server until it answers, then lists its models, logging no secret', async () => {
    const s = await server(['qwen3:8b'], 2);
    const { catalog, env } = catalogFor(s.url);
    const loop = new DiscoveryLoop({ catalog, env, log }, 60_000, 10);
    closers.push(() => loop.stop());
    loop.start();
    for (let i = 0; i < 200 && !catalog.models.has('local/qwen3:8b'); i++)
      await new Promise((r) => setTimeout(r, 10));
    expect(catalog.models.has('local/qwen3:8b')).toBe(true);
    expect(findModel(catalog, 'local/qwen3:8b')).toMatchObject({
      priced: false,
      endpoints: [{ provider: 'local', upstreamModel: 'qwen3:8b' }],
    });
    expect(log.warned).toHaveLength(2);
    expect(JSON.stringify(log.warned)).not.toContain('sk-local-secret');
    expect(log.warned[0]).toMatchObject({ provider: 'local', error: 'GET /models answered 503' });
  });
});
