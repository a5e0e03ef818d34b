/**
 * Web search across formats: a caller asks for web search in its own format (Claude Code's
 * WebSearch on /messages, a Responses `web_search` tool, chat `web_search_options`, OpenRouter's
 * `openrouter:web_search` tool, `web` plugin and `:online` model variant), the serving provider
 * runs its own search, and the searches and citations come back in the caller's format, streamed
 * or not; a workspace's `disabled_server_tools` refuses it (403) before anything goes upstream.
 * Real gateway, real sockets, the official clients, mock upstreams that answer a search as each
 * vendor does.
 */
import Anthropic from '@anthropic-ai/sdk';
import { OpenRouter } from '@openrouter/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/gateway.js';
import { geminiRequestProblems } from './support/gemini-request.js';
import { adminClient, client } from './support/http.js';
import { MOCK_SEARCH, type MockUpstream } from './support/mock-upstream.js';
import { startUpstreams } from './support/upstreams.js';

const HEADER = 'x-gatehouse-dropped-fields';
const [FIRST, SECOND] = MOCK_SEARCH.results as [
  { url: string; title: string },
  { url: string; title: string },
];
const PRICE = { prompt: 1, completion: 2, web_search: 0.01 };
const MODELS = [
  { id: 'ws/gpt', endpoints: [{ provider: 'openai', upstream_model: 'gpt-ws', pricing: PRICE }] },
  { id: 'ws/claude', endpoints: [{ provider: 'anthropic', upstream_model: 'claude-ws', pricing: PRICE }] },
  {
    id: 'ws/gemini',
    endpoints: [{ provider: 'google-ai-studio', upstream_model: 'gemini-ws', pricing: PRICE }],
  },
  {
    id: 'ws/gemini3',
    endpoints: [{ provider: 'google-ai-studio', upstream_model: 'gemini-3-pro-preview', pricing: PRICE }],
  },
  {
    id: 'ws/gemini25',
    endpoints: [{ provider: 'google-ai-studio', upstream_model: 'gemini-2.5-pro', pricing: PRICE }],
  },
  {
    id: 'ws/embed',
    kind: 'embeddings',
    endpoints: [{ provider: 'openai', upstream_model: 'embed-ws', pricing: PRICE }],
  },
];

/** What Claude Code's WebSearch tool sends: a request of its own whose only tool is web_search. */
const claudeCodeSearch = (model: string) => ({
  model,
  max_tokens: 1024,
  system: 'You are an assistant for performing a web search tool use',
  messages: [
    { role: 'user' as const, content: 'Perform a web search for the query: latest gatehouse release' },
  ],
  tools: [{ type: 'web_search_20250305' as const, name: 'web_search' as const, max_uses: 8 }],
});

const sseData = (text: string): any[] =>
  text
    .split('\n')
    .filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]')
    .map((l) => JSON.parse(l.slice(6)));

let gw: TestGateway;
let mock: MockUpstream;
let call: ReturnType<typeof client>;
let anthropic: Anthropic;
let openai: OpenAI;

beforeAll(async () => {
  const up = await startUpstreams(MODELS);
  mock = up.mock;
  gw = await startTestGateway('sqlite', { env: { ...up.env, GATEHOUSE_RATE_LIMIT_REQUESTS: '1000' } });
  await adminClient(gw.url)('POST', '/admin/credits', {
    organization_id: gw.organizationId,
    amount_usd: 100,
  });
  call = client(gw.url, gw.apiKey);
  anthropic = new Anthropic({ baseURL: `${gw.url}/api`, apiKey: gw.apiKey, maxRetries: 0 });
  openai = new OpenAI({ baseURL: `${gw.url}/api/v1`, apiKey: gw.apiKey, maxRetries: 0 });
});
afterAll(async () => {
  await gw?.stop();
  await mock?.close();
});
beforeEach(() => mock.reset());

const generation = async (id: string) => {
  await gw.services.accountant.flush();
  const res = await call('GET', `/generation?id=${encodeURIComponent(id)}`);
  expect(res.status, res.text).toBe(200);
  return res.body.data;
};

const upstreamBody = () => {
  expect(mock.requests).toHaveLength(1);
  return mock.requests[0]?.body;
};

