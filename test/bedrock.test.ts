import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { adminClient, client } from './support/http.js';
import { BEDROCK_TEST_KEYS, type MockBedrock, startMockBedrock } from './support/mock-bedrock.js';
import { registerSecret } from './support/secrets-audit.js';
import { expectThreadsHeld } from './support/threads.js';

const WRONG_SECRET = 'not-the-secret-0123456789';
// Provider credentials: the run's secrets audit checks no answer or log line carries them.
registerSecret('byok-key', BEDROCK_TEST_KEYS.secretAccessKey);
registerSecret('byok-key', WRONG_SECRET);

const CLAUDE_ID = 'us.anthropic.claude-sonnet-4-20250514-v1:0';
const LLAMA_ID = 'meta.llama3-3-70b-instruct-v1:0';
/** $3 / $15 per million tokens. */
const PRICE = { prompt: 3, completion: 15 };

const writeConfig = (config: object): string => {
  const file = join(mkdtempSync(join(tmpdir(), 'gatehouse-bedrock-')), 'gatehouse.json');
  writeFileSync(file, JSON.stringify(config));
  return file;
};

/**
 * AWS Bedrock (`kind: bedrock`) through the gateway with the official clients. The mock checks
 * every request's SigV4 signature against the operator's AWS keys; it records what reached AWS:
 * the operation and model id in the URL, the body, and that it was signed by those keys — never
 * carrying the gateway key.
 */
