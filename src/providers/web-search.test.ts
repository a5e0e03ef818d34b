/**
 * Web search through the canonical request, golden shapes: each caller format's way of asking,
 * each provider's search tool and answer, and the answer in each caller format.
 */
import { describe, expect, it } from 'vitest';
import { assertTranslatable, droppedFields } from '../formats/capabilities.js';
import type { ChatRequest, ChatResponse } from '../formats/chat.js';
import { chatRequestFromBody } from '../formats/chat-edge.js';
import { chatResponseToMessages, messagesRequestToChat } from '../formats/messages.js';
import { chatResponseToResponses, responsesRequestToChat } from '../formats/responses.js';
import { laneWebSearch, serverToolsOf } from '../formats/web-search.js';
import { AnthropicStreamMapper, fromAnthropicResponse, toAnthropicRequest } from './anthropic/wire.js';
import { fromGeminiResponse, mapGrounding, toGeminiRequest } from './google/wire.js';
import { fromOpenAiResponse, toOpenAiRequest } from './openai/wire.js';

const user = [{ role: 'user' as const, content: 'search' }];
const location = { type: 'approximate' as const, city: 'Paris', country: 'FR' };

describe('asking for web search in each caller format', () => {
  it("Messages: Anthropic's server tool (either version); search history dropped and listed", () => {
    const req = messagesRequestToChat({
      model: 'm',
      max_tokens: 10,
      messages: [
        { role: 'user', content: 'q' },
        {
          role: 'assistant',
          content: [
            { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'q' } },
            { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [] },
            { type: 'text', text: 'answer', citations: [{ type: 'web_search_result_location' }] },
          ],
        },
        { role: 'user', content: 'more' },
      ],
      tools: [
        {
          type: 'web_search_20260209',
          name: 'web_search',
          max_uses: 8,
          blocked_domains: ['x.com'],
          user_location: location,
        },
      ],
    });
    expect(req.web_search).toEqual({ max_uses: 8, blocked_domains: ['x.com'], user_location: location });
    expect(req.tools).toBeUndefined();
    expect(req.messages[1]).toEqual({ role: 'assistant', content: 'answer' });
    expect(req.dropped).toEqual(['messages[1].content[0]', 'messages[1].content[1]']);
  });

  it('Messages: a tool_choice forcing the search is left to the model (listed)', () => {
    const body = {
      model: 'm',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'q' }],
      tools: [{ type: 'web_search_20250305', name: 'web_search' }],
    };
    for (const tool_choice of [{ type: 'tool', name: 'web_search' }, { type: 'any' }]) {
      const req = messagesRequestToChat({ ...body, tool_choice });
      expect(req.tool_choice).toBeUndefined();
      expect(req.dropped).toEqual(['tool_choice']);
    }
    expect(messagesRequestToChat({ ...body, tool_choice: { type: 'auto' } }).tool_choice).toBe('auto');
  });

  it('Chat Completions: web_search_options (location unwrapped) and openrouter:web_search', () => {
    const req = chatRequestFromBody({
      model: 'm',
      messages: user,
      web_search_options: {
        search_context_size: 'low',
        user_location: { type: 'approximate', approximate: { city: 'Paris', country: 'FR' } },
      },
    });
    expect(req.web_search).toEqual({ search_context_size: 'low', user_location: location });
    const or = chatRequestFromBody({
      model: 'm',
      messages: user,
      tools: [
        {
          type: 'openrouter:web_search',
          parameters: { max_results: 5, excluded_domains: ['a.com'], max_uses: 2 },
        },
      ],
    });
    expect(or.web_search).toEqual({ max_uses: 2, blocked_domains: ['a.com'] });
    expect(or.tools).toBeUndefined();
    expect(or.dropped).toEqual(['tools[0].parameters.max_results']);
    expect(() =>
      chatRequestFromBody({
        model: 'm',
        messages: user,
        web_search_options: { user_location: { type: 'exact' } },
      }),
    ).toThrow(/^web_search_options\.user_location\.type:/);
  });

  it('Responses: web_search / web_search_preview tools, filters.allowed_domains; history items dropped', () => {
    const req = responsesRequestToChat({
      model: 'm',
      input: [
        { type: 'message', role: 'user', content: 'q' },
        { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'q' } },
        {
          type: 'message',
          role: 'assistant',
          content: [{ type: 'output_text', text: 'a', annotations: [] }],
        },
      ],
      tools: [{ type: 'web_search', filters: { allowed_domains: ['docs.rs'] }, search_context_size: 'high' }],
    });
    expect(req.web_search).toEqual({
      allowed_domains: ['docs.rs'],
      search_context_size: 'high',
      origin: 'web_search',
    });
    expect(req.dropped).toEqual(['input[1]']);
    const forced = responsesRequestToChat({
      model: 'm',
      input: 'q',
      tools: [{ type: 'web_search_preview' }],
      tool_choice: { type: 'web_search_preview' },
    });
    expect(forced.tool_choice).toBeUndefined();
    expect(forced.dropped).toEqual(['tool_choice']);
  });

  it('every spelling is openrouter:web_search for disabled_server_tools', () => {
    expect(serverToolsOf({ web_search_options: {} })).toEqual(['openrouter:web_search']);
    for (const type of ['web_search_20250305', 'web_search_preview', 'web_search', 'openrouter:web_search'])
      expect(serverToolsOf({ tools: [{ type }, { type: 'function' }] })).toEqual(['openrouter:web_search']);
    expect(serverToolsOf({ tools: [{ type: 'openrouter:datetime' }] })).toEqual(['openrouter:datetime']);
    expect(serverToolsOf({ tools: [{ type: 'function', function: { name: 'web_search' } }] })).toEqual([]);
  });
});

