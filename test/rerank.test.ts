import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OpenRouter } from '@openrouter/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { databases, startTestGateway, type TestGateway } from './support/gateway.js';
import { client } from './support/http.js';
import { type MockUpstream, startMockUpstream } from './support/mock-upstream.js';

/**
 * `POST /rerank` (OpenRouter's rerank) end to end: the official `@openrouter/sdk` (its response
 * validation on) and plain HTTP against a gateway whose rerank model is served by two upstreams on
 * a mock server (real sockets): a keyless vLLM and Jina, both speaking Jina's rerank API, and Cohere
 * (its `/v2/rerank`). Checked: the answer (best first, each with its document), what reached the
 * upstream, the generation's usage and cost, the guardrail, a fallback, a redacting content filter.
 */

/** $1 per million tokens and $0.002 per search on vLLM; $2 and $0.001 on Jina; $0.002 a search on Cohere. */
const VLLM = { prompt: 1, completion: 0, request: 0.002 };
const JINA = { prompt: 2, completion: 0, request: 0.001 };
const COHERE = { prompt: 0, completion: 0, request: 0.002 };

async function startUpstreams(): Promise<{ mock: MockUpstream; env: Record<string, string> }> {
  const mock = await startMockUpstream();
  const config = {
    providers: [
      { slug: 'vllm', kind: 'openai-compatible', base_url: `${mock.url}/vllm/v1`, discover_models: false },
      {
        slug: 'jina',
        kind: 'openai-compatible',
        base_url: `${mock.url}/jina/v1`,
        api_key: 'jina-operator-key-0000',
        discover_models: false,
      },
      {
        slug: 'cohere',
        kind: 'cohere',
        base_url: `${mock.url}/cohere/compatibility/v1`,
        api_key: 'co-key-0000',
      },
      { slug: 'chatty', kind: 'openai', base_url: `${mock.url}/openai/v1`, api_key: 'sk-operator-0000' },
    ],
    models: [
      {
        id: 'baai/bge-reranker',
        kind: 'rerank',
        endpoints: [
          { provider: 'vllm', upstream_model: 'BAAI/bge-reranker-v2-m3', pricing: VLLM },
          { provider: 'jina', upstream_model: 'jina-reranker-v2', pricing: JINA },
        ],
      },
      {
        id: 'cohere/rerank-v3.5',
        kind: 'rerank',
        endpoints: [{ provider: 'cohere', upstream_model: 'rerank-v3.5', pricing: COHERE }],
      },
      { id: 'test/gpt', endpoints: [{ provider: 'chatty', upstream_model: 'gpt-x' }] },
    ],
  };
  const file = join(mkdtempSync(join(tmpdir(), 'gatehouse-config-')), 'gatehouse.json');
  writeFileSync(file, JSON.stringify(config));
  return { mock, env: { GATEHOUSE_CONFIG: file } };
}

const query = 'which animal purrs?';
const documents = ['Dogs bark.', { text: 'Cats purr.' }, 'Cows moo.'];
/** A vLLM answer: out of order, without the documents. */
const scored = {
  id: 'rerank-vllm-1',
  model: 'BAAI/bge-reranker-v2-m3',
  results: [
    { index: 0, relevance_score: 0.12 },
    { index: 1, relevance_score: 0.97 },
    { index: 2, relevance_score: 0.05 },
  ],
  usage: { total_tokens: 42 },
};