describe("Claude Code's WebSearch on /messages, served by another provider", () => {
  it('an OpenAI model searches with web_search_options; the answer has the search blocks and cited text, the search billed', async () => {
    const raw = await anthropic.messages.create(claudeCodeSearch('ws/gpt')).withResponse();
    const msg = raw.data;
    const sent = upstreamBody();
    expect(sent.web_search_options).toEqual({});
    expect(sent.tools).toBeUndefined();
    // OpenAI's search has no cap on uses: dropped and listed.
    expect(raw.response.headers.get(HEADER)).toContain('web_search.max_uses');

    expect(msg.content.map((b) => b.type)).toEqual(['server_tool_use', 'web_search_tool_result', 'text']);
    const [use, result, text] = msg.content as any[];
    expect(use).toMatchObject({ name: 'web_search', id: expect.stringMatching(/^srvtoolu_/) });
    expect(result.tool_use_id).toBe(use.id);
    // OpenAI names only the pages it cites: the search's results are those.
    expect(result.content).toEqual([
      {
        type: 'web_search_result',
        url: FIRST.url,
        title: FIRST.title,
        encrypted_content: '',
        page_age: null,
      },
    ]);
    expect(text.citations).toEqual([
      {
        type: 'web_search_result_location',
        url: FIRST.url,
        title: FIRST.title,
        cited_text: text.text,
        encrypted_index: '',
      },
    ]);
    // OpenAI's usage does not count the search: an answer citing pages ran one.
    const gen = await generation(raw.response.headers.get('x-gatehouse-generation-id') as string);
    expect(gen.web_search_requests).toBe(1);
    expect(gen.total_cost).toBeCloseTo((gen.tokens_prompt * 1 + gen.tokens_completion * 2) / 1e6 + 0.01, 12);
  });

  it('a Gemini model searches with googleSearch; its queries and pages come back, its searches billed', async () => {
    const { data: msg, response } = await anthropic.messages
      .create(claudeCodeSearch('ws/gemini'))
      .withResponse();
    const sent = upstreamBody();
    expect(sent.tools).toEqual([{ googleSearch: {} }]);

    const [use, result, text] = msg.content as any[];
    expect(use).toMatchObject({
      type: 'server_tool_use',
      name: 'web_search',
      input: { query: MOCK_SEARCH.query },
    });
    expect(result.content.map((r: any) => [r.url, r.title])).toEqual([
      [FIRST.url, FIRST.title],
      [SECOND.url, SECOND.title],
    ]);
    expect(text.citations?.[0]).toMatchObject({ url: FIRST.url, title: FIRST.title });

    expect(msg.usage.server_tool_use).toEqual({ web_search_requests: 1, web_fetch_requests: 0 });
    const gen = await generation(response.headers.get('x-gatehouse-generation-id') as string);
    expect(gen.web_search_requests).toBe(1);
    expect(gen.total_cost).toBeCloseTo((gen.tokens_prompt * 1 + gen.tokens_completion * 2) / 1e6 + 0.01, 12);
  });

  it('streams the same blocks (the official client assembles them)', async () => {
    for (const model of ['ws/gpt', 'ws/gemini']) {
      mock.reset();
      const stream = anthropic.messages.stream(claudeCodeSearch(model));
      const msg = await stream.finalMessage();
      expect(msg.usage.server_tool_use?.web_search_requests).toBe(1);
      const id = (await stream.withResponse()).response.headers.get('x-gatehouse-generation-id') as string;
      expect((await generation(id)).web_search_requests).toBe(1);
      const types = msg.content.map((b) => b.type);
      expect(types).toContain('web_search_tool_result');
      expect(types).toContain('server_tool_use');
      const result = msg.content.find((b) => b.type === 'web_search_tool_result') as any;
      expect(result.content[0]).toMatchObject({
        type: 'web_search_result',
        url: FIRST.url,
        title: FIRST.title,
      });
      const text = msg.content.find((b) => b.type === 'text') as any;
      expect(text.citations?.[0]).toMatchObject({ type: 'web_search_result_location', url: FIRST.url });
    }
  });
});

describe('a Responses web_search tool served by Claude', () => {
  const body = {
    model: 'ws/claude',
    input: 'What is new in Gatehouse?',
    tools: [{ type: 'web_search' as const, search_context_size: 'low' as const }],
  };

  it('sends Anthropic its server tool; answers a web_search_call item and url_citation annotations', async () => {
    const res = await openai.responses.create(body).withResponse();
    const sent = upstreamBody();
    expect(sent.tools).toEqual([{ type: 'web_search_20250305', name: 'web_search' }]);
    expect(res.response.headers.get(HEADER)).toContain('web_search.search_context_size');

    const out = res.data.output;
    expect(out.map((i) => i.type)).toEqual(['web_search_call', 'message']);
    expect(out[0]).toMatchObject({
      type: 'web_search_call',
      status: 'completed',
      action: {
        type: 'search',
        query: MOCK_SEARCH.query,
        sources: [
          { type: 'url', url: FIRST.url },
          { type: 'url', url: SECOND.url },
        ],
      },
    });
    const text = (out[1] as any).content[0];
    expect(text.annotations).toEqual([
      {
        type: 'url_citation',
        url: FIRST.url,
        title: FIRST.title,
        start_index: 0,
        end_index: text.text.length,
      },
    ]);
    const gen = await generation(res.response.headers.get('x-gatehouse-generation-id') as string);
    expect(gen.web_search_requests).toBe(1);
  });

  it('streams the search events and the annotation as OpenAI does', async () => {
    const stream = await openai.responses.create({ ...body, stream: true });
    const types: string[] = [];
    let final: any;
    let added: any;
    for await (const ev of stream) {
      types.push(ev.type);
      if (ev.type === 'response.output_text.annotation.added') added = ev;
      if (ev.type === 'response.completed') final = ev.response;
    }
    const at = (t: string) => types.indexOf(t);
    expect(at('response.web_search_call.in_progress')).toBeGreaterThan(-1);
    expect(at('response.web_search_call.searching')).toBeGreaterThan(
      at('response.web_search_call.in_progress'),
    );
    expect(at('response.web_search_call.completed')).toBeGreaterThan(
      at('response.web_search_call.searching'),
    );
    expect(at('response.web_search_call.completed')).toBeLessThan(at('response.output_text.delta'));
    expect(added.annotation).toMatchObject({ type: 'url_citation', url: FIRST.url, title: FIRST.title });
    expect(final.output.map((i: any) => i.type)).toEqual(['web_search_call', 'message']);
    expect(final.output[1].content[0].annotations[0]).toMatchObject({ url: FIRST.url, start_index: 0 });
  });
});

