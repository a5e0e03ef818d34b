/**
 * The OpenAI Agents SDK (`@openai/agents`) through Gatehouse, pointed at it as its docs say
 * (`setDefaultOpenAIClient(new OpenAI({ baseURL, apiKey }))`, tracing export off), on the mock's
 * OpenAI provider (Responses calls passed through), Anthropic and Gemini providers (translated):
 * `run()` with the default Responses model (plain, a zod function tool loop, streaming, usage),
 * `previousResponseId` conversations (Gatehouse's stored responses, also on OpenAI: the mock, like
 * any upstream, never sees a Gatehouse response id), `outputType`, handoffs, the chat-completions
 * model, and the model settings the SDK sends (store, include, reasoning, truncation, …) — none
 * refused, each where the provider takes it; errors as the SDK's own classes; a Gemini 3 tool loop
 * (its signature lost in Responses items, Google's stand-in sent); and the SDK's trace upload to
 * api.openai.com, which `setTracingDisabled(true)` stops.
 *
 * The client is the `openai` the SDK itself depends on (v7, whose engines ask for Node ≥ 22): it
 * runs on Node 20.
 */
import { createRequire } from 'node:module';
import {
  Agent,
  getGlobalTraceProvider,
  ModelBehaviorError,
  type ModelSettings,
  OpenAIChatCompletionsModel,
  type OpenAIClient,
  OpenAIConversationsSession,
  OpenAIProvider,
  Runner,
  run,
  setDefaultOpenAIClient,
  setTracingDisabled,
  tool,
} from '@openai/agents';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import type { TestGateway } from './support/gateway.js';
import { type MockUpstream, type RecordedRequest, wireView } from './support/mock-upstream.js';
import { gatewayWithUpstreams } from './support/upstreams.js';

// The `openai` package the SDK resolves (not this repository's own, older one).
const sdkRequire = createRequire(createRequire(import.meta.url).resolve('@openai/agents-openai'));
const OpenAI = sdkRequire('openai').OpenAI as new (opts: Record<string, unknown>) => OpenAIClient;
const OPENAI_VERSION: string = sdkRequire('openai/version').VERSION;
const { NotFoundError, RateLimitError } = sdkRequire('openai');

const USAGE = { prompt_tokens: 20, completion_tokens: 6, cached_tokens: 8, reasoning_tokens: 2 };
const CALL = { id: 'call_w1', name: 'weather', arguments: { city: 'Oslo' } };

/** What the SDK sent Gatehouse and what Gatehouse answered, call by call. */
interface Exchange {
  url: string;
  body: Record<string, any>;
  status: number;
  dropped: string | null;
}

const providers = [
  { model: 'test/gpt', kind: 'openai', upstream: 'gpt-x' },
  { model: 'test/claude', kind: 'anthropic', upstream: 'claude-x' },
  { model: 'test/gemini', kind: 'google', upstream: 'gemini-x' },
] as const;