describe.each(databases)('POST /rerank (%s)', (db) => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let sdk: OpenRouter;
  let call: ReturnType<typeof client>;
  beforeAll(async () => {
    const up = await startUpstreams();
    mock = up.mock;
    gw = await startTestGateway(db, { env: up.env });
    sdk = new OpenRouter({
      serverURL: `${gw.url}/api/v1`,
      apiKey: gw.apiKey,
      retryConfig: { strategy: 'none' },
    });
    call = client(gw.url, gw.apiKey);
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => mock.reset());

  const mgmt = () => client(gw.url, gw.managementKey);
  async function keyWithGuardrail(guardrail: object) {
    const key = await mgmt()('POST', '/keys', { name: `k-${Math.random()}` });
    const g = await mgmt()('POST', '/guardrails', { name: 'rerank guardrail', ...guardrail });
    expect(g.status).toBe(201);
    await mgmt()('POST', `/guardrails/${g.body.data.id}/assignments/keys`, {
      key_hashes: [key.body.data.hash],
    });
    return client(gw.url, key.body.key);
  }

  it('the OpenRouter SDK: best first with documents, the model rewritten upstream, usage and cost recorded', async () => {
    mock.enqueue({ match: { path: '/vllm/v1/rerank' }, status: 200, body: scored });
    const res = await sdk.rerank.rerank({
      requestBody: { model: 'baai/bge-reranker', query, documents, topN: 2, user: 'end-user-7' },
    });
    if (typeof res === 'string') throw new Error(`expected JSON, got ${res}`);
    expect(res.model).toBe('baai/bge-reranker');
    expect(res.provider).toBe('vllm');
    expect(res.id).toMatch(/^gen-/);
    expect(res.results).toEqual([
      { index: 1, relevanceScore: 0.97, document: { text: 'Cats purr.' } },
      { index: 0, relevanceScore: 0.12, document: { text: 'Dogs bark.' } },
    ]);
    const cost = (42 * VLLM.prompt) / 1e6 + VLLM.request;
    expect(res.usage?.totalTokens).toBe(42);
    expect(res.usage?.cost).toBeCloseTo(cost, 12);

    // What reached vLLM: Jina's shape with its own model id, nothing of Gatehouse's or the caller's own.
    expect(mock.requests).toHaveLength(1);
    const sent = mock.requests[0];
    expect(sent?.path).toBe('/vllm/v1/rerank');
    expect(sent?.body).toEqual({
      model: 'BAAI/bge-reranker-v2-m3',
      query,
      documents,
      top_n: 2,
      return_documents: false,
    });
    expect(sent?.headers.authorization).toBeUndefined();

    const gen = await sdk.generations.getGeneration({ id: res.id as string });
    expect(gen.data).toMatchObject({
      model: 'baai/bge-reranker',
      providerName: 'vllm',
      apiType: 'rerank',
      origin: 'rerank',
      tokensPrompt: 42,
      tokensCompletion: 0,
    });
    expect(gen.data.totalCost).toBeCloseTo(cost, 12);
  });

  it('plain HTTP: every document when top_n is absent, an upstream echo kept, the answer in score order', async () => {
    mock.enqueue({
      match: { path: '/vllm/v1/rerank' },
      // The mock knows no rerank route: an explicit status.
      status: 200,
      body: {
        // A server that ignores top_n and answers in input order, echoing one document.
        results: [
          { index: 0, relevance_score: 0.1, document: { text: 'Dogs bark (echo).' } },
          { index: 1, relevance_score: 0.9 },
          { index: 2, relevance_score: 0.5 },
        ],
      },
    });
    const res = await call('POST', '/rerank', { model: 'baai/bge-reranker', query, documents });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gatehouse-provider')).toBe('vllm');
    expect(res.body.results.map((r: { index: number }) => r.index)).toEqual([1, 2, 0]);
    expect(res.body.results[2].document).toEqual({ text: 'Dogs bark (echo).' });
    expect(res.body.results[1].document).toEqual({ text: 'Cows moo.' });
    // No usage reported: estimated from the texts, and flagged so.
    expect(res.body.usage.total_tokens).toBeGreaterThan(0);
    const gen = await call('GET', `/generation?id=${res.body.id}`);
    expect(gen.body.data.usage_estimated).toBe(true);
  });

  it('falls back to the second provider when the first fails', async () => {
    mock.enqueue(
      { match: { path: '/vllm/v1/rerank' }, status: 503, error: { message: 'overloaded' } },
      { match: { path: '/jina/v1/rerank' }, status: 200, body: { ...scored, usage: { total_tokens: 10 } } },
    );
    const res = await call('POST', '/rerank', { model: 'baai/bge-reranker', query, documents, top_n: 1 });
    expect(res.status).toBe(200);
    expect(res.body.provider).toBe('jina');
    expect(res.body.results).toEqual([{ index: 1, relevance_score: 0.97, document: { text: 'Cats purr.' } }]);
    expect(res.body.usage.cost).toBeCloseTo((10 * JINA.prompt) / 1e6 + JINA.request, 12);
    expect(mock.requests.map((r) => r.path)).toEqual(['/vllm/v1/rerank', '/jina/v1/rerank']);
    expect(mock.requests[1]?.body.model).toBe('jina-reranker-v2');
    expect(mock.requests[1]?.headers.authorization).toBe('Bearer jina-operator-key-0000');
    const gen = await call('GET', `/generation?id=${res.body.id}`);
    expect(gen.body.data).toMatchObject({ provider_name: 'jina', attempts: 2 });
  });

  it("an id the catalog does not list, named by its provider's slug, is a reranker by its name", async () => {
    mock.enqueue({ match: { path: '/vllm/v1/rerank' }, status: 200, body: scored });
    const res = await call('POST', '/rerank', { model: 'vllm/BAAI/bge-reranker-base', query, documents });
    expect(res.status).toBe(200);
    expect(res.body.model).toBe('vllm/BAAI/bge-reranker-base');
    expect(mock.requests[0]?.body.model).toBe('BAAI/bge-reranker-base');
    // Unpriced (GATEHOUSE_UNPRICED_MODELS=allow): served at cost 0.
    expect(res.body.usage.cost).toBe(0);
    // A chat id passed through the same way is no reranker.
    const chat = await call('POST', '/rerank', { model: 'vllm/llama-3', query, documents });
    expect(chat.status).toBe(400);
    expect(chat.body.error.message).toContain('is a chat model');
  });

  it("Cohere's /v2/rerank: its search units billed at the per-search price", async () => {
    mock.enqueue({
      match: { path: '/cohere/v2/rerank' },
      status: 200,
      body: {
        id: 'co-1',
        results: [
          { index: 2, relevance_score: 0.3 },
          { index: 1, relevance_score: 0.8 },
        ],
        meta: { billed_units: { search_units: 2 } },
      },
    });
    const res = await sdk.rerank.rerank({
      requestBody: { model: 'cohere/rerank-v3.5', query, documents, topN: 2 },
    });
    if (typeof res === 'string') throw new Error(`expected JSON, got ${res}`);
    expect(res.provider).toBe('cohere');
    expect(res.results.map((r) => [r.index, r.document.text])).toEqual([
      [1, 'Cats purr.'],
      [2, 'Cows moo.'],
    ]);
    expect(res.usage?.searchUnits).toBe(2);
    expect(res.usage?.cost).toBeCloseTo(2 * COHERE.request, 12);
    const sent = mock.requests[0];
    expect(sent?.path).toBe('/cohere/v2/rerank');
    expect(sent?.headers.authorization).toBe('Bearer co-key-0000');
    // Cohere takes strings only.
    expect(sent?.body).toEqual({
      model: 'rerank-v3.5',
      query,
      documents: ['Dogs bark.', 'Cats purr.', 'Cows moo.'],
      top_n: 2,
    });
  });

  it('bad input is a 400 in the error envelope, and nothing goes upstream', async () => {
    const cases: [object, string][] = [
      [{ model: 'baai/bge-reranker', documents }, 'query'],
      [{ model: 'baai/bge-reranker', query }, 'documents'],
      [{ model: 'baai/bge-reranker', query, documents: [] }, 'documents'],
      [{ model: 'baai/bge-reranker', query, documents: [{}] }, 'documents.0'],
      [{ model: 'baai/bge-reranker', query, documents, top_n: 0 }, 'top_n'],
      [{ model: 'baai/bge-reranker', query, documents, top_n: 1.5 }, 'top_n'],
      [{ query, documents }, 'model'],
      [{ model: 'test/gpt', query, documents }, 'test/gpt is a chat model'],
    ];
    for (const [body, names] of cases) {
      const res = await call('POST', '/rerank', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.message, JSON.stringify(body)).toContain(names);
    }
    // A rerank model on a chat endpoint is refused as well.
    const chat = await call('POST', '/chat/completions', {
      model: 'baai/bge-reranker',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(chat.status).toBe(400);
    expect(chat.body.error.message).toContain('is a rerank model');
    expect(mock.requests).toHaveLength(0);
  });

  it('a guardrail that does not allow the model: 403, nothing goes upstream', async () => {
    const limited = await keyWithGuardrail({ allowed_models: ['test/gpt'] });
    const res = await limited('POST', '/rerank', { model: 'baai/bge-reranker', query, documents });
    expect(res.status).toBe(403);
    expect(res.body.error.message).toContain('baai/bge-reranker');
    expect(mock.requests).toHaveLength(0);
  });

  it("counts against the key's own limit: once it is spent, refused (403) before any upstream", async () => {
    const key = await mgmt()('POST', '/keys', { name: 'rerank-limited', limit: 0.001 });
    const limited = client(gw.url, key.body.key);
    mock.enqueue({ match: { path: '/vllm/v1/rerank' }, status: 200, body: scored });
    const body = { model: 'baai/bge-reranker', query, documents };
    // A call alone may spend past what is left, as on every endpoint.
    expect((await limited('POST', '/rerank', body)).status).toBe(200);
    const spent = (await limited('GET', '/key')).body.data;
    expect(spent.usage).toBeCloseTo((42 * VLLM.prompt) / 1e6 + VLLM.request, 12);
    expect(spent.limit_remaining).toBe(0);
    const refused = await limited('POST', '/rerank', body);
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toMatch(/limit/i);
    expect(mock.requests).toHaveLength(1);
  });

  it('a redacting content filter rewrites the query and the documents before they go upstream', async () => {
    const filtered = await keyWithGuardrail({
      content_filters: [{ pattern: 'SECRET-\\d+', action: 'redact', label: 'codename' }],
    });
    mock.enqueue({ match: { path: '/vllm/v1/rerank' }, status: 200, body: scored });
    const res = await filtered('POST', '/rerank', {
      model: 'baai/bge-reranker',
      query: 'about SECRET-1',
      documents: ['Dogs bark.', { text: 'Cats purr at SECRET-22.' }, 'Cows moo.'],
    });
    expect(res.status).toBe(200);
    const sent = JSON.stringify(mock.requests[0]?.body);
    expect(sent).not.toContain('SECRET-');
    expect(mock.requests[0]?.body.documents[1].text).toMatch(/^Cats purr at \[REDACTED[^\]]*\]\.$/);
    // The answer's documents are what was sent.
    expect(res.body.results[0].document.text).toBe(mock.requests[0]?.body.documents[1].text);
    const gen = await filtered('GET', `/generation?id=${res.body.id}`);
    expect(gen.status).toBe(200);
  });
});
