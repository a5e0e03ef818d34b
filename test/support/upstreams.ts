import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestGateway } from './gateway.js';
import { type MockUpstream, startMockUpstream } from './mock-upstream.js';

/**
 * One mock upstream behind four configured providers (OpenAI, Anthropic, Gemini and an
 * OpenAI-compatible server, told apart by their base-URL prefix), and a GATEHOUSE_CONFIG catalog:
 * `test/gpt` (openai), `test/claude` (anthropic), `test/gemini` (google), `test/multi` (openai,
 * then groq: for fallbacks), `test/embed` (openai embeddings), and any `extraModels` (catalog
 * entries on these providers, e.g. with cache prices). The Anthropic provider is not asked for its
 * models' limits unless `anthropicLimits` (suites count the requests reaching the mock; the limits
 * have their own tests).
 */
export async function startUpstreams(
  extraModels: object[] = [],
  opts: { anthropicLimits?: boolean } = {},
): Promise<{ mock: MockUpstream; env: Record<string, string> }> {
  const mock = await startMockUpstream();
  const price = { prompt: 1, completion: 2 };
  const config = {
    providers: [
      {
        slug: 'openai',
        kind: 'openai',
        base_url: `${mock.url}/openai/v1`,
        api_key: 'sk-operator-openai-0000',
        // This mock speaks no batch API (test/support/mock-batches.ts does): batches run on the worker.
        native_batches: false,
      },
      {
        slug: 'anthropic',
        kind: 'anthropic',
        base_url: `${mock.url}/anthropic`,
        api_key: 'sk-operator-anthropic-00',
        native_batches: false,
        discover_models: opts.anthropicLimits ?? false,
      },
      {
        slug: 'google-ai-studio',
        kind: 'google',
        base_url: `${mock.url}/google/v1beta`,
        api_key: 'g-operator-key-0000000',
      },
      {
        slug: 'groq',
        kind: 'openai-compatible',
        base_url: `${mock.url}/groq/v1`,
        api_key: 'gsk-operator-00000000',
        zdr: true,
      },
    ],
    models: [
      { id: 'test/gpt', endpoints: [{ provider: 'openai', upstream_model: 'gpt-x', pricing: price }] },
      {
        id: 'test/claude',
        endpoints: [{ provider: 'anthropic', upstream_model: 'claude-x', pricing: price }],
      },
      {
        id: 'test/gemini',
        endpoints: [{ provider: 'google-ai-studio', upstream_model: 'gemini-x', pricing: price }],
      },
      {
        id: 'test/multi',
        endpoints: [
          { provider: 'openai', upstream_model: 'gpt-multi', pricing: price },
          { provider: 'groq', upstream_model: 'llama-multi', pricing: { prompt: 0.5, completion: 1 } },
        ],
      },
      {
        id: 'test/embed',
        kind: 'embeddings',
        endpoints: [{ provider: 'openai', upstream_model: 'emb-x', pricing: price }],
      },
      ...extraModels,
    ],
  };
  const file = join(mkdtempSync(join(tmpdir(), 'gatehouse-config-')), 'gatehouse.json');
  writeFileSync(file, JSON.stringify(config));
  return { mock, env: { GATEHOUSE_CONFIG: file } };
}

/**
 * A test gateway (SQLite, default settings plus `env`) whose catalog is startUpstreams' providers
 * and models, with the mock behind them; `stop` ends both.
 */
export async function gatewayWithUpstreams(env: Record<string, string> = {}) {
  const up = await startUpstreams();
  const gw = await startTestGateway('sqlite', { env: { ...up.env, ...env } });
  const stop = async () => {
    await gw.stop();
    await up.mock.close();
  };
  return { gw, mock: up.mock, stop };
}