describe('OpenAI Agents SDK through Gatehouse', () => {
  let gw: TestGateway;
  let mock: MockUpstream;
  let stop: () => Promise<void>;
  let client: OpenAIClient;
  let exchanges: Exchange[];
  const fetched: string[] = [];
  const uploads: { url: string; authorization: string | null; body: string }[] = [];
  const realFetch = globalThis.fetch;
  const toolRuns: string[] = [];

  const weather = tool({
    name: 'weather',
    description: 'The weather of a city',
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => {
      toolRuns.push(city);
      return `sunny in ${city}`;
    },
  });

  beforeAll(async () => {
    ({ gw, mock, stop } = await gatewayWithUpstreams());
    // Every request of the process is recorded; the SDK's trace uploads never leave the machine.
    globalThis.fetch = async (input, init) => {
      const url = input instanceof Request ? input.url : String(input);
      fetched.push(url);
      if (!url.startsWith('https://api.openai.com/')) return realFetch(input, init);
      const headers = new Headers(init?.headers);
      uploads.push({ url, authorization: headers.get('authorization'), body: String(init?.body) });
      return new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } });
    };
    setTracingDisabled(true);
    client = new OpenAI({
      baseURL: `${gw.url}/api/v1`,
      apiKey: gw.apiKey,
      maxRetries: 0,
      fetch: async (url: string, init: RequestInit) => {
        const res = await fetch(url, init);
        exchanges.push({
          url: String(url),
          body: typeof init.body === 'string' ? JSON.parse(init.body) : {},
          status: res.status,
          dropped: res.headers.get('x-gatehouse-dropped-fields'),
        });
        return res;
      },
    });
    setDefaultOpenAIClient(client);
  });
  afterAll(async () => {
    globalThis.fetch = realFetch;
    await stop?.();
  });
  beforeEach(() => {
    mock.reset();
    exchanges = [];
    toolRuns.length = 0;
  });

  const upstream = () => mock.requests.filter((r) => r.format !== 'unknown');
  const views = () => upstream().map(wireView);

  it('uses the openai v7 the SDK depends on, on Node 20; every request goes to Gatehouse', async () => {
    expect(OPENAI_VERSION).toMatch(/^7\./);
    expect(process.versions.node).toMatch(/^20\./);
    fetched.length = 0;
    await run(new Agent({ name: 'a', model: 'test/gpt' }), 'hi');
    await getGlobalTraceProvider().forceFlush();
    expect(fetched.length).toBeGreaterThan(0);
    for (const url of fetched) expect(url.startsWith(gw.url)).toBe(true);
  });

  it('tracing on, the SDK uploads each run to api.openai.com with OPENAI_API_KEY; setTracingDisabled(true) stops it', async () => {
    // A user who put the Gatehouse key in OPENAI_API_KEY would send it to OpenAI with the traces.
    vi.stubEnv('OPENAI_API_KEY', gw.apiKey);
    try {
      setTracingDisabled(false);
      await run(new Agent({ name: 'traced agent', model: 'test/gpt' }), 'hi');
      await getGlobalTraceProvider().forceFlush();
      expect(uploads.length).toBeGreaterThan(0);
      expect(uploads[0]).toMatchObject({
        url: 'https://api.openai.com/v1/traces/ingest',
        authorization: `Bearer ${gw.apiKey}`,
      });
      expect(uploads.map((u) => u.body).join()).toContain('traced agent');

      uploads.length = 0;
      setTracingDisabled(true);
      await run(new Agent({ name: 'untraced agent', model: 'test/gpt' }), 'hi');
      await getGlobalTraceProvider().forceFlush();
      expect(uploads).toEqual([]);
    } finally {
      setTracingDisabled(true);
      vi.unstubAllEnvs();
    }
  });

  it("an agent without a model: the SDK's default model and its settings reach the OpenAI provider", async () => {
    mock.enqueue({ reply: { text: 'from the default model' } });
    const result = await run(new Agent({ name: 'assistant' }), 'hi');
    expect(result.finalOutput).toBe('from the default model');
    const sent = exchanges[0]!.body;
    expect(sent.model).toMatch(/^gpt-5/);
    expect(sent).toMatchObject({ reasoning: { effort: expect.any(String) }, text: { verbosity: 'low' } });
    expect(upstream()[0]?.path).toMatch(/^\/openai\//);
    expect(upstream()[0]?.body).toMatchObject({
      model: sent.model,
      reasoning: sent.reasoning,
      text: sent.text,
    });
  });

  describe.each(providers)('$model', (p) => {
    it('run(): the answer, the response id and the usage the SDK reports', async () => {
      mock.enqueue({ reply: { text: 'upstream says hi', usage: USAGE } });
      const agent = new Agent({ name: 'assistant', instructions: 'Be brief.', model: p.model });
      const result = await run(agent, 'say hi');
      expect(result.finalOutput).toBe('upstream says hi');
      expect(result.lastResponseId).toMatch(/^resp_/);
      expect(result.state.usage).toMatchObject({
        requests: 1,
        inputTokens: 20,
        outputTokens: 6,
        totalTokens: 26,
        inputTokensDetails: [{ cached_tokens: 8 }],
      });
      expect(exchanges.map((e) => [e.url, e.status])).toEqual([[`${gw.url}/api/v1/responses`, 200]]);
      const [view] = views();
      expect(view).toMatchObject({ model: p.upstream, system: 'Be brief.', stream: false });
      expect(view?.turns).toMatchObject([{ role: 'user', text: 'say hi' }]);
      expect(view?.auth?.key).not.toBe(gw.apiKey);
    });

    it('a zod function tool, called twice at once: both run, both outputs go back in the next request', async () => {
      const BERGEN = { id: 'call_w2', name: 'weather', arguments: { city: 'Bergen' } };
      mock.enqueue(
        { reply: { tool_calls: [CALL, BERGEN] } },
        { reply: { text: 'It is sunny in Oslo and Bergen.', usage: USAGE } },
      );
      const agent = new Agent({ name: 'assistant', model: p.model, tools: [weather] });
      const result = await run(agent, 'Weather in Oslo and Bergen?');
      expect(toolRuns.sort()).toEqual(['Bergen', 'Oslo']);
      expect(result.finalOutput).toBe('It is sunny in Oslo and Bergen.');
      expect(result.state.usage.requests).toBe(2);
      expect(result.state.usage.outputTokens).toBeGreaterThanOrEqual(6);
      // The SDK sent the calls and their outputs back as Responses items (Gemini's calls have no
      // id of their own: Gatehouse names them, each differently)…
      const input = exchanges[1]?.body.input as Record<string, unknown>[];
      const calls = input.filter((i) => i.type === 'function_call');
      const outputs = input.filter((i) => i.type === 'function_call_output');
      if (p.kind !== 'google') expect(calls.map((c) => c.call_id)).toEqual(['call_w1', 'call_w2']);
      expect(new Set(calls.map((c) => c.call_id)).size).toBe(2);
      expect(outputs.map((o) => [o.call_id, o.output])).toEqual([
        [calls[0]?.call_id, 'sunny in Oslo'],
        [calls[1]?.call_id, 'sunny in Bergen'],
      ]);
      // …and they reached the provider in its own format.
      const [first, second] = views();
      expect(first?.tools.map((t) => t.name)).toEqual(['weather']);
      expect(second?.turns.at(-2)?.toolCalls).toMatchObject([
        { name: 'weather', args: { city: 'Oslo' } },
        { name: 'weather', args: { city: 'Bergen' } },
      ]);
      const results = JSON.stringify(second?.turns.at(-1)?.toolResults);
      expect(second?.turns.at(-1)?.toolResults).toHaveLength(2);
      expect(results.indexOf('sunny in Oslo')).toBeLessThan(results.indexOf('sunny in Bergen'));
    });

    it('run({ stream: true }): a tool loop, text deltas, then the completed run with its usage', async () => {
      mock.enqueue(
        { reply: { reasoning: 'The user wants the weather.', tool_calls: [CALL], usage: USAGE } },
        { reply: { text: 'streamed words arrive in pieces', usage: USAGE } },
      );
      const agent = new Agent({ name: 'assistant', model: p.model, tools: [weather] });
      const result = await run(agent, 'stream please', { stream: true });
      const deltas: string[] = [];
      for await (const text of result.toTextStream()) deltas.push(text);
      await result.completed;
      expect(result.error).toBeNull();
      expect(deltas.length).toBeGreaterThan(1);
      expect(deltas.join('')).toBe('streamed words arrive in pieces');
      expect(result.finalOutput).toBe('streamed words arrive in pieces');
      expect(result.lastResponseId).toMatch(/^resp_/);
      expect(toolRuns).toEqual(['Oslo']);
      expect(result.state.usage).toMatchObject({
        requests: 2,
        inputTokens: 40,
        outputTokens: 12,
        inputTokensDetails: [{ cached_tokens: 8 }, { cached_tokens: 8 }],
        // (Anthropic counts thinking within output_tokens, not apart.)
        outputTokensDetails: Array(2).fill({ reasoning_tokens: p.kind === 'anthropic' ? 0 : 2 }),
      });
      const reasoning = result.newItems.find((i) => i.type === 'reasoning_item');
      expect(JSON.stringify(reasoning?.rawItem)).toContain('The user wants the weather.');
      expect(upstream().map((r) => r.stream)).toEqual([true, true]);
      expect(wireView(upstream()[1]!).turns.at(-1)?.toolResults).toHaveLength(1);
    });

    it('outputType: a json_schema text.format, reaching the provider as its structured output', async () => {
      mock.enqueue({ reply: { text: '{"city":"Oslo","celsius":12}' } });
      const agent = new Agent({
        name: 'forecaster',
        model: p.model,
        outputType: z.object({ city: z.string(), celsius: z.number().int().min(-90) }),
      });
      const result = await run(agent, 'Forecast for Oslo');
      expect(result.finalOutput).toEqual({ city: 'Oslo', celsius: 12 });
      const format = exchanges[0]?.body.text.format;
      expect(format).toMatchObject({ type: 'json_schema', name: 'output', strict: true });
      expect(format.schema.properties.celsius).toMatchObject({ type: 'integer', minimum: -90 });
      const body = upstream()[0]?.body;
      if (p.kind === 'openai') expect(body.text.format).toEqual(format);
      if (p.kind === 'google') {
        expect(body.generationConfig).toMatchObject({
          responseMimeType: 'application/json',
          responseSchema: { properties: { city: { type: 'STRING' } } },
        });
      }
      if (p.kind === 'anthropic') {
        // Claude's structured outputs enforce no numeric bounds: the model reads them instead.
        const schema = body.output_config.format.schema;
        expect(schema).toMatchObject({
          type: 'object',
          required: ['city', 'celsius'],
          additionalProperties: false,
        });
        expect(schema.properties.city).toEqual({ type: 'string' });
        expect(schema.properties.celsius.type).toBe('integer');
        expect(schema.properties.celsius).not.toHaveProperty('minimum');
        expect(schema.properties.celsius.description).toContain('minimum: -90');
        expect(schema).not.toHaveProperty('$schema');
      }
    });

    it('previousResponseId: the next run sends only its new input; the provider gets the conversation', async () => {
      mock.enqueue({ reply: { text: 'I will remember lighthouse.' } });
      const agent = new Agent({ name: 'assistant', instructions: 'Be brief.', model: p.model });
      const first = await run(agent, 'Remember the word lighthouse.');

      mock.enqueue({ reply: { tool_calls: [CALL] } }, { reply: { text: 'The word was lighthouse.' } });
      const withTool = agent.clone({ tools: [weather] });
      // Streamed: each response is stored before its stream ends, for the next request to name.
      const second = await run(withTool, 'Which word? And the weather in Oslo?', {
        previousResponseId: first.lastResponseId,
        stream: true,
      });
      await second.completed;
      expect(second.error).toBeNull();
      expect(second.finalOutput).toBe('The word was lighthouse.');
      expect(toolRuns).toEqual(['Oslo']);
      // The SDK chains each request to the previous response and sends only what is new.
      const [, ask, toolOutput] = exchanges.map((e) => e.body);
      expect(ask).toMatchObject({ previous_response_id: first.lastResponseId });
      expect(ask?.input).toEqual([{ role: 'user', content: 'Which word? And the weather in Oslo?' }]);
      expect(toolOutput?.previous_response_id).toMatch(/^resp_/);
      expect(toolOutput?.previous_response_id).not.toBe(first.lastResponseId);
      expect(toolOutput?.input).toEqual([
        expect.objectContaining({ type: 'function_call_output', output: 'sunny in Oslo' }),
      ]);
      // Gatehouse replaced the ids with the stored turns: no provider sees a Gatehouse response id.
      for (const r of upstream()) expect(JSON.stringify(r.body)).not.toMatch(/previous_response_id|resp_/);
      const last = views().at(-1)!;
      expect(last.system).toBe('Be brief.');
      expect(last.turns.map((t) => t.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
      expect(last.turns[0]?.text).toBe('Remember the word lighthouse.');
      expect(last.turns[1]?.text).toBe('I will remember lighthouse.');
      expect(last.turns[2]?.text).toBe('Which word? And the weather in Oslo?');
      expect(last.turns[3]?.toolCalls).toMatchObject([{ name: 'weather' }]);
      expect(last.turns[4]?.toolResults).toHaveLength(1);
    });

    it('OpenAIConversationsSession: two runs, the second sees the first; the items are in Gatehouse', async () => {
      const session = new OpenAIConversationsSession({ client });
      const agent = new Agent({ name: 'assistant', instructions: 'Be brief.', model: p.model });
      mock.enqueue({ reply: { text: 'I will remember lighthouse.' } }, { reply: { text: 'lighthouse' } });
      const first = await run(agent, 'Remember the word lighthouse.', { session });
      expect(first.finalOutput).toBe('I will remember lighthouse.');
      const second = await run(agent, 'Which word?', { session });
      expect(second.finalOutput).toBe('lighthouse');

      const id = await session.getSessionId();
      expect(id).toMatch(/^conv_/);
      expect(exchanges.map((e) => new URL(e.url).pathname.replace(id, '{id}'))).toEqual(
        expect.arrayContaining([
          '/api/v1/conversations',
          '/api/v1/conversations/{id}/items',
          '/api/v1/responses',
        ]),
      );
      // The second request carried the first turn, read back from the conversation.
      const last = views().at(-1)!;
      expect(last.system).toBe('Be brief.');
      expect(last.turns.map((t) => `${t.role}: ${t.text}`)).toEqual([
        'user: Remember the word lighthouse.',
        'assistant: I will remember lighthouse.',
        'user: Which word?',
      ]);
      const items = await session.getItems();
      expect(items.map((i: any) => [i.role, i.content?.[0]?.text])).toEqual([
        ['user', 'Remember the word lighthouse.'],
        ['assistant', 'I will remember lighthouse.'],
        ['user', 'Which word?'],
        ['assistant', 'lighthouse'],
      ]);
      await session.clearSession();
      await expect(client.conversations.retrieve(id)).rejects.toBeInstanceOf(NotFoundError);
    });

    it('run({ conversationId }): Gatehouse sends the conversation, then adds each turn to it', async () => {
      const { id } = await client.conversations.create({});
      const agent = new Agent({ name: 'assistant', model: p.model, tools: [weather] });
      mock.enqueue({ reply: { text: 'Noted: lighthouse.' } });
      await run(agent, 'Remember the word lighthouse.', { conversationId: id });
      mock.enqueue({ reply: { tool_calls: [CALL] } }, { reply: { text: 'lighthouse, and sunny.' } });
      const second = await run(agent, 'Which word? And the weather in Oslo?', { conversationId: id });
      expect(second.finalOutput).toBe('lighthouse, and sunny.');
      expect(toolRuns).toEqual(['Oslo']);
      // The SDK names the conversation and sends only what is new; the provider gets it all.
      expect(exchanges.at(-1)?.body.conversation).toBe(id);
      for (const r of upstream()) expect(JSON.stringify(r.body)).not.toContain(id);
      const last = views().at(-1)!;
      expect(last.turns.map((t) => t.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
      expect(last.turns[1]?.text).toBe('Noted: lighthouse.');
      expect(last.turns[3]?.toolCalls).toMatchObject([{ name: 'weather' }]);
      expect(last.turns[4]?.toolResults).toHaveLength(1);
      const items = await (client as any).conversations.items.list(id, { order: 'asc' });
      expect(items.data.map((i: any) => i.type)).toEqual([
        'message',
        'message',
        'message',
        'function_call',
        'function_call_output',
        'message',
      ]);
    });

    it('the model settings the SDK sends are taken, each as far as the provider has it', async () => {
      mock.enqueue(
        { reply: { reasoning: 'Oslo, then.', tool_calls: [CALL] } },
        { reply: { text: 'Sunny.' } },
      );
      const modelSettings: ModelSettings = {
        reasoning: { effort: 'low', summary: 'auto' },
        text: { verbosity: 'low' },
        store: false,
        parallelToolCalls: true,
        truncation: 'auto',
        maxTokens: 4000,
        toolChoice: 'auto',
        promptCacheRetention: '24h',
        providerData: {
          include: ['reasoning.encrypted_content'],
          metadata: { team: 'agents' },
          prompt_cache_key: 'agents-1',
          safety_identifier: 'user-1',
        },
      };
      const agent = new Agent({ name: 'assistant', model: p.model, tools: [weather], modelSettings });
      const result = await run(agent, 'Weather in Oslo?');
      expect(result.finalOutput).toBe('Sunny.');
      expect(exchanges.map((e) => e.status)).toEqual([200, 200]);
      const sent = exchanges[0]!.body;
      expect(sent).toMatchObject({
        store: false,
        include: ['reasoning.encrypted_content'],
        reasoning: { effort: 'low', summary: 'auto' },
        truncation: 'auto',
        parallel_tool_calls: true,
      });
      // The second request sends the reasoning item back (with OpenAI's encrypted content).
      expect(exchanges[1]!.body.input).toEqual(
        expect.arrayContaining([expect.objectContaining({ type: 'reasoning' })]),
      );
      const [first, second] = upstream() as [RecordedRequest, RecordedRequest];
      if (p.kind === 'openai') {
        // Passed through: OpenAI gets every field as the SDK sent it.
        const { model: _m, ...rest } = sent;
        expect(first.body).toEqual({ ...rest, model: 'gpt-x' });
        expect(second.body.input).toEqual(exchanges[1]!.body.input);
        expect(exchanges[0]!.dropped).toBeNull();
      } else {
        // Translated: what the provider has an equivalent for is carried, the rest dropped and listed.
        const dropped = exchanges[0]!.dropped?.split(',') ?? [];
        expect(dropped).toEqual(expect.arrayContaining(['truncation']));
        // Reasoning state comes back anyway: asking for it is not dropped.
        expect(dropped).not.toContain('include[0]');
        expect(JSON.stringify(first.body)).not.toMatch(/truncation|encrypted_content|"store"/);
        if (p.kind === 'anthropic') {
          expect(first.body).toMatchObject({
            max_tokens: 4000,
            thinking: { type: 'enabled' },
            metadata: { user_id: 'user-1' },
          });
          // The reasoning item the SDK sends back carries Claude's signed thinking block (in its
          // encrypted_content): the step after the tool call thinks too.
          expect(second.body).toMatchObject({ thinking: { type: 'enabled' } });
          expect(second.body.messages[1].content[0]).toMatchObject({
            type: 'thinking',
            signature: 'mock-signature',
          });
        } else {
          expect(first.body.generationConfig).toMatchObject({
            maxOutputTokens: 4000,
            thinkingConfig: { includeThoughts: true },
          });
        }
        expect(wireView(second).turns.at(-1)?.toolResults).toHaveLength(1);
      }
    });
  });

  describe.each(providers)('handoffs on $model', (p) => {
    it('handoffs: the transfer is a function tool on the wire; the next agent answers', async () => {
      mock.enqueue({ reply: { tool_calls: [{ id: 'call_h1', name: 'transfer_to_spanish_agent' }] } });
      mock.enqueue({ reply: { text: 'Hola, ¿qué tal?' } });
      const spanish = new Agent({
        name: 'spanish agent',
        instructions: 'Answer in Spanish.',
        model: p.model,
      });
      const triage = new Agent({
        name: 'triage',
        instructions: 'Hand Spanish speakers over.',
        model: p.model,
        handoffs: [spanish],
      });
      const result = await run(triage, 'Hola!');
      expect(result.finalOutput).toBe('Hola, ¿qué tal?');
      expect(result.lastAgent?.name).toBe('spanish agent');
      const [first, second] = views();
      expect(first?.system).toBe('Hand Spanish speakers over.');
      expect(first?.tools.map((t) => t.name)).toEqual(['transfer_to_spanish_agent']);
      expect(second?.system).toBe('Answer in Spanish.');
      expect(second?.turns.at(-2)?.toolCalls).toMatchObject([{ name: 'transfer_to_spanish_agent' }]);
      expect(JSON.stringify(second?.turns.at(-1)?.toolResults)).toContain('spanish agent');
    });
  });

  describe.each(providers)('OpenAIChatCompletionsModel on $model', (p) => {
    it('a tool loop over /chat/completions, then the same streamed', async () => {
      const model = new OpenAIChatCompletionsModel(client, p.model);
      const agent = new Agent({ name: 'assistant', instructions: 'Be brief.', model, tools: [weather] });
      mock.enqueue({ reply: { tool_calls: [CALL] } }, { reply: { text: 'Sunny in Oslo.', usage: USAGE } });
      const result = await run(agent, 'Weather in Oslo?');
      expect(result.finalOutput).toBe('Sunny in Oslo.');
      expect(toolRuns).toEqual(['Oslo']);
      expect(result.state.usage).toMatchObject({ requests: 2 });
      expect(result.state.usage.inputTokens).toBeGreaterThanOrEqual(20);
      expect(exchanges.map((e) => [e.url, e.status])).toEqual([
        [`${gw.url}/api/v1/chat/completions`, 200],
        [`${gw.url}/api/v1/chat/completions`, 200],
      ]);
      // (Gemini's calls have no id of their own: Gatehouse names them.)
      const [assistant, toolMessage] = (exchanges[1]?.body.messages as Record<string, any>[]).slice(-2);
      const callId = assistant?.tool_calls?.[0]?.id;
      expect(callId).toMatch(p.kind === 'google' ? /^call_/ : /^call_w1$/);
      expect(toolMessage).toMatchObject({ role: 'tool', tool_call_id: callId, content: 'sunny in Oslo' });
      const second = views()[1];
      expect(second?.turns.at(-1)?.toolResults).toHaveLength(1);

      mock.reset();
      mock.enqueue({ reply: { tool_calls: [CALL] } }, { reply: { text: 'Still sunny.', usage: USAGE } });
      const streamed = await run(agent, 'And now?', { stream: true });
      const deltas: string[] = [];
      for await (const text of streamed.toTextStream()) deltas.push(text);
      await streamed.completed;
      expect(deltas.join('')).toBe('Still sunny.');
      expect(streamed.finalOutput).toBe('Still sunny.');
      expect(streamed.state.usage).toMatchObject({ requests: 2 });
      expect(upstream().every((r) => r.stream)).toBe(true);
    });
  });

  it('Gemini 3 through /responses: the tool loop goes on, its call sent back with its own signature', async () => {
    // Gemini signs its function call; the signature travels in a reasoning item's encrypted_content.
    mock.enqueue(
      { reply: { thoughtSignature: 'GEMINI-SIG', tool_calls: [CALL] } },
      { reply: { text: 'Sunny in Oslo.' } },
    );
    const agent = new Agent({ name: 'assistant', model: 'google/gemini-3-flash', tools: [weather] });
    const result = await run(agent, 'Weather in Oslo?');
    expect(result.finalOutput).toBe('Sunny in Oslo.');
    const [first, second] = upstream();
    expect(first?.model).toBe('gemini-3-flash');
    expect(wireView(second!).turns[1]?.toolCalls).toMatchObject([
      { name: 'weather', signature: 'GEMINI-SIG' },
    ]);
  });

  it('errors reach the SDK as its own error classes; a stream dying upstream fails the run', async () => {
    const unknown = await run(new Agent({ name: 'a', model: 'test/nope' }), 'hi').catch((e) => e);
    expect(unknown).toBeInstanceOf(NotFoundError);
    expect(unknown.message).toContain('test/nope');

    mock.enqueue({ status: 429, error: { message: 'slow down' }, times: 2 });
    const limited = await run(new Agent({ name: 'a', model: 'test/claude' }), 'hi').catch((e) => e);
    expect(limited).toBeInstanceOf(RateLimitError);
    expect(limited.message).toContain('slow down');
    expect(JSON.stringify(limited)).not.toContain('sk-operator');

    mock.reset();
    mock.enqueue({ reply: { text: 'one two three four five six' }, dieAfterEvents: 3, times: 2 });
    const streamed = await run(new Agent({ name: 'a', model: 'test/gemini' }), 'hi', { stream: true });
    const failure = await (async () => {
      for await (const _ of streamed.toTextStream());
      await streamed.completed;
    })().catch((e) => e);
    expect(failure).toBeInstanceOf(ModelBehaviorError);
    expect(failure.message).toContain('response.failed');
  });

  it('an OpenAIProvider with baseURL and apiKey, on a Runner, reaches Gatehouse as well', async () => {
    const runner = new Runner({
      modelProvider: new OpenAIProvider({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey }),
    });
    mock.enqueue({ reply: { text: 'through the provider' } });
    const result = await runner.run(new Agent({ name: 'a', model: 'test/claude' }), 'hi');
    expect(result.finalOutput).toBe('through the provider');
    expect(upstream()).toHaveLength(1);
    expect(exchanges).toHaveLength(0);
  });
});