const search: ChatRequest = {
  model: 'm',
  messages: user,
  web_search: {
    max_uses: 3,
    allowed_domains: ['a.com'],
    blocked_domains: ['b.com'],
    user_location: location,
    search_context_size: 'medium',
  },
};

describe("each provider's own search", () => {
  it('Anthropic: the web_search server tool (allowed domains win), context size dropped', () => {
    expect(toAnthropicRequest(search, false).tools).toEqual([
      {
        type: 'web_search_20250305',
        name: 'web_search',
        max_uses: 3,
        allowed_domains: ['a.com'],
        user_location: location,
      },
    ]);
    expect(droppedFields(search, 'anthropic')).toEqual([
      'web_search.blocked_domains',
      'web_search.search_context_size',
    ]);
  });

  it('OpenAI: web_search_options with its nested location; caps and domain lists dropped', () => {
    for (const flavor of ['openai', 'openai-compatible'] as const)
      expect(toOpenAiRequest(search, flavor, false).web_search_options).toEqual({
        search_context_size: 'medium',
        user_location: { type: 'approximate', approximate: { city: 'Paris', country: 'FR' } },
      });
    expect(droppedFields(search, 'openai')).toEqual([
      'web_search.max_uses',
      'web_search.allowed_domains',
      'web_search.blocked_domains',
    ]);
  });

  it('Gemini: a googleSearch tool beside the functions; every setting dropped', () => {
    const body = toGeminiRequest({
      ...search,
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
    });
    expect(body.tools).toEqual([
      { functionDeclarations: [expect.objectContaining({ name: 'f' })] },
      { googleSearch: {} },
    ]);
    expect(droppedFields(search, 'google')).toHaveLength(5);
  });

  it("Bedrock's Converse refuses it by name", () => {
    expect(() => assertTranslatable(search, 'anthropic', ['web_search'])).toThrow(
      'web_search cannot be sent to this provider: the provider has no web search of its own',
    );
    expect(() => assertTranslatable(search, 'anthropic')).not.toThrow();
  });
});

const anthropicAnswer = {
  id: 'msg_1',
  model: 'claude',
  stop_reason: 'end_turn',
  content: [
    { type: 'text', text: 'Let me look. ' },
    { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'gatehouse' } },
    {
      type: 'web_search_tool_result',
      tool_use_id: 'srvtoolu_1',
      content: [{ type: 'web_search_result', url: 'https://a.com', title: 'A', encrypted_content: 'e' }],
    },
    {
      type: 'text',
      text: 'It is a gateway.',
      citations: [
        {
          type: 'web_search_result_location',
          url: 'https://a.com',
          title: 'A',
          cited_text: 'a gateway',
          encrypted_index: 'i',
        },
      ],
    },
  ],
  usage: { input_tokens: 10, output_tokens: 5, server_tool_use: { web_search_requests: 1 } },
};