describe('chat completions', () => {
  it('web_search_options on a Claude model: the server tool upstream, annotations back (streamed too)', async () => {
    const body = {
      model: 'ws/claude',
      messages: [{ role: 'user', content: 'What is new?' }],
      web_search_options: {
        search_context_size: 'high',
        user_location: { type: 'approximate', approximate: { country: 'DE', city: 'Berlin' } },
      },
    };
    const res = await call('POST', '/chat/completions', body);
    expect(res.status, res.text).toBe(200);
    expect(upstreamBody().tools).toEqual([
      {
        type: 'web_search_20250305',
        name: 'web_search',
        user_location: { type: 'approximate', country: 'DE', city: 'Berlin' },
      },
    ]);
    expect(res.headers.get(HEADER)).toContain('web_search.search_context_size');
    const message = res.body.choices[0].message;
    expect(message.annotations).toEqual([
      {
        type: 'url_citation',
        url_citation: {
          url: FIRST.url,
          title: FIRST.title,
          content: message.content,
          start_index: 0,
          end_index: message.content.length,
        },
      },
    ]);
    expect(message.web_search_calls).toBeUndefined();

    mock.reset();
    const streamed = await call('POST', '/chat/completions', { ...body, stream: true });
    const chunks = sseData(streamed.text);
    const annotated = chunks.flatMap((c) => c.choices?.[0]?.delta?.annotations ?? []);
    expect(annotated).toEqual(message.annotations);
    expect(chunks.some((c) => c.choices?.[0]?.delta?.web_search_calls)).toBe(false);
  });

  it("OpenRouter's openrouter:web_search tool on a Gemini model: Google's search, unmapped parameters listed", async () => {
    const res = await call('POST', '/chat/completions', {
      model: 'ws/gemini',
      messages: [{ role: 'user', content: 'What is new?' }],
      tools: [{ type: 'openrouter:web_search', parameters: { max_results: 3, engine: 'native' } }],
    });
    expect(res.status, res.text).toBe(200);
    expect(upstreamBody().tools).toEqual([{ googleSearch: {} }]);
    const dropped = res.headers.get(HEADER) ?? '';
    expect(dropped).toContain('tools[0].parameters.max_results');
    expect(dropped).toContain('tools[0].parameters.engine');
    expect(res.body.choices[0].message.annotations[0].url_citation).toMatchObject({ url: FIRST.url });
  });

  it('an openrouter:web_search tool on a lane to OpenAI becomes its web_search_options', async () => {
    const res = await call('POST', '/chat/completions', {
      model: 'ws/gpt',
      messages: [{ role: 'user', content: 'What is new?' }],
      tools: [{ type: 'openrouter:web_search', parameters: { search_context_size: 'low' } }],
    });
    expect(res.status, res.text).toBe(200);
    const sent = upstreamBody();
    expect(sent.web_search_options).toEqual({ search_context_size: 'low' });
    expect(sent.tools).toBeUndefined();
    // OpenAI's answer cites pages: one search billed (streamed too).
    expect((await generation(res.body.id)).web_search_requests).toBe(1);
    mock.reset();
    const streamed = await call('POST', '/chat/completions', {
      model: 'ws/gpt',
      messages: [{ role: 'user', content: 'What is new?' }],
      tools: [{ type: 'openrouter:web_search' }],
      stream: true,
    });
    expect(streamed.status, streamed.text).toBe(200);
    const id = streamed.headers.get('x-gatehouse-generation-id') as string;
    expect((await generation(id)).web_search_requests).toBe(1);
  });
  it('an openrouter:web_search tool with its settings beside `type` (as @openrouter/ai-sdk-provider 3 sends them)', async () => {
    const tools = [
      { type: 'openrouter:web_search', max_uses: 2, max_results: 5, search_context_size: 'low' },
    ];
    const ask = { messages: [{ role: 'user', content: 'What is new?' }], tools };
    const translated = await call('POST', '/chat/completions', { model: 'ws/claude', ...ask });
    expect(translated.status, translated.text).toBe(200);
    expect(upstreamBody().tools).toEqual([{ type: 'web_search_20250305', name: 'web_search', max_uses: 2 }]);
    expect(translated.headers.get(HEADER)).toBe('tools[0].max_results,web_search.search_context_size');
    mock.reset();
    const lane = await call('POST', '/chat/completions', { model: 'ws/gpt', ...ask });
    expect(lane.status, lane.text).toBe(200);
    expect(upstreamBody().web_search_options).toEqual({ search_context_size: 'low' });
    expect(lane.headers.get(HEADER)).toBe('tools[0].max_results,tools[0].max_uses');
  });

  it("an openrouter:web_search tool on /messages: Anthropic's server tool on its lane, Google's search translated", async () => {
    const tools = [
      { type: 'openrouter:web_search', parameters: { max_uses: 2, search_context_size: 'low' } },
      { name: 'lookup', input_schema: { type: 'object' } },
    ];
    const lane = await call('POST', '/messages', {
      model: 'ws/claude',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'What is new?' }],
      tools,
    });
    expect(lane.status, lane.text).toBe(200);
    expect(lane.headers.get('x-gatehouse-route')).toBe('passthrough');
    // In its place among the tools; the size Anthropic has no field for listed.
    expect(upstreamBody().tools).toEqual([
      { type: 'web_search_20250305', name: 'web_search', max_uses: 2 },
      { name: 'lookup', input_schema: { type: 'object' } },
    ]);
    expect(lane.headers.get(HEADER)).toContain('tools[0].parameters.search_context_size');
    mock.reset();
    const translated = await call('POST', '/messages', {
      model: 'ws/gemini',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'What is new?' }],
      tools: [tools[0]],
    });
    expect(translated.status, translated.text).toBe(200);
    expect(upstreamBody().tools).toEqual([{ googleSearch: {} }]);
    expect(translated.body.content.map((b: { type: string }) => b.type)).toContain('web_search_tool_result');
  });
});

