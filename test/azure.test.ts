import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient } from './support/http.js';
import { type MockUpstream, startMockUpstream } from './support/mock-upstream.js';

const AZURE_KEY = 'azure-operator-key-0123456789';

/**
 * Azure OpenAI (`kind: azure`) through the gateway: the official OpenAI client on the caller's side,
 * a mock speaking Azure's URLs on the other. The mock records what reached Azure: the deployment
 * and api-version in the URL, the `api-key` header — and never the gateway key.
 */
describe('Azure OpenAI provider', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let openai: OpenAI;

  beforeAll(async () => {
    mock = await startMockUpstream();
    const price = { prompt: 1, completion: 2 };
    const config = {
      providers: [
        {
          slug: 'my-azure',
          kind: 'azure',
          endpoint: `${mock.url}/res/`,
          api_key_env: 'TEST_AZURE_KEY',
          // Keyed by the catalog model id: its upstream id `gpt-4o` goes to deployment prod-4o.
          deployments: { 'test/azure-gpt': 'prod-4o', 'test/azure-two': 'gone-4o' },
        },
        {
          // A second resource serving the same model (its deployment named like the upstream id).
          slug: 'other-azure',
          kind: 'azure',
          endpoint: `${mock.url}/res2`,
          api_key_env: 'TEST_AZURE_KEY',
        },
      ],
      models: [
        {
          id: 'test/azure-gpt',
          endpoints: [{ provider: 'my-azure', upstream_model: 'gpt-4o', pricing: price }],
        },
        {
          id: 'test/azure-two',
          endpoints: [
            { provider: 'my-azure', upstream_model: 'gpt-4o-two', pricing: price },
            { provider: 'other-azure', upstream_model: 'gpt-4o', pricing: price },
          ],
        },
        {
          id: 'test/azure-embed',
          kind: 'embeddings',
          endpoints: [{ provider: 'my-azure', upstream_model: 'text-embedding-3-small', pricing: price }],
        },
      ],
    };
    const file = join(mkdtempSync(join(tmpdir(), 'gatehouse-azure-')), 'gatehouse.json');
    writeFileSync(file, JSON.stringify(config));
    gw = await startTestGateway('sqlite', { env: { GATEHOUSE_CONFIG: file, TEST_AZURE_KEY: AZURE_KEY } });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
    openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => mock.reset());

  /** The one request that reached Azure, with the credential checks every call must pass. */
  const azureRequest = () => {
    expect(mock.requests).toHaveLength(1);
    const req = mock.requests[0]!;
    expect(req.headers['api-key']).toBe(AZURE_KEY);
    expect(req.headers.authorization).toBeUndefined();
    expect(JSON.stringify(req.headers)).not.toContain(gw.apiKey);
    return req;
  };

  it('/chat/completions: the lane sends the body to the deployment with api-key and api-version', async () => {
    mock.enqueue({ reply: { text: 'hello from azure' } });
    const { data, response } = await openai.chat.completions
      .create({
        model: 'test/azure-gpt',
        messages: [{ role: 'user', content: 'hi' }],
        // A field Gatehouse does not know travels as sent (pass-through).
        // @ts-expect-error not in the client's types
        data_sources: [{ type: 'azure_search' }],
      })
      .withResponse();
    expect(response.headers.get('x-gatehouse-route')).toBe('passthrough');
    expect(data.choices[0]!.message.content).toBe('hello from azure');
    const req = azureRequest();
    expect(req.path).toBe('/res/openai/deployments/prod-4o/chat/completions');
    expect(req.query).toEqual({ 'api-version': '2024-10-21' });
    expect(req.body.model).toBe('prod-4o');
    expect(req.body.data_sources).toEqual([{ type: 'azure_search' }]);
  });

  it("the lane relays Azure's content-filter results as Azure sent them", async () => {
    const filters = { hate: { filtered: false, severity: 'safe' } };
    mock.enqueue({
      body: {
        id: 'chatcmpl-az',
        object: 'chat.completion',
        created: 1,
        model: 'gpt-4o',
        prompt_filter_results: [{ prompt_index: 0, content_filter_results: filters }],
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: 'fine' },
            finish_reason: 'stop',
            content_filter_results: filters,
          },
        ],
        usage: { prompt_tokens: 2, completion_tokens: 1, total_tokens: 3 },
      },
    });
    const res = await fetch(`${gw.url}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.apiKey}` },
      body: JSON.stringify({ model: 'test/azure-gpt', messages: [{ role: 'user', content: 'hi' }] }),
    });
    const body = (await res.json()) as any;
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body.prompt_filter_results).toEqual([{ prompt_index: 0, content_filter_results: filters }]);
    expect(body.choices[0].content_filter_results).toEqual(filters);
  });

  it('/chat/completions streams through the deployment', async () => {
    mock.enqueue({ reply: { text: 'one two three' } });
    const stream = await openai.chat.completions.create({
      model: 'test/azure-gpt',
      messages: [{ role: 'user', content: 'count' }],
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('one two three');
    const req = azureRequest();
    expect(req.path).toBe('/res/openai/deployments/prod-4o/chat/completions');
    expect(req.body.stream).toBe(true);
  });

  it('/responses goes to the v1 route with the deployment as the model', async () => {
    mock.enqueue({ reply: { text: 'a response' } });
    const res = await openai.responses.create({ model: 'test/azure-gpt', input: 'hi' });
    expect(res.output_text).toBe('a response');
    const req = azureRequest();
    expect(req.path).toBe('/res/openai/v1/responses');
    expect(req.body.model).toBe('prod-4o');
  });

  it('/messages is translated to a Chat Completions call on the deployment', async () => {
    mock.enqueue({ reply: { text: 'translated' } });
    const anthropic = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: gw.apiKey, maxRetries: 0 });
    const { data, response } = await anthropic.messages
      .create({ model: 'test/azure-gpt', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(response.headers.get('x-gatehouse-route')).toBe('translated');
    expect(data.content[0]).toMatchObject({ type: 'text', text: 'translated' });
    const req = azureRequest();
    expect(req.path).toBe('/res/openai/deployments/prod-4o/chat/completions');
    expect(req.body.model).toBe('prod-4o');
    expect(req.body.max_completion_tokens).toBe(50);
  });

  it('/embeddings: a model without a deployment entry uses its upstream id as the deployment', async () => {
    const res = await openai.embeddings.create({ model: 'test/azure-embed', input: ['a', 'b'] });
    expect(res.data).toHaveLength(2);
    const req = azureRequest();
    expect(req.path).toBe('/res/openai/deployments/text-embedding-3-small/embeddings');
    expect(req.query['api-version']).toBe('2024-10-21');
  });

  it('a content-filter refusal is a 400 naming the filter category', async () => {
    mock.enqueue({
      status: 400,
      body: {
        error: {
          code: 'content_filter',
          message:
            "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
          innererror: {
            code: 'ResponsibleAIPolicyViolation',
            content_filter_result: {
              hate: { filtered: true, severity: 'high' },
              violence: { filtered: false, severity: 'safe' },
            },
          },
        },
      },
    });
    const err = await openai.chat.completions
      .create({ model: 'test/azure-gpt', messages: [{ role: 'user', content: 'x' }] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(400);
    expect(err.message).toContain('content filter');
    expect(err.message).toContain('hate (high)');
    expect(err.message).not.toContain('violence');
  });

  it('a missing deployment is a 404 naming the deployment', async () => {
    mock.enqueue({
      status: 404,
      body: {
        error: {
          code: 'DeploymentNotFound',
          message: 'The API deployment for this resource does not exist.',
        },
      },
    });
    const err = await openai.chat.completions
      .create({ model: 'test/azure-gpt', messages: [{ role: 'user', content: 'x' }] })
      .catch((e) => e);
    expect(err.status).toBe(404);
    expect(err.message).toContain('deployment "prod-4o"');
    // Asked once: a missing deployment stays missing (no retry of the same).
    expect(mock.requests).toHaveLength(1);
  });

  it("a missing deployment lets the model's next provider (another resource) serve the call", async () => {
    const notFound = {
      status: 404,
      body: {
        error: {
          code: 'DeploymentNotFound',
          message: 'The API deployment for this resource does not exist.',
        },
      },
      match: { path: /^\/res\// },
    };
    mock.enqueue(notFound, { reply: { text: 'from the other resource' }, match: { path: /^\/res2\// } });
    const res = await openai.chat.completions.create({
      model: 'test/azure-two',
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(res.choices[0]!.message.content).toBe('from the other resource');
    expect(mock.requests.map((r) => r.path)).toEqual([
      '/res/openai/deployments/gone-4o/chat/completions',
      '/res2/openai/deployments/gpt-4o/chat/completions',
    ]);
    expect((res as any).provider).toBe('other-azure');
  });

  /** A stream whose first chunk gets through, then Azure's content filter stops it with an error event. */
  const filteredMidStream = () =>
    mock.enqueue({
      stream: [
        {
          data: {
            id: 'chatcmpl-az',
            object: 'chat.completion.chunk',
            created: 1,
            model: 'gpt-4o',
            choices: [{ index: 0, delta: { role: 'assistant', content: 'Once upon' }, finish_reason: null }],
          },
        },
        {
          data: {
            error: {
              code: 'content_filter',
              status: 400,
              message: "The response was filtered due to Azure OpenAI's content management policy.",
              innererror: {
                code: 'ResponsibleAIPolicyViolation',
                content_filter_result: {
                  violence: { filtered: true, severity: 'medium' },
                  hate: { filtered: false, severity: 'safe' },
                },
              },
            },
          },
        },
      ],
    });

  it("a content-filter error mid-stream reads as Azure's, naming the category (translated /messages)", async () => {
    filteredMidStream();
    const anthropic = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: gw.apiKey, maxRetries: 0 });
    const stream = await anthropic.messages.create({
      model: 'test/azure-gpt',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'tell me a story' }],
      stream: true,
    });
    let text = '';
    const err = await (async () => {
      for await (const ev of stream)
        if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
    })().catch((e) => e);
    expect(text).toBe('Once upon');
    expect(err).toBeInstanceOf(Error);
    expect(String(err.message)).toContain('Azure content filter');
    expect(String(err.message)).toContain('violence (medium)');
    expect(String(err.message)).not.toContain('hate');
  });

  it("a content-filter error mid-stream reads as Azure's on the pass-through lane too", async () => {
    filteredMidStream();
    const res = await fetch(`${gw.url}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.apiKey}` },
      body: JSON.stringify({
        model: 'test/azure-gpt',
        messages: [{ role: 'user', content: 'tell me a story' }],
        stream: true,
      }),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('Once upon');
    expect(text).toContain('violence (medium)');
  });

  it('an unlisted model whose name is no Azure deployment name is a 400, and nothing is sent', async () => {
    for (const model of ['my-azure/org/model', 'my-azure/model:tag', 'my-azure/model@v2']) {
      const err = await openai.chat.completions
        .create({ model, messages: [{ role: 'user', content: 'x' }] })
        .catch((e) => e);
      expect(err.status, model).toBe(400);
    }
    expect(mock.requests).toHaveLength(0);
  });

  it('429 with retry-after is retried after the wait, then answered', async () => {
    mock.enqueue(
      { status: 429, headers: { 'retry-after': '1' }, error: { message: 'Rate limit' } },
      { reply: { text: 'after the wait' } },
    );
    const started = Date.now();
    const res = await openai.chat.completions.create({
      model: 'test/azure-gpt',
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(res.choices[0]!.message.content).toBe('after the wait');
    expect(mock.requests).toHaveLength(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });
});

describe('Azure OpenAI provider with Microsoft Entra ID', () => {
  const SECRET = 'entra-secret-abcdef0123456789';
  let gw: TestGateway;
  let mock: MockUpstream;
  let tokenRequests = 0;
  const tokens = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      tokenRequests++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ token_type: 'Bearer', access_token: 'entra-token-1', expires_in: 3599 }));
    });
  });

  beforeAll(async () => {
    mock = await startMockUpstream();
    await new Promise<void>((r) => tokens.listen(0, '127.0.0.1', r));
    const tokenUrl = `http://127.0.0.1:${(tokens.address() as AddressInfo).port}/t-1/oauth2/v2.0/token`;
    const config = {
      providers: [
        {
          slug: 'entra-azure',
          kind: 'azure',
          endpoint: mock.url,
          auth: {
            tenant_id: 't-1',
            client_id: 'app-1',
            client_secret_env: 'TEST_ENTRA_SECRET',
            token_url: tokenUrl,
          },
        },
      ],
      models: [
        {
          id: 'test/entra-tts',
          kind: 'speech',
          endpoints: [{ provider: 'entra-azure', upstream_model: 'tts-1', pricing: { characters: 15 } }],
        },
        {
          id: 'test/entra-stt',
          kind: 'transcription',
          endpoints: [
            { provider: 'entra-azure', upstream_model: 'whisper-1', pricing: { audio_minute: 0.006 } },
          ],
        },
        {
          id: 'test/entra-gpt',
          endpoints: [
            { provider: 'entra-azure', upstream_model: 'gpt-4o', pricing: { prompt: 1, completion: 2 } },
          ],
        },
      ],
    };
    const file = join(mkdtempSync(join(tmpdir(), 'gatehouse-entra-')), 'gatehouse.json');
    writeFileSync(file, JSON.stringify(config));
    gw = await startTestGateway('sqlite', { env: { GATEHOUSE_CONFIG: file, TEST_ENTRA_SECRET: SECRET } });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
    await new Promise<void>((r) => tokens.close(() => r()));
  });

  it('routes to the keyless entry and sends the Entra token as Bearer, fetched once', async () => {
    const openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
    for (let i = 0; i < 2; i++) {
      mock.enqueue({ reply: { text: 'via entra' } });
      const res = await openai.chat.completions.create({
        model: 'test/entra-gpt',
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(res.choices[0]!.message.content).toBe('via entra');
    }
    expect(tokenRequests).toBe(1);
    expect(mock.requests).toHaveLength(2);
    for (const req of mock.requests) {
      expect(req.path).toBe('/openai/deployments/gpt-4o/chat/completions');
      expect(req.headers.authorization).toBe('Bearer entra-token-1');
      expect(req.headers['api-key']).toBeUndefined();
      expect(JSON.stringify(req.headers)).not.toContain(gw.apiKey);
      expect(JSON.stringify(req.headers)).not.toContain(SECRET);
    }
  });

  it('speech and transcriptions carry the Entra token too (at the deployment, with the api-version)', async () => {
    mock.reset();
    const openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
    // The mock serves no audio: what counts is what reached it.
    await openai.audio.speech
      .create({ model: 'test/entra-tts', input: 'hi', voice: 'alloy' })
      .catch(() => {});
    await openai.audio.transcriptions
      .create({ model: 'test/entra-stt', file: await toFile(Buffer.from('RIFF'), 'a.wav') })
      .catch(() => {});
    expect(mock.requests.map((r) => r.path)).toEqual([
      '/openai/deployments/tts-1/audio/speech',
      '/openai/deployments/whisper-1/audio/transcriptions',
    ]);
    for (const req of mock.requests) {
      expect(req.query['api-version']).toBe('2024-10-21');
      expect(req.headers.authorization).toBe('Bearer entra-token-1');
      expect(req.headers['api-key']).toBeUndefined();
    }
  });
});