const expectedAnswer = {
  content: 'Let me look. It is a gateway.',
  web_search_calls: [
    { id: 'srvtoolu_1', query: 'gatehouse', sources: [{ url: 'https://a.com', title: 'A' }] },
  ],
  annotations: [
    {
      type: 'url_citation',
      url_citation: {
        url: 'https://a.com',
        title: 'A',
        content: 'a gateway',
        start_index: 13,
        end_index: 29,
      },
    },
  ],
};

describe("each provider's answer", () => {
  it('Anthropic: search blocks and cited text blocks, whole and streamed', () => {
    const res = fromAnthropicResponse(anthropicAnswer, 'claude');
    expect(res.choices[0]?.message).toMatchObject(expectedAnswer);
    expect(res.usage?.server_tool_use).toEqual({ web_search_requests: 1 });

    const m = new AnthropicStreamMapper('claude');
    const ev = (e: object) => m.push(e);
    const chunks = [
      ev({ type: 'message_start', message: { id: 'msg_1', usage: { input_tokens: 10 } } }),
      ev({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
      ev({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Let me look. ' } }),
      ev({ type: 'content_block_stop', index: 0 }),
      ev({
        type: 'content_block_start',
        index: 1,
        content_block: { ...anthropicAnswer.content[1], input: {} },
      }),
      ev({
        type: 'content_block_delta',
        index: 1,
        delta: { type: 'input_json_delta', partial_json: '{"query":' },
      }),
      ev({
        type: 'content_block_delta',
        index: 1,
        delta: { type: 'input_json_delta', partial_json: '"gatehouse"}' },
      }),
      ev({ type: 'content_block_stop', index: 1 }),
      ev({ type: 'content_block_start', index: 2, content_block: anthropicAnswer.content[2] }),
      ev({ type: 'content_block_stop', index: 2 }),
      ev({ type: 'content_block_start', index: 3, content_block: { type: 'text', text: '', citations: [] } }),
      ev({
        type: 'content_block_delta',
        index: 3,
        delta: { type: 'citations_delta', citation: (anthropicAnswer.content[3] as any).citations[0] },
      }),
      ev({ type: 'content_block_delta', index: 3, delta: { type: 'text_delta', text: 'It is a gateway.' } }),
      ev({ type: 'content_block_stop', index: 3 }),
    ].flat();
    const deltas = chunks.map((c) => c.choices[0]?.delta ?? {});
    expect(deltas.flatMap((d) => d.web_search_calls ?? [])).toEqual(expectedAnswer.web_search_calls);
    expect(deltas.flatMap((d) => d.annotations ?? [])).toEqual(expectedAnswer.annotations);
    expect(deltas.some((d) => d.tool_calls)).toBe(false);
  });

  it('OpenAI: url_citation annotations', () => {
    const res = fromOpenAiResponse(
      {
        id: 'c',
        choices: [
          {
            index: 0,
            finish_reason: 'stop',
            message: {
              role: 'assistant',
              content: 'See A.',
              annotations: [
                {
                  type: 'url_citation',
                  url_citation: { url: 'https://a.com', title: 'A', start_index: 4, end_index: 5 },
                },
              ],
            },
          },
        ],
      },
      'gpt',
    );
    expect(res.choices[0]?.message.annotations).toEqual([
      {
        type: 'url_citation',
        url_citation: { url: 'https://a.com', title: 'A', start_index: 4, end_index: 5 },
      },
    ]);
  });

  it('Gemini: groundingMetadata, its byte offsets as string offsets, each query billed', () => {
    const text = 'Größe: 5 m. Weiter.';
    const cited = '5 m.';
    const startByte = Buffer.byteLength(text.slice(0, text.indexOf(cited)));
    const grounding = {
      webSearchQueries: ['größe', 'height'],
      groundingChunks: [{ web: { uri: 'https://g.de', title: 'g.de' } }],
      groundingSupports: [
        {
          segment: { startIndex: startByte, endIndex: startByte + 4, text: cited },
          groundingChunkIndices: [0],
        },
      ],
    };
    expect(mapGrounding(grounding, text)?.annotations[0]?.url_citation).toEqual({
      url: 'https://g.de',
      title: 'g.de',
      content: cited,
      start_index: text.indexOf(cited),
      end_index: text.indexOf(cited) + cited.length,
    });
    const res = fromGeminiResponse(
      {
        candidates: [{ content: { parts: [{ text }] }, finishReason: 'STOP', groundingMetadata: grounding }],
        usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 4 },
      },
      'gemini',
    );
    expect(res.choices[0]?.message.web_search_calls).toEqual([
      { id: 'ws_0', query: 'größe', sources: [{ url: 'https://g.de', title: 'g.de' }] },
      { id: 'ws_1', query: 'height', sources: [] },
    ]);
    expect(res.usage?.server_tool_use).toEqual({ web_search_requests: 2 });
  });
});

const canonical: ChatResponse = {
  id: 'gen-1',
  object: 'chat.completion',
  created: 1,
  model: 'x',
  choices: [
    {
      index: 0,
      finish_reason: 'stop',
      message: { role: 'assistant', ...expectedAnswer } as ChatResponse['choices'][number]['message'],
    },
  ],
};

describe('the answer in each caller format', () => {
  it('Messages: server_tool_use + web_search_tool_result, then text split at the cited span', () => {
    const msg = chatResponseToMessages(canonical, 'm');
    expect(msg.content).toEqual([
      { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'gatehouse' } },
      {
        type: 'web_search_tool_result',
        tool_use_id: 'srvtoolu_1',
        content: [
          {
            type: 'web_search_result',
            url: 'https://a.com',
            title: 'A',
            encrypted_content: '',
            page_age: null,
          },
        ],
      },
      { type: 'text', text: 'Let me look. ' },
      {
        type: 'text',
        text: 'It is a gateway.',
        citations: [
          {
            type: 'web_search_result_location',
            url: 'https://a.com',
            title: 'A',
            cited_text: 'a gateway',
            encrypted_index: '',
          },
        ],
      },
    ]);
  });

  it('Responses: a web_search_call item before the message, url_citation annotations', () => {
    const res = chatResponseToResponses(canonical, 'm');
    expect(res.output[0]).toEqual({
      type: 'web_search_call',
      id: 'ws_1_0',
      status: 'completed',
      action: { type: 'search', query: 'gatehouse', sources: [{ type: 'url', url: 'https://a.com' }] },
    });
    expect((res.output[1] as any).content[0].annotations).toEqual([
      { type: 'url_citation', url: 'https://a.com', title: 'A', start_index: 13, end_index: 29 },
    ]);
  });

  it("Responses: the answer's tools echo the caller's web search tool as OpenAI does", () => {
    const fn = { type: 'function' as const, name: 'f', parameters: { type: 'object' } };
    const preview = responsesRequestToChat({
      model: 'm',
      input: 'q',
      tools: [fn, { type: 'web_search_preview', user_location: { type: 'approximate', country: 'FR' } }],
    });
    expect(chatResponseToResponses(canonical, 'm', preview).tools).toEqual([
      { type: 'function', name: 'f', description: null, parameters: { type: 'object' }, strict: null },
      {
        type: 'web_search_preview',
        search_context_size: 'medium',
        user_location: { type: 'approximate', country: 'FR' },
        filters: null,
      },
    ]);
    const openrouter = responsesRequestToChat({
      model: 'm',
      input: 'q',
      tools: [{ type: 'openrouter:web_search', parameters: { max_uses: 2, engine: 'exa' } }],
    });
    expect(chatResponseToResponses(canonical, 'm', openrouter).tools).toEqual([
      { type: 'openrouter:web_search', parameters: { max_uses: 2 } },
    ]);
    // Asked for another way (a plugin, web_search_options): no tool to echo.
    expect(chatResponseToResponses(canonical, 'm', { ...openrouter, web_search: {} }).tools).toEqual([]);
  });
});

describe('openrouter:web_search on a lane to OpenAI', () => {
  const tool = { type: 'openrouter:web_search', parameters: { search_context_size: 'low', max_uses: 2 } };
  it("chat: OpenAI's web_search_options; responses: its web_search tool", () => {
    const dropped: string[] = [];
    expect(laneWebSearch({ model: 'x', tools: [tool] }, 'chat', dropped)).toEqual({
      model: 'x',
      web_search_options: { search_context_size: 'low' },
    });
    expect(dropped).toEqual(['tools[0].parameters.max_uses']);
    expect(laneWebSearch({ tools: [{ type: 'function', name: 'f' }, tool] }, 'responses').tools).toEqual([
      { type: 'function', name: 'f' },
      { type: 'web_search', search_context_size: 'low' },
    ]);
  });
});