describe("OpenRouter's web plugin and the :online variant", () => {
  const ask = { messages: [{ role: 'user', content: 'What is new?' }] };
  const plugins = [{ id: 'web', max_results: 2, max_uses: 3 }, { id: 'response-healing' }];

  it('plugin web on chat to Claude: the server tool upstream, annotations back, the rest listed', async () => {
    const res = await call('POST', '/chat/completions', { model: 'ws/claude', ...ask, plugins });
    expect(res.status, res.text).toBe(200);
    const sent = upstreamBody();
    expect(sent.tools).toEqual([{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }]);
    expect(sent.plugins).toBeUndefined();
    const dropped = res.headers.get(HEADER)?.split(',');
    expect(dropped).toEqual(['plugins.web.max_results', 'plugins.response-healing']);
    expect(res.body.gateway_metadata.dropped_fields).toEqual(dropped);
    expect(res.body.choices[0].message.annotations[0].url_citation).toMatchObject({ url: FIRST.url });
    expect((await generation(res.body.id)).web_search_requests).toBe(1);
  });

  it("plugin web on chat to Gemini: Google's search", async () => {
    const res = await call('POST', '/chat/completions', {
      model: 'ws/gemini',
      ...ask,
      plugins: [{ id: 'web' }],
    });
    expect(res.status, res.text).toBe(200);
    expect(upstreamBody().tools).toEqual([{ googleSearch: {} }]);
    expect(res.headers.get(HEADER)).toBeNull();
    expect(res.body.choices[0].message.annotations[0].url_citation).toMatchObject({ url: FIRST.url });
  });

  it('plugin web on the chat lane to OpenAI: its web_search_options, no plugins sent (streamed too)', async () => {
    const res = await call('POST', '/chat/completions', { model: 'ws/gpt', ...ask, plugins });
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get('x-gatehouse-route')).toBe('passthrough');
    const sent = upstreamBody();
    expect(sent.web_search_options).toEqual({});
    expect(sent.plugins).toBeUndefined();
    expect(res.headers.get(HEADER)?.split(',')).toEqual([
      'plugins.web.max_results',
      'plugins.response-healing',
      'plugins.web.max_uses',
    ]);
    expect((await generation(res.body.id)).web_search_requests).toBe(1);

    mock.reset();
    const streamed = await call('POST', '/chat/completions', {
      model: 'ws/gpt',
      ...ask,
      plugins: [{ id: 'web' }],
      stream: true,
    });
    expect(streamed.status, streamed.text).toBe(200);
    expect(upstreamBody().web_search_options).toEqual({});
  });

  it("plugin web on the Messages lane to Claude: Anthropic's server tool; on the Responses lane: a web_search tool", async () => {
    const msg = await call('POST', '/messages', {
      model: 'ws/claude',
      max_tokens: 100,
      ...ask,
      plugins: [{ id: 'web', user_location: { type: 'approximate', country: 'DE' } }],
    });
    expect(msg.status, msg.text).toBe(200);
    expect(msg.headers.get('x-gatehouse-route')).toBe('passthrough');
    const toClaude = upstreamBody();
    expect(toClaude.tools).toEqual([
      {
        type: 'web_search_20250305',
        name: 'web_search',
        user_location: { type: 'approximate', country: 'DE' },
      },
    ]);
    expect(toClaude.plugins).toBeUndefined();

    mock.reset();
    const res = await call('POST', '/responses', {
      model: 'ws/gpt',
      input: 'What is new?',
      plugins: [{ id: 'web', include_domains: ['docs.rs'] }],
    });
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get('x-gatehouse-route')).toBe('passthrough');
    expect(upstreamBody().tools).toEqual([{ type: 'web_search', filters: { allowed_domains: ['docs.rs'] } }]);
  });

  it(':online searches with the base model: routed, answered and recorded as it', async () => {
    const res = await call('POST', '/chat/completions', { model: 'ws/claude:online', ...ask });
    expect(res.status, res.text).toBe(200);
    const sent = upstreamBody();
    expect(sent.model).toBe('claude-ws');
    expect(sent.tools).toEqual([{ type: 'web_search_20250305', name: 'web_search' }]);
    expect(res.body.model).toBe('ws/claude');
    expect(res.headers.get('x-gatehouse-model')).toBe('ws/claude');
    const gen = await generation(res.body.id);
    expect(gen).toMatchObject({ model: 'ws/claude', requested_model: 'ws/claude', web_search_requests: 1 });

    // A translated Messages answer names the base model too; the lane gets OpenAI's search.
    mock.reset();
    const msg = await anthropic.messages.create({
      model: 'ws/gemini:online',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'What is new?' }],
    });
    expect(upstreamBody().tools).toEqual([{ googleSearch: {} }]);
    expect(msg.model).toBe('ws/gemini');
    expect(msg.content.map((b) => b.type)).toContain('web_search_tool_result');
    mock.reset();
    const lane = await call('POST', '/chat/completions', { model: 'ws/gpt:online', ...ask });
    expect(lane.status, lane.text).toBe(200);
    expect(upstreamBody()).toMatchObject({ model: 'gpt-ws', web_search_options: {} });
  });

  it(':online in the models fallbacks; an unknown model stays unknown', async () => {
    const res = await call('POST', '/chat/completions', { models: ['ws/claude:online', 'ws/gpt'], ...ask });
    expect(res.status, res.text).toBe(200);
    expect(upstreamBody().tools).toEqual([{ type: 'web_search_20250305', name: 'web_search' }]);
    expect(res.body.model).toBe('ws/claude');
    const unknown = await call('POST', '/chat/completions', { model: 'nobody/nothing:online', ...ask });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.message).toContain('nobody/nothing');
  });

  it('an unknown plugin is listed dropped, the call served (translated and on a lane)', async () => {
    for (const model of ['ws/claude', 'ws/gpt']) {
      mock.reset();
      const res = await call('POST', '/chat/completions', {
        model,
        ...ask,
        plugins: [
          { id: 'no-such-plugin', anything: 1 },
          { id: 'file-parser', enabled: false },
        ],
      });
      expect(res.status, res.text).toBe(200);
      expect(res.headers.get(HEADER)).toBe('plugins.no-such-plugin');
      const sent = upstreamBody();
      expect(sent.plugins).toBeUndefined();
      expect(sent.tools).toBeUndefined();
      expect(sent.web_search_options).toBeUndefined();
    }
  });

  it('a malformed plugins list is a 400 in the caller format, nothing sent upstream', async () => {
    const chat = await call('POST', '/chat/completions', { model: 'ws/gpt', ...ask, plugins: { id: 'web' } });
    expect(chat.status).toBe(400);
    expect(chat.body.error.message).toContain('plugins');
    const noId = await call('POST', '/chat/completions', {
      model: 'ws/claude',
      ...ask,
      plugins: [{ max: 1 }],
    });
    expect(noId.status).toBe(400);
    expect(noId.body.error.message).toContain('plugins[0].id');
    const err = await anthropic.messages
      .create({
        model: 'ws/claude',
        max_tokens: 10,
        messages: [{ role: 'user', content: 'hi' }],
        plugins: ['web'],
      } as never)
      .catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(err.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(mock.requests).toHaveLength(0);
  });

  it("through OpenRouter's SDK: chat.send with plugins, its response validation on", async () => {
    const sdk = new OpenRouter({
      serverURL: `${gw.url}/api/v1`,
      apiKey: gw.apiKey,
      retryConfig: { strategy: 'none' },
    });
    const res = await sdk.chat.send({
      chatRequest: {
        model: 'ws/claude',
        messages: [{ role: 'user', content: 'What is new?' }],
        plugins: [{ id: 'web', maxUses: 2, searchPrompt: 'Results:' }, { id: 'moderation' }],
      },
    });
    if (Symbol.asyncIterator in res) throw new Error('expected a JSON body');
    expect(upstreamBody().tools).toEqual([{ type: 'web_search_20250305', name: 'web_search', max_uses: 2 }]);
    expect(res.model).toBe('ws/claude');
    expect(res.choices[0]?.message.content).toEqual(expect.any(String));
    const gen = await generation(res.id);
    expect(gen.web_search_requests).toBe(1);
    // The generation keeps what was not applied.
    expect(gen.gateway_metadata.dropped_fields).toEqual(['plugins.web.search_prompt', 'plugins.moderation']);
  });

  it("a translated Responses answer's tools echo the caller's web search tool", async () => {
    const res = await openai.responses.create({
      model: 'ws/claude',
      input: 'What is new?',
      tools: [
        { type: 'function', name: 'lookup', parameters: { type: 'object', properties: {} }, strict: false },
        { type: 'web_search', search_context_size: 'low' },
      ],
    });
    expect(res.tools).toEqual([
      {
        type: 'function',
        name: 'lookup',
        description: null,
        parameters: { type: 'object', properties: {} },
        strict: false,
      },
      { type: 'web_search', search_context_size: 'low', user_location: null, filters: null },
    ]);
  });
});

