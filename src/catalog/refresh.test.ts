import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startMockUpstream } from '../../test/support/mock-upstream.js';
import { findModel, loadCatalog } from '../routing/catalog.js';
import { listAnthropicLimits } from './anthropic-limits.js';
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

function anthropicCatalog(baseUrl: string) {
  const path = join(mkdtempSync(join(tmpdir(), 'limits-')), 'c.json');
  const anthropic = {
    slug: 'anthropic',
    kind: 'anthropic',
    base_url: baseUrl,
    api_key: 'sk-ant-limits-secret',
  };
  writeFileSync(path, JSON.stringify({ development_provider: false, providers: [anthropic] }));
  const env = { GATEHOUSE_CONFIG: path };
  return { catalog: loadCatalog(env), env };
}

describe("Anthropic's model limits", () => {
  it('reads every page of the Models API with the key and the version header', async () => {
    const mock = await startMockUpstream();
    closers.push(() => void mock.close());
    mock.models = ['claude-a-20250101', 'claude-b-20250202', 'claude-c'];
    mock.modelLimits = { 'claude-a-20250101': { max_tokens: 64000, max_input_tokens: 200000 } };
    mock.modelsPageSize = 2;
    const { catalog } = anthropicCatalog(`${mock.url}/anthropic`);
    expect(await listAnthropicLimits(catalog.providers.get('anthropic')!)).toEqual([
      { id: 'claude-a-20250101', maxOutputTokens: 64000, maxInputTokens: 200000 },
      { id: 'claude-b-20250202', maxOutputTokens: null, maxInputTokens: null },
      { id: 'claude-c', maxOutputTokens: null, maxInputTokens: null },
    ]);
    expect(mock.requests.map((r) => [r.path, r.query.after_id])).toEqual([
      ['/anthropic/v1/models', undefined],
      ['/anthropic/v1/models', 'claude-b-20250202'],
    ]);
    expect(mock.requests[0]).toMatchObject({
      format: 'anthropic-models',
      query: { limit: '1000' },
      headers: { 'x-api-key': 'sk-ant-limits-secret', 'anthropic-version': '2023-06-01' },
    });
  });

  it('a server without the Models API (404) has no limits to tell: no warning, no retry', async () => {
    let calls = 0;
    const s = createServer((_req, res) => {
      calls++;
      res.statusCode = 404;
      res.end('not found');
    });
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    closers.push(() => s.close());
    const { catalog, env } = anthropicCatalog(`http://127.0.0.1:${(s.address() as AddressInfo).port}`);
    expect(await listAnthropicLimits(catalog.providers.get('anthropic')!)).toEqual([]);
    // The loop's retry interval is 10 ms: a failure would have been asked again many times.
    const loop = new DiscoveryLoop({ catalog, env, log }, 60_000, 10);
    closers.push(() => loop.stop());
    loop.start();
    for (let i = 0; i < 50 && calls < 2; i++) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 200));
    expect(calls).toBe(2);
    expect(log.warned).toEqual([]);
  });

  it('an unreachable provider is logged without its key and asked again; the catalog stays as it was', async () => {
    const s = createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    const port = (s.address() as AddressInfo).port;
    await new Promise((r) => s.close(r));
    const { catalog, env } = anthropicCatalog(`http://127.0.0.1:${port}`);
    const loop = new DiscoveryLoop({ catalog, env, log }, 60_000, 10);
    closers.push(() => loop.stop());
    loop.start();
    for (let i = 0; i < 500 && log.warned.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    expect(log.warned.length).toBeGreaterThanOrEqual(2);
    expect(log.warned[0]).toMatchObject({ provider: 'anthropic', error: expect.any(String) });
    expect(JSON.stringify(log.warned)).not.toContain('sk-ant-limits-secret');
    expect(catalog.models.get('anthropic/claude-sonnet-4.5')?.endpoints[0]?.maxCompletionTokens).toBeNull();
  });
});
