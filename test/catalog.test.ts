import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OpenRouter } from '@openrouter/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';
import type { MockUpstream } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

/**
 * A local OpenAI-compatible server (as Ollama, vLLM, llama.cpp or LM Studio): lists its models at
 * `GET /v1/models` and answers chat completions naming the model it was asked for.
 */
async function startLocalServer(models: string[]): Promise<{ url: string; server: Server; asked: string[] }> {
  const asked: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      asked.push(`${req.method} ${req.url}`);
      res.setHeader('content-type', 'application/json');
      if (req.method === 'GET' && req.url === '/v1/models') {
        res.end(JSON.stringify({ object: 'list', data: models.map((id) => ({ id, object: 'model' })) }));
        return;
      }
      if (req.method === 'POST' && req.url === '/v1/chat/completions') {
        const model = JSON.parse(body).model;
        res.end(
          JSON.stringify({
            id: 'local-1',
            object: 'chat.completion',
            created: 1,
            model,
            choices: [
              { index: 0, message: { role: 'assistant', content: `local ${model}` }, finish_reason: 'stop' },
            ],
            usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
          }),
        );
        return;
      }
      res.statusCode = 404;
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, asked };
}

describe('the catalog API through the official SDK (response validation on)', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let local: Awaited<ReturnType<typeof startLocalServer>>;
  let sdk: OpenRouter;
  let configPath: string;
  let config: any;

  beforeAll(async () => {
    const up = await startUpstreams();
    mock = up.mock;
    local = await startLocalServer(['llama3.2:latest', 'nomic-embed-text']);
    configPath = up.env.GATEHOUSE_CONFIG as string;
    config = JSON.parse(readFileSync(configPath, 'utf8'));
    config.providers.push(
      { slug: 'ollama', kind: 'openai-compatible', base_url: `${local.url}/v1`, zdr: true },
      // Down: nothing listens there. The gateway starts all the same.
      { slug: 'offline', kind: 'openai-compatible', base_url: 'http://127.0.0.1:9/v1' },
    );
    writeFileSync(configPath, JSON.stringify(config));
    gw = await startTestGateway('sqlite', { env: up.env });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 10,
    });
    sdk = new OpenRouter({
      serverURL: `${gw.url}/api/v1`,
      apiKey: gw.apiKey,
      retryConfig: { strategy: 'none' },
    });
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
    await new Promise((r) => local?.server.close(r));
  });

  it('models.list: every model with the fields the client validates, paged with links and total_count', async () => {
    const res = await sdk.models.list();
    const { data, totalCount, links } = res.result;
    expect(totalCount).toBe(data.length);
    expect(links.next).toBeNull();
    const ids = data.map((m) => m.id);
    // The configured vendors' models come from the model data; the config's own models stay.
    expect(ids).toEqual(
      expect.arrayContaining(['openai/gpt-4o-mini', 'anthropic/claude-sonnet-4', 'test/gpt']),
    );
    const mini = data.find((m) => m.id === 'openai/gpt-4o-mini');
    expect(mini).toMatchObject({
      contextLength: 128_000,
      pricing: { prompt: '1.5e-7', completion: '6e-7', inputCacheRead: '7.5e-8' },
      links: { details: '/api/v1/models/openai/gpt-4o-mini/endpoints' },
      defaultParameters: null,
      supportedVoices: null,
    });
    const paged = await sdk.models.list({ limit: 2, offset: 1 });
    expect(paged.result.data.map((m) => m.id)).toEqual(ids.slice(1, 3));
    expect(paged.result.links.next).toBe('/api/v1/models?offset=3&limit=2');
    const found = await sdk.models.list({ q: 'gpt-4o mini', outputModalities: 'text' });
    expect(found.result.data.map((m) => m.id)).toContain('openai/gpt-4o-mini');
    expect(found.result.data.every((m) => /gpt-4o/.test(m.id) && /mini/.test(m.id))).toBe(true);
  });

  it('models.count, models.get (aliases and variants resolve) and 404 for an unknown model', async () => {
    const all = (await sdk.models.list()).result.totalCount;
    expect((await sdk.models.count()).data.count).toBe(all);
    const embeddings = (await sdk.models.count({ outputModalities: 'embeddings' })).data.count;
    expect(embeddings).toBeGreaterThan(0);
    expect(embeddings).toBeLessThan(all);
    const got = await sdk.models.get({ author: 'anthropic', slug: 'claude-sonnet-4-0' });
    expect(got.data).toMatchObject({
      id: 'anthropic/claude-sonnet-4',
      canonicalSlug: 'anthropic/claude-sonnet-4',
    });
    expect((await sdk.models.get({ author: 'openai', slug: 'gpt-4o-mini:free' })).data.id).toBe(
      'openai/gpt-4o-mini',
    );
    await expect(sdk.models.get({ author: 'nobody', slug: 'nothing' })).rejects.toMatchObject({
      statusCode: 404,
    });
  });

  it('endpoints.list and endpoints.listZdrEndpoints describe each provider endpoint', async () => {
    const res = await sdk.endpoints.list({ author: 'test', slug: 'multi' });
    expect(res.data.id).toBe('test/multi');
    expect(res.data.endpoints.map((e) => [e.tag, e.providerName, e.pricing.prompt])).toEqual([
      ['openai', 'OpenAI', '0.000001'],
      ['groq', 'Groq', '5e-7'],
    ]);
    const zdr = await sdk.endpoints.listZdrEndpoints();
    const tags = new Set(zdr.data.map((e) => e.tag));
    // groq and the local server are configured zdr: true; openai is not.
    expect(tags.has('groq')).toBe(true);
    expect(tags.has('openai')).toBe(false);
    await expect(sdk.endpoints.list({ author: 'test', slug: 'none' })).rejects.toMatchObject({
      statusCode: 404,
    });
  });

  it('providers.list and embeddings.listModels', async () => {
    const providers = await sdk.providers.list();
    expect(providers.data.map((p) => p.slug)).toEqual(
      expect.arrayContaining(['gatehouse', 'openai', 'anthropic', 'google-ai-studio', 'groq', 'ollama']),
    );
    const emb = await sdk.embeddings.listModels();
    const ids = emb.result.data.map((m) => m.id);
    expect(ids).toEqual(expect.arrayContaining(['test/embed', 'openai/text-embedding-3-small']));
    expect(emb.result.data.every((m) => m.architecture.outputModalities.includes('embeddings'))).toBe(true);
  });

  it('models.listForUser: only what the key may use under its guardrails', async () => {
    const mgmt = client(gw.url, gw.managementKey);
    const g = await mgmt('POST', '/guardrails', { name: 'gpt only', allowed_models: ['openai/gpt-4o*'] });
    expect(g.status, g.text).toBe(201);
    const caller = await gw.services.keys.authenticate(gw.apiKey);
    await mgmt('POST', `/guardrails/${g.body.data.id}/assignments/keys`, { key_hashes: [caller?.keyHash] });
    try {
      const res = await sdk.models.listForUser({ bearer: gw.apiKey });
      const ids = res.result.data.map((m) => m.id);
      expect(ids.length).toBeGreaterThan(0);
      expect(ids.every((id) => id.startsWith('openai/gpt-4o'))).toBe(true);
      expect(res.result.totalCount).toBe(ids.length);
      await expect(sdk.models.listForUser({ bearer: 'sk-gh-not-a-key' })).rejects.toMatchObject({
        statusCode: 401,
      });
    } finally {
      await mgmt('DELETE', `/guardrails/${g.body.data.id}`);
    }
  });

  it('discovers the models of OpenAI-compatible servers; a server that is down does not stop the gateway', async () => {
    const admin = adminClient(gw.url);
    const reloaded = await admin('POST', '/admin/catalog/reload');
    expect(reloaded.status, reloaded.text).toBe(200);
    expect(reloaded.body.data.servers).toEqual(
      expect.arrayContaining([
        { provider: 'ollama', models: 2 },
        expect.objectContaining({ provider: 'offline', models: null, error: expect.any(String) }),
      ]),
    );
    expect(reloaded.body.data.models).toBe((await sdk.models.count()).data.count);
    const listed = (await sdk.models.list({ providers: 'ollama' })).result.data;
    expect(listed.map((m) => [m.id, m.architecture.outputModalities])).toEqual([
      ['ollama/llama3.2:latest', ['text']],
      ['ollama/nomic-embed-text', ['embeddings']],
    ]);
    const chat = await client(gw.url, gw.apiKey)('POST', '/chat/completions', {
      model: 'ollama/llama3.2:latest',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(chat.status, chat.text).toBe(200);
    expect(chat.body.choices[0].message.content).toBe('local llama3.2:latest');
  });

  it('reloads GATEHOUSE_CONFIG without a restart: the engine serves a model added since', async () => {
    const call = client(gw.url, gw.apiKey);
    const ask = () =>
      call('POST', '/chat/completions', { model: 'team/new', messages: [{ role: 'user', content: 'hi' }] });
    expect((await ask()).status).toBe(404);
    config.models.push({
      id: 'team/new',
      endpoints: [{ provider: 'openai', upstream_model: 'gpt-new', pricing: { prompt: 1, completion: 1 } }],
    });
    writeFileSync(configPath, JSON.stringify(config));
    const reloaded = await adminClient(gw.url)('POST', '/admin/catalog/reload');
    expect(reloaded.status).toBe(200);
    expect((await ask()).status).toBe(200);
    expect((await sdk.models.get({ author: 'team', slug: 'new' })).data.id).toBe('team/new');

    // A configuration that no longer loads is refused; the catalog in use stays.
    writeFileSync(configPath, '{ not json');
    const refused = await adminClient(gw.url)('POST', '/admin/catalog/reload');
    expect(refused.status).toBe(422);
    expect(refused.body.error.message).toContain('previous one stays in use');
    expect((await ask()).status).toBe(200);
    writeFileSync(configPath, JSON.stringify(config));
  });
});