describe('Gemini 3 on the Gemini API: Google Search beside function tools', () => {
  const WEATHER = {
    type: 'function',
    function: {
      name: 'get_weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } } },
    },
  };
  const TOOLS = [WEATHER, { type: 'openrouter:web_search' }];
  const ASK = { role: 'user', content: 'Is the new release out, and the weather in Oslo?' };
  // What Gemini 3 answers with its server-side tool invocations exposed: the search it ran (call
  // and response, each signed) between the text, then the caller's function.
  const SEARCH_CALL = {
    toolCall: { id: 'srv-1', toolType: 'GOOGLE_SEARCH_WEB', args: { queries: [MOCK_SEARCH.query] } },
    thoughtSignature: 'SRV-CALL-SIG',
  };
  const SEARCH_RESPONSE = {
    toolResponse: { id: 'srv-1', toolType: 'GOOGLE_SEARCH_WEB', response: { search_suggestions: '<p/>' } },
    thoughtSignature: 'SRV-RESP-SIG',
  };
  const FUNCTION_CALL = {
    functionCall: { id: 'fc-1', name: 'get_weather', args: { city: 'Oslo' } },
    thoughtSignature: 'FC-SIG',
  };
  const GROUNDING = {
    webSearchQueries: [MOCK_SEARCH.query],
    groundingChunks: [{ web: { uri: FIRST.url, title: FIRST.title } }],
    groundingSupports: [
      { segment: { startIndex: 11, endIndex: 30, text: 'Release 2.0 is out.' }, groundingChunkIndices: [0] },
    ],
  };
  const USAGE = { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 };
  const candidate = (parts: unknown[], extra: object = {}) => ({
    candidates: [{ content: { role: 'model', parts }, index: 0, ...extra }],
    modelVersion: 'gemini-3-pro-preview',
    responseId: 'resp-g3',
  });
  const ANSWER = {
    ...candidate(
      [{ text: 'Searching. ' }, SEARCH_CALL, SEARCH_RESPONSE, { text: 'Release 2.0 is out.' }, FUNCTION_CALL],
      { finishReason: 'STOP', groundingMetadata: GROUNDING },
    ),
    usageMetadata: USAGE,
  };
  /** The same answer streamed: the search's parts arrive on events of their own. */
  const STREAM = [
    { data: { ...candidate([{ text: 'Searching. ' }]), usageMetadata: { promptTokenCount: 10 } } },
    { data: candidate([SEARCH_CALL, { text: '' }]) },
    { data: candidate([SEARCH_RESPONSE]) },
    {
      data: {
        ...candidate([{ text: 'Release 2.0 is out.' }, FUNCTION_CALL], {
          finishReason: 'STOP',
          groundingMetadata: GROUNDING,
        }),
        usageMetadata: USAGE,
      },
    },
  ];
  /** The model turn the next request must carry: Gemini's parts in their order, unchanged. */
  const MODEL_TURN = {
    role: 'model',
    parts: [
      { text: 'Searching. ' },
      SEARCH_CALL,
      SEARCH_RESPONSE,
      { text: 'Release 2.0 is out.' },
      { functionCall: { name: 'get_weather', args: { city: 'Oslo' } }, thoughtSignature: 'FC-SIG' },
    ],
  };

  /** The second turn: the assistant message as received, and the function's result. */
  const secondTurn = (assistant: unknown, callId: string) => ({
    model: 'ws/gemini3',
    tools: TOOLS,
    messages: [ASK, assistant, { role: 'tool', tool_call_id: callId, content: '{"temp":3}' }],
  });
  const expectSentBack = () => {
    const sent = upstreamBody();
    expect(geminiRequestProblems(sent)).toEqual([]);
    expect(sent.contents).toEqual([
      { role: 'user', parts: [{ text: ASK.content }] },
      MODEL_TURN,
      { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { temp: 3 } } }] },
    ]);
  };

  it('sends both tools with the flag; only the function comes back as a tool call; the parts go back in order', async () => {
    mock.enqueue({ body: ANSWER });
    const res = await call('POST', '/chat/completions', {
      model: 'ws/gemini3',
      messages: [ASK],
      tools: TOOLS,
    });
    expect(res.status, res.text).toBe(200);
    const sent = upstreamBody();
    expect(sent.tools).toEqual([
      {
        functionDeclarations: [
          {
            name: 'get_weather',
            parameters: { type: 'OBJECT', properties: { city: { type: 'STRING' } } },
          },
        ],
      },
      { googleSearch: {} },
    ]);
    expect(sent.toolConfig).toEqual({ includeServerSideToolInvocations: true });
    expect(geminiRequestProblems(sent)).toEqual([]);
    expect(res.headers.get(HEADER) ?? '').not.toContain('web_search');

    const message = res.body.choices[0].message;
    expect(res.body.choices[0].finish_reason).toBe('tool_calls');
    expect(message.content).toBe('Searching. Release 2.0 is out.');
    expect(message.tool_calls).toEqual([
      { id: 'fc-1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
    ]);
    expect(message.annotations[0].url_citation).toMatchObject({
      url: FIRST.url,
      start_index: 11,
      end_index: 30,
    });
    expect((await generation(res.body.id)).web_search_requests).toBe(1);

    mock.reset();
    mock.enqueue({ reply: { text: 'It is 3°C.' } });
    const next = await call('POST', '/chat/completions', secondTurn(message, 'fc-1'));
    expect(next.status, next.text).toBe(200);
    expectSentBack();
  });

  it('streamed: the same tool call and state; the assembled message sent back carries the parts in order', async () => {
    mock.enqueue({ stream: STREAM });
    const res = await call('POST', '/chat/completions', {
      model: 'ws/gemini3',
      messages: [ASK],
      tools: TOOLS,
      stream: true,
    });
    expect(res.status, res.text).toBe(200);
    expect(upstreamBody().toolConfig).toEqual({ includeServerSideToolInvocations: true });
    const deltas = sseData(res.text).flatMap((c) => (c.choices?.[0] ? [c.choices[0]] : []));
    const toolCalls = deltas.flatMap((c) => c.delta?.tool_calls ?? []);
    expect(toolCalls.map((t: any) => [t.id, t.function.name])).toEqual([['fc-1', 'get_weather']]);
    expect(deltas.find((c) => c.finish_reason)?.finish_reason).toBe('tool_calls');
    // The message as a client assembles it: content joined, the reasoning_details fragments as sent.
    const assistant = {
      role: 'assistant',
      content: deltas.map((c) => c.delta?.content ?? '').join(''),
      tool_calls: toolCalls.map(({ index: _, ...t }: any) => t),
      reasoning_details: deltas.flatMap((c) => c.delta?.reasoning_details ?? []),
    };
    expect(assistant.content).toBe('Searching. Release 2.0 is out.');

    mock.reset();
    mock.enqueue({ reply: { text: 'It is 3°C.' } });
    const next = await call('POST', '/chat/completions', { ...secondTurn(assistant, 'fc-1'), stream: true });
    expect(next.status, next.text).toBe(200);
    expectSentBack();
  });

  it("on /responses, streamed or not: the reasoning items' encrypted_content carries the parts back", async () => {
    const tools = [
      { type: 'function', name: 'get_weather', parameters: WEATHER.function.parameters },
      { type: 'web_search' },
    ];
    const input = [{ role: 'user', content: ASK.content }];
    for (const stream of [false, true]) {
      mock.reset();
      mock.enqueue(stream ? { stream: STREAM } : { body: ANSWER });
      const first = await call('POST', '/responses', { model: 'ws/gemini3', input, tools, stream });
      expect(first.status, first.text).toBe(200);
      expect(upstreamBody().toolConfig).toEqual({ includeServerSideToolInvocations: true });
      const answer = stream
        ? sseData(first.text).find((e) => e.type === 'response.completed').response
        : first.body;
      const calls = answer.output.filter((o: any) => o.type === 'function_call');
      expect(calls.map((c: any) => [c.call_id, c.name])).toEqual([['fc-1', 'get_weather']]);

      mock.reset();
      mock.enqueue({ reply: { text: 'It is 3°C.' } });
      const output = { type: 'function_call_output', call_id: 'fc-1', output: '{"temp":3}' };
      const next = await call('POST', '/responses', {
        model: 'ws/gemini3',
        input: [...input, ...answer.output, output],
        tools,
      });
      expect(next.status, next.text).toBe(200);
      expectSentBack();
    }
  });

  it('on /messages: the redacted_thinking block Gatehouse adds carries the parts back', async () => {
    mock.enqueue({ body: ANSWER });
    const tools = [
      { type: 'web_search_20250305' as const, name: 'web_search' as const },
      {
        name: 'get_weather',
        input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } },
      },
    ];
    const ask = { role: 'user' as const, content: ASK.content };
    const first = await anthropic.messages.create({
      model: 'ws/gemini3',
      max_tokens: 100,
      messages: [ask],
      tools,
    });
    expect(upstreamBody().toolConfig).toEqual({ includeServerSideToolInvocations: true });
    const uses = first.content.filter((b) => b.type === 'tool_use');
    expect(uses.map((b) => [b.id, b.name])).toEqual([['fc-1', 'get_weather']]);

    mock.reset();
    mock.enqueue({ reply: { text: 'It is 3°C.' } });
    await anthropic.messages.create({
      model: 'ws/gemini3',
      max_tokens: 100,
      tools,
      messages: [
        ask,
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'fc-1', content: '{"temp":3}' }] },
      ],
    });
    expectSentBack();
  });

  it('Gemini 2 on the same provider: a search offered beside functions is left out and listed', async () => {
    const res = await call('POST', '/responses', {
      model: 'ws/gemini25',
      input: ASK.content,
      tools: [
        { type: 'function', name: 'get_weather', parameters: WEATHER.function.parameters },
        { type: 'web_search' },
      ],
    });
    expect(res.status, res.text).toBe(200);
    const sent = upstreamBody();
    expect(sent.tools.map(Object.keys)).toEqual([['functionDeclarations']]);
    expect(sent).not.toHaveProperty('toolConfig');
    expect(res.headers.get(HEADER)?.split(',')).toContain('web_search');
  });

  it('Gemini 2: a search asked for beside functions is a 400 in the caller format naming it, nothing sent', async () => {
    // Every chat spelling of an explicit search: the tool, the plugin, the option, :online; streamed too.
    const chats = [
      { model: 'ws/gemini25', tools: TOOLS },
      { model: 'ws/gemini25', tools: TOOLS, stream: true },
      { model: 'ws/gemini25', tools: [WEATHER], plugins: [{ id: 'web' }] },
      { model: 'ws/gemini25', tools: [WEATHER], web_search_options: {} },
      { model: 'ws/gemini25:online', tools: [WEATHER] },
    ];
    for (const body of chats) {
      const res = await call('POST', '/chat/completions', { messages: [ASK], ...body });
      expect(res.status, res.text).toBe(400);
      expect(res.body.error.message).toContain(
        'web_search cannot be sent to this provider: this model does not search the web beside function tools',
      );
    }
    const err = await anthropic.messages
      .create({
        model: 'ws/gemini25',
        max_tokens: 100,
        messages: [{ role: 'user', content: ASK.content }],
        tools: [
          { type: 'web_search_20250305', name: 'web_search' },
          { name: 'get_weather', input_schema: { type: 'object', properties: {} } },
        ],
      })
      .catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(err.message).toContain('web_search cannot be sent to this provider');
    expect(mock.requests).toHaveLength(0);
  });

  it('Gemini 2 with a fallback model that searches beside functions: the fallback serves it', async () => {
    const res = await call('POST', '/chat/completions', {
      models: ['ws/gemini25', 'ws/claude'],
      messages: [ASK],
      tools: TOOLS,
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.model).toBe('ws/claude');
    expect(upstreamBody().tools.map((t: any) => t.name)).toEqual(['get_weather', 'web_search']);
    // The same request to Gemini 3 on the Gemini API: both tools and the flag go to Google.
    mock.reset();
    const three = await call('POST', '/chat/completions', {
      model: 'ws/gemini3',
      messages: [ASK],
      tools: TOOLS,
    });
    expect(three.status, three.text).toBe(200);
    expect(upstreamBody().tools.map(Object.keys)).toEqual([['functionDeclarations'], ['googleSearch']]);
    expect(upstreamBody().toolConfig).toEqual({ includeServerSideToolInvocations: true });
  });
});