describe('AWS Bedrock provider', () => {
  let gw: TestGateway;
  let mock: MockBedrock;
  let openai: OpenAI;
  let anthropic: Anthropic;

  beforeAll(async () => {
    mock = await startMockBedrock();
    const entry = { kind: 'bedrock', region: 'us-west-2', endpoint: mock.url };
    const config = {
      providers: [
        {
          ...entry,
          slug: 'aws',
          // Sent (and signed) with every call.
          headers: { 'X-Amzn-Bedrock-Trace': 'ENABLED' },
          access_key_id: BEDROCK_TEST_KEYS.accessKeyId,
          secret_access_key: BEDROCK_TEST_KEYS.secretAccessKey,
          // Keyed by the catalog model id: its upstream id goes to the cross-region profile.
          model_ids: { 'test/claude': CLAUDE_ID },
        },
        {
          ...entry,
          slug: 'aws-wrong-secret',
          access_key_id: BEDROCK_TEST_KEYS.accessKeyId,
          secret_access_key: WRONG_SECRET,
        },
      ],
      models: [
        {
          id: 'test/claude',
          endpoints: [{ provider: 'aws', upstream_model: 'claude-sonnet-4', pricing: PRICE }],
        },
        { id: 'test/llama', endpoints: [{ provider: 'aws', upstream_model: LLAMA_ID, pricing: PRICE }] },
        {
          id: 'test/claude-max',
          endpoints: [
            { provider: 'aws', upstream_model: CLAUDE_ID, pricing: PRICE, max_completion_tokens: 64000 },
          ],
        },
        {
          id: 'test/llama-max',
          endpoints: [
            { provider: 'aws', upstream_model: LLAMA_ID, pricing: PRICE, max_completion_tokens: 8192 },
          ],
        },
        {
          id: 'test/titan-embed',
          kind: 'embeddings',
          endpoints: [{ provider: 'aws', upstream_model: 'amazon.titan-embed-text-v2:0', pricing: PRICE }],
        },
        {
          id: 'test/cohere-embed',
          kind: 'embeddings',
          endpoints: [{ provider: 'aws', upstream_model: 'cohere.embed-english-v3', pricing: PRICE }],
        },
        {
          id: 'test/unsigned-claude',
          endpoints: [
            { provider: 'aws-wrong-secret', upstream_model: 'anthropic.claude-3-5-haiku-20241022-v1:0' },
          ],
        },
      ],
    };
    gw = await startTestGateway('sqlite', { env: { GATEHOUSE_CONFIG: writeConfig(config) } });
    await adminClient(gw.url)('POST', '/admin/credits', {
      organization_id: gw.organizationId,
      amount_usd: 100,
    });
    openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: gw.apiKey, maxRetries: 0 });
  });
  afterAll(async () => {
    await gw?.stop();
    await mock?.close();
  });
  beforeEach(() => mock.reset());

  /** The one request that reached Bedrock, signed by the operator's keys for us-west-2/bedrock. */
  const bedrockRequest = () => {
    expect(mock.requests).toHaveLength(1);
    const req = mock.requests[0]!;
    expect(req.signatureValid).toBe(true);
    expect(req.signedWith).toBe(BEDROCK_TEST_KEYS.secretAccessKey);
    expect(req.scope).toEqual({ region: 'us-west-2', service: 'bedrock' });
    expect(String(req.headers.authorization)).toContain(`Credential=${BEDROCK_TEST_KEYS.accessKeyId}/`);
    expect(req.headers['x-amzn-bedrock-trace']).toBe('ENABLED');
    expect(String(req.headers.authorization)).toMatch(/SignedHeaders=[^,]*x-amzn-bedrock-trace/);
    const sent = JSON.stringify(req.headers) + req.raw;
    expect(sent).not.toContain(gw.apiKey);
    expect(sent).not.toContain(BEDROCK_TEST_KEYS.secretAccessKey);
    return req;
  };

  const generation = async (id: string) => {
    await gw.services.accountant.flush();
    return (await client(gw.url, gw.apiKey)('GET', `/generation?id=${id}`)).body.data;
  };

  it('/chat/completions: translated to Converse on the mapped inference profile, usage and cost recorded', async () => {
    mock.enqueue({
      reply: { text: 'hello from bedrock', usage: { prompt_tokens: 1000, completion_tokens: 500 } },
    });
    const { data, response } = await openai.chat.completions
      .create({
        model: 'test/claude',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'hi' },
        ],
        max_tokens: 64,
        temperature: 0.2,
        stop: ['END'],
      })
      .withResponse();
    expect(response.headers.get('x-gatehouse-route')).toBe('translated');
    expect(data.choices[0]!.message.content).toBe('hello from bedrock');
    expect(data.usage).toMatchObject({ prompt_tokens: 1000, completion_tokens: 500 });
    const req = bedrockRequest();
    expect(req.operation).toBe('converse');
    expect(req.model).toBe(CLAUDE_ID);
    expect(req.path).toBe(`/model/${encodeURIComponent(CLAUDE_ID)}/converse`);
    expect(req.body).toEqual({
      messages: [{ role: 'user', content: [{ text: 'hi' }] }],
      system: [{ text: 'Be brief.' }],
      inferenceConfig: { maxTokens: 64, temperature: 0.2, stopSequences: ['END'] },
    });
    const gen = await generation(data.id);
    expect(gen).toMatchObject({ tokens_prompt: 1000, tokens_completion: 500, provider_name: 'aws' });
    expect(gen.total_cost).toBeCloseTo((1000 * 3 + 500 * 15) / 1e6, 12);
  });

  it('/chat/completions streams through ConverseStream, with tool calls and usage', async () => {
    mock.enqueue({
      reply: {
        tool_calls: [{ id: 'tooluse_1', name: 'get_weather', arguments: { city: 'Paris' } }],
        usage: { prompt_tokens: 40, completion_tokens: 12, cached_tokens: 30 },
      },
    });
    const stream = await openai.chat.completions.create({
      model: 'test/llama',
      messages: [{ role: 'user', content: 'weather?' }],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            parameters: { type: 'object', properties: { city: { type: 'string' } } },
          },
        },
      ],
      tool_choice: 'required',
      stream: true,
      stream_options: { include_usage: true },
    });
    let args = '';
    let name = '';
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      const tc = chunk.choices[0]?.delta.tool_calls?.[0];
      if (tc?.function?.name) name = tc.function.name;
      args += tc?.function?.arguments ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(name).toBe('get_weather');
    expect(JSON.parse(args)).toEqual({ city: 'Paris' });
    expect(finish).toBe('tool_calls');
    expect(usage).toMatchObject({ prompt_tokens: 40, completion_tokens: 12 });
    expect(usage?.prompt_tokens_details?.cached_tokens).toBe(30);
    const req = bedrockRequest();
    expect(req.operation).toBe('converse-stream');
    expect(req.model).toBe(LLAMA_ID);
    expect(req.body.toolConfig).toEqual({
      tools: [
        {
          toolSpec: {
            name: 'get_weather',
            inputSchema: { json: { type: 'object', properties: { city: { type: 'string' } } } },
          },
        },
      ],
      toolChoice: { any: {} },
    });
  });

  it('/chat/completions with reasoning: Claude thinks through Converse, its reasoning comes back', async () => {
    mock.enqueue({ reply: { text: '42', reasoning: 'let me think' } });
    const res: any = await openai.chat.completions.create({
      model: 'test/claude',
      messages: [{ role: 'user', content: 'the answer?' }],
      // @ts-expect-error OpenRouter-style field, not in the client's types
      reasoning: { max_tokens: 2048 },
    });
    expect(res.choices[0].message.content).toBe('42');
    expect(res.choices[0].message.reasoning).toBe('let me think');
    expect(res.choices[0].message.reasoning_details[0]).toMatchObject({
      type: 'reasoning.text',
      signature: 'mock-signature',
    });
    const req = bedrockRequest();
    expect(req.body.additionalModelRequestFields).toEqual({
      thinking: { type: 'enabled', budget_tokens: 2048 },
    });
  });

  it('/responses is served through Converse (streaming and not)', async () => {
    mock.enqueue({ reply: { text: 'a response' } });
    const res = await openai.responses.create({ model: 'test/llama', input: 'hi', instructions: 'Be kind.' });
    expect(res.output_text).toBe('a response');
    const req = bedrockRequest();
    expect(req.operation).toBe('converse');
    expect(req.body.system).toEqual([{ text: 'Be kind.' }]);
    mock.reset();
    mock.enqueue({ reply: { text: 'a streamed response' } });
    const stream = await openai.responses.create({ model: 'test/claude', input: 'hi', stream: true });
    let text = '';
    let completed = false;
    for await (const ev of stream) {
      if (ev.type === 'response.output_text.delta') text += ev.delta;
      if (ev.type === 'response.completed') completed = ev.response.usage !== null;
    }
    expect(text).toBe('a streamed response');
    expect(completed).toBe(true);
    expect(bedrockRequest().operation).toBe('converse-stream');
  });

  it("a translated call to Claude naming no limit sends the catalog's maximum output; other models none", async () => {
    mock.enqueue({ reply: { text: 'long' } });
    await openai.chat.completions.create({
      model: 'test/claude-max',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(bedrockRequest().body.inferenceConfig).toEqual({ maxTokens: 64000 });
    mock.reset();
    mock.enqueue({ reply: { text: 'long' } });
    await openai.responses.create({ model: 'test/claude-max', input: 'hi' });
    expect(bedrockRequest().body.inferenceConfig).toEqual({ maxTokens: 64000 });
    // No maximum in the catalog: Anthropic's 4096.
    mock.reset();
    mock.enqueue({ reply: { text: 'short' } });
    await openai.chat.completions.create({
      model: 'test/claude',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(bedrockRequest().body.inferenceConfig).toEqual({ maxTokens: 4096 });
    // A model that is not Claude gets no limit of Gatehouse's own.
    mock.reset();
    mock.enqueue({ reply: { text: 'llama' } });
    await openai.chat.completions.create({
      model: 'test/llama-max',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(bedrockRequest().body).not.toHaveProperty('inferenceConfig');
  });

  it('a message thread is held by Gatehouse: each turn the provider gets the whole conversation', () =>
    expectThreadsHeld(anthropic, 'test/claude', {
      requests: () => mock.requests,
      enqueueText: (text) => mock.enqueue({ reply: { text } }),
    }));

  it('/messages to an Anthropic model goes through InvokeModel with the caller’s body intact', async () => {
    mock.enqueue({ reply: { text: 'native claude', usage: { prompt_tokens: 20, completion_tokens: 5 } } });
    const body = {
      model: 'test/claude',
      max_tokens: 100,
      system: [{ type: 'text' as const, text: 'sys', cache_control: { type: 'ephemeral' as const } }],
      messages: [{ role: 'user' as const, content: 'hi' }],
      thinking: { type: 'enabled' as const, budget_tokens: 1024 },
      metadata: { user_id: 'u-1' },
    };
    const { data, response } = await anthropic.messages
      .create(body, { headers: { 'anthropic-beta': 'interleaved-thinking-2025-05-14' } })
      .withResponse();
    expect(response.headers.get('x-gatehouse-route')).toBe('passthrough');
    expect(data.content[0]).toMatchObject({ type: 'text', text: 'native claude' });
    const req = bedrockRequest();
    expect(req.operation).toBe('invoke');
    expect(req.model).toBe(CLAUDE_ID);
    const { model: _model, ...rest } = body;
    expect(req.body).toEqual({
      ...rest,
      anthropic_version: 'bedrock-2023-05-31',
      anthropic_beta: ['interleaved-thinking-2025-05-14'],
    });
    const gen = await generation(data.id);
    expect(gen).toMatchObject({ tokens_prompt: 20, tokens_completion: 5, provider_name: 'aws' });
    expect(gen.total_cost).toBeCloseTo((20 * 3 + 5 * 15) / 1e6, 12);
  });

  it('/messages streams InvokeModelWithResponseStream chunks as Anthropic SSE events', async () => {
    mock.enqueue({
      reply: { text: 'streamed natively', usage: { prompt_tokens: 30, completion_tokens: 7 } },
    });
    const stream = anthropic.messages.stream({
      model: 'test/claude',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const types: string[] = [];
    for await (const ev of stream) types.push(ev.type);
    const final = await stream.finalMessage();
    expect(final.content[0]).toMatchObject({ type: 'text', text: 'streamed natively' });
    expect(final.usage.output_tokens).toBe(7);
    expect(types[0]).toBe('message_start');
    expect(types).toContain('content_block_delta');
    expect(types[types.length - 1]).toBe('message_stop');
    const req = bedrockRequest();
    expect(req.operation).toBe('invoke-with-response-stream');
    expect(req.body).toEqual({
      anthropic_version: 'bedrock-2023-05-31',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const gen = await generation(final.id);
    expect(gen).toMatchObject({ tokens_prompt: 30, tokens_completion: 7 });
  });

  it('a translated call to Claude sends the caller’s anthropic-beta as additionalModelRequestFields.anthropic_beta', async () => {
    const betas = 'interleaved-thinking-2025-05-14, token-efficient-tools-2025-02-19';
    const list = ['interleaved-thinking-2025-05-14', 'token-efficient-tools-2025-02-19'];
    mock.enqueue({ reply: { text: 'whole' } });
    const { data, response } = await openai.chat.completions
      .create(
        { model: 'test/claude', messages: [{ role: 'user', content: 'hi' }] },
        { headers: { 'anthropic-beta': betas } },
      )
      .withResponse();
    expect(data.choices[0]!.message.content).toBe('whole');
    expect(response.headers.get('x-gatehouse-dropped-fields')).toBeNull();
    const whole = bedrockRequest();
    expect(whole.operation).toBe('converse');
    expect(whole.body.additionalModelRequestFields).toEqual({ anthropic_beta: list });
    expect(whole.headers['anthropic-beta']).toBeUndefined();
    mock.reset();
    mock.enqueue({ reply: { text: 'streamed' } });
    const stream = await openai.chat.completions.create(
      { model: 'test/claude', messages: [{ role: 'user', content: 'hi' }], stream: true },
      { headers: { 'anthropic-beta': betas } },
    );
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('streamed');
    const streamed = bedrockRequest();
    expect(streamed.operation).toBe('converse-stream');
    expect(streamed.body.additionalModelRequestFields).toEqual({ anthropic_beta: list });
  });

  it('a call to a non-Anthropic model drops the caller’s anthropic-beta and lists it (any caller format)', async () => {
    mock.enqueue({ reply: { text: 'llama' } });
    const { response } = await openai.chat.completions
      .create(
        { model: 'test/llama', messages: [{ role: 'user', content: 'hi' }] },
        { headers: { 'anthropic-beta': 'interleaved-thinking-2025-05-14' } },
      )
      .withResponse();
    expect(response.headers.get('x-gatehouse-dropped-fields')).toBe('anthropic-beta');
    const req = bedrockRequest();
    expect(req.body.additionalModelRequestFields).toBeUndefined();
    expect(req.raw).not.toContain('interleaved-thinking');
    mock.reset();
    mock.enqueue({ reply: { text: 'llama again' } });
    const { response: viaMessages } = await anthropic.messages
      .create(
        { model: 'test/llama', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] },
        { headers: { 'anthropic-beta': 'interleaved-thinking-2025-05-14' } },
      )
      .withResponse();
    expect(viaMessages.headers.get('x-gatehouse-dropped-fields')).toContain('anthropic-beta');
    expect(bedrockRequest().raw).not.toContain('interleaved-thinking');
  });

  it('/messages to a non-Anthropic model is translated to Converse (streaming and not)', async () => {
    mock.enqueue({ reply: { text: 'llama here' } });
    const { data, response } = await anthropic.messages
      .create({ model: 'test/llama', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(response.headers.get('x-gatehouse-route')).toBe('translated');
    expect(data.content[0]).toMatchObject({ type: 'text', text: 'llama here' });
    expect(bedrockRequest().operation).toBe('converse');
    mock.reset();
    mock.enqueue({ reply: { text: 'llama streams' } });
    const final = await anthropic.messages
      .stream({ model: 'test/llama', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] })
      .finalMessage();
    expect(final.content[0]).toMatchObject({ type: 'text', text: 'llama streams' });
    expect(bedrockRequest().operation).toBe('converse-stream');
  });

  it('a wrong secret key: AWS refuses the signature, the caller gets an upstream error in its format', async () => {
    const err = await openai.chat.completions
      .create({ model: 'test/unsigned-claude', messages: [{ role: 'user', content: 'x' }] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(403);
    expect(err.message).toContain('InvalidSignatureException');
    expect(err.message).not.toContain(WRONG_SECRET);
    expect(mock.requests[0]!.signatureValid).toBe(false);

    const aerr = await anthropic.messages
      .create({ model: 'test/unsigned-claude', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })
      .catch((e) => e);
    expect(aerr).toBeInstanceOf(Anthropic.APIError);
    expect(aerr.status).toBe(403);
    expect(aerr.error?.type).toBe('error');
    expect(JSON.stringify(aerr.error)).toContain('InvalidSignatureException');
  });

  it('Bedrock throttling is a 429 for the caller; a validation error a 400', async () => {
    // Retried once by the router (no other provider), refused again.
    mock.enqueue({
      status: 429,
      times: 2,
      error: { message: 'Too many requests, please wait before trying again.' },
    });
    const err = await openai.chat.completions
      .create({ model: 'test/llama', messages: [{ role: 'user', content: 'x' }] })
      .catch((e) => e);
    expect(err.status).toBe(429);
    expect(err.message).toContain('ThrottlingException');
    mock.enqueue({ status: 400, error: { message: 'Malformed input request' } });
    const bad = await openai.chat.completions
      .create({ model: 'test/llama', messages: [{ role: 'user', content: 'x' }] })
      .catch((e) => e);
    expect(bad.status).toBe(400);
    expect(bad.message).toContain('ValidationException: Malformed input request');
  });

  it('an exception event mid-stream ends the stream with an error, on both routes', async () => {
    mock.enqueue({
      reply: { text: 'one two three four five' },
      exception: { afterEvents: 3, type: 'modelStreamErrorException', message: 'Model stream broke' },
    });
    const stream = await openai.chat.completions.create({
      model: 'test/llama',
      messages: [{ role: 'user', content: 'count' }],
      stream: true,
    });
    let text = '';
    const err = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    })().catch((e) => e);
    expect(text.length).toBeGreaterThan(0);
    expect(text).not.toBe('one two three four five');
    expect(err).toBeInstanceOf(Error);
    expect(String(err.message ?? err)).toContain('Model stream broke');

    mock.enqueue({
      reply: { text: 'one two three four five' },
      exception: { afterEvents: 4, type: 'throttlingException', message: 'Slow down mid-stream' },
    });
    const native = anthropic.messages.stream({
      model: 'test/claude',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const nerr = await native.finalMessage().catch((e) => e);
    expect(nerr).toBeInstanceOf(Error);
    expect(String(nerr.message)).toContain('Slow down mid-stream');
  });

  it('/embeddings: Titan one input per InvokeModel call, Cohere all inputs in one', async () => {
    const titan = await openai.embeddings.create({
      model: 'test/titan-embed',
      input: ['hello world', 'second input'],
      dimensions: 256,
    });
    expect(titan.data.map((d) => d.index)).toEqual([0, 1]);
    expect(titan.usage.prompt_tokens).toBe(4);
    expect(mock.requests.map((r) => [r.operation, r.model, r.body])).toEqual([
      ['invoke', 'amazon.titan-embed-text-v2:0', { inputText: 'hello world', dimensions: 256 }],
      ['invoke', 'amazon.titan-embed-text-v2:0', { inputText: 'second input', dimensions: 256 }],
    ]);
    expect(mock.requests.every((r) => r.signatureValid)).toBe(true);
    mock.reset();
    const cohere = await openai.embeddings.create({ model: 'test/cohere-embed', input: ['a b', 'c'] });
    expect(cohere.data).toHaveLength(2);
    expect(cohere.usage.prompt_tokens).toBe(3);
    const req = bedrockRequest();
    expect(req.body).toEqual({ texts: ['a b', 'c'], input_type: 'search_document' });
  });

  it('a json_schema response_format is Converse structured output (outputConfig.textFormat)', async () => {
    mock.enqueue({ reply: { text: '{"city":"Oslo"}' } });
    const schema = {
      type: 'object',
      properties: { city: { type: 'string' } },
      additionalProperties: false,
      required: ['city'],
    };
    const res = await openai.chat.completions.create({
      model: 'test/claude',
      messages: [{ role: 'user', content: 'which city?' }],
      response_format: { type: 'json_schema', json_schema: { name: 'place', schema, strict: true } },
    });
    expect(res.choices[0]!.message.content).toBe('{"city":"Oslo"}');
    const { textFormat } = bedrockRequest().body.outputConfig;
    expect(textFormat).toEqual({
      type: 'json_schema',
      structure: { jsonSchema: { schema: expect.any(String), name: 'place' } },
    });
    // The schema as Claude's structured outputs take it (src/providers/anthropic/output-schema.ts).
    expect(JSON.parse(textFormat.structure.jsonSchema.schema)).toEqual(schema);
  });

  it('an image URL Gatehouse may not fetch (Converse takes only inline images) is a 400, and nothing is sent', async () => {
    const err = await openai.chat.completions
      .create({
        model: 'test/llama',
        messages: [
          { role: 'user', content: [{ type: 'image_url', image_url: { url: 'http://127.0.0.1:9/a.png' } }] },
        ],
      })
      .catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.message).toContain('could not fetch http://127.0.0.1:9/a.png');
    expect(err.message).toContain('loopback, private or link-local');
    expect(mock.requests).toHaveLength(0);
  });

  it('web search on Converse (which has none) is a 400 naming it in the caller format, and nothing is sent', async () => {
    const err = await anthropic.messages
      .create({
        model: 'test/llama',
        max_tokens: 50,
        messages: [{ role: 'user', content: 'news?' }],
        tools: [{ type: 'web_search_20250305', name: 'web_search' }],
      })
      .catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(err.message).toContain('web_search cannot be sent to this provider');
    const chat = await openai.chat.completions
      .create({ model: 'test/llama', messages: [{ role: 'user', content: 'news?' }], web_search_options: {} })
      .catch((e) => e);
    expect(chat.status).toBe(400);
    expect(chat.message).toContain('web_search');
    expect(mock.requests).toHaveLength(0);
  });

  it('an unlisted inference profile ARN is reached as <slug>/<ARN>, signed and routed by the URL', async () => {
    const arn = 'arn:aws:bedrock:us-west-2:123456789012:application-inference-profile/a1b2c3d4e5f6';
    mock.enqueue({ reply: { text: 'via the profile' } });
    const res = await openai.chat.completions.create({
      model: `aws/${arn}`,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(res.choices[0]!.message.content).toBe('via the profile');
    const req = bedrockRequest();
    expect(req.model).toBe(arn);
    expect(req.path).toBe(`/model/${encodeURIComponent(arn)}/converse`);
  });

  it('an unlisted model id that Bedrock could not have is a 400, and nothing is sent', async () => {
    for (const model of ['aws/model@v2']) {
      const err = await openai.chat.completions
        .create({ model, messages: [{ role: 'user', content: 'x' }] })
        .catch((e) => e);
      expect(err.status, model).toBe(400);
    }
    expect(mock.requests).toHaveLength(0);
  });
});

describe('AWS Bedrock entries refused at start', () => {
  const refused = async (entry: object, field: string) => {
    const file = writeConfig({ providers: [{ slug: 'aws', kind: 'bedrock', ...entry }] });
    const err = await startTestGateway('sqlite', { env: { GATEHOUSE_CONFIG: file } }).then(
      async (gw) => {
        await gw.stop();
        return null;
      },
      (e) => e as Error,
    );
    expect(err, JSON.stringify(entry)).toBeInstanceOf(Error);
    expect(err!.message).toContain(field);
    expect(err!.message).not.toContain('sekrit-value');
  };

  it('names the missing or malformed field', async () => {
    await refused({}, 'region');
    await refused({ region: 'moon-base' }, 'region');
    await refused({ region: 'us-east-1', endpoint: 'not a url' }, 'endpoint');
    await refused({ region: 'us-east-1', secret_access_key: 'sekrit-value' }, 'access_key_id');
    await refused({ region: 'us-east-1', access_key_id: 'AKIAGATEHOUSETEST001' }, 'secret_access_key');
    await refused(
      { region: 'us-east-1', access_key_id: 'bad id', secret_access_key: 'sekrit-value' },
      'access_key_id',
    );
    await refused({ region: 'us-east-1', api_key: 'sekrit-value' }, 'api_key');
    await refused({ region: 'us-east-1', model_ids: { 'a/b': '../x y' } }, 'model_ids.a/b');
  });
});