describe("a workspace's disabled_server_tools", () => {
  let workspaceId: string;
  const mgmt = () => client(gw.url, gw.managementKey);

  beforeAll(async () => {
    const list = await mgmt()('GET', '/workspaces');
    expect(list.status, list.text).toBe(200);
    workspaceId = list.body.data.find((w: any) => w.is_default).id;
    const set = await mgmt()('PATCH', `/workspaces/${workspaceId}`, {
      disabled_server_tools: ['openrouter:web_search'],
    });
    expect(set.status, set.text).toBe(200);
  });
  afterAll(async () => {
    await mgmt()('PATCH', `/workspaces/${workspaceId}`, { disabled_server_tools: null });
  });

  it('refuses every spelling of web search with a 403 in the caller format, on lanes and translations', async () => {
    // A lane (/messages to Claude) and a translation (/messages to Gemini).
    for (const model of ['ws/claude', 'ws/gemini']) {
      const err = await anthropic.messages.create(claudeCodeSearch(model)).catch((e) => e);
      expect(err).toBeInstanceOf(Anthropic.PermissionDeniedError);
      expect(err.error).toMatchObject({ type: 'error', error: { type: 'permission_error' } });
      expect(err.message).toContain('openrouter:web_search');
    }
    const chat = await call('POST', '/chat/completions', {
      model: 'ws/gpt',
      messages: [{ role: 'user', content: 'hi' }],
      web_search_options: {},
    });
    expect(chat.status).toBe(403);
    expect(chat.body.error.message).toContain('openrouter:web_search');
    const responses = await openai.responses
      .create({ model: 'ws/claude', input: 'hi', tools: [{ type: 'web_search_preview' }] })
      .catch((e) => e);
    expect(responses).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(mock.requests).toHaveLength(0);

    // The web plugin and the :online variant are web search too.
    for (const body of [
      { model: 'ws/gpt', plugins: [{ id: 'web' }] },
      { model: 'ws/claude', plugins: [{ id: 'web' }] },
      { model: 'ws/gpt:online' },
      { models: ['ws/gemini', 'ws/claude:online'] },
    ]) {
      const res = await call('POST', '/chat/completions', {
        ...body,
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(res.status, JSON.stringify(body)).toBe(403);
      expect(res.body.error.message).toContain('openrouter:web_search');
    }
    const lane = await call('POST', '/messages', {
      model: 'ws/claude',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'hi' }],
      plugins: [{ id: 'web' }],
    });
    expect(lane.status).toBe(403);
    expect(lane.body.error.type).toBe('permission_error');
    expect(mock.requests).toHaveLength(0);

    // A call without the tool goes through.
    const plain = await call('POST', '/chat/completions', {
      model: 'ws/gpt',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(plain.status, plain.text).toBe(200);
  });

  it('does not refuse an embeddings call whose body names the web plugin: embeddings run no tool', async () => {
    const res = await call('POST', '/embeddings', {
      model: 'ws/embed',
      input: 'hi',
      plugins: [{ id: 'web' }],
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toHaveLength(1);
    expect(mock.requests).toHaveLength(1);
    expect(mock.requests[0]?.body).not.toHaveProperty('plugins');
  });
});
