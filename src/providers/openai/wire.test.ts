import { describe, expect, it } from 'vitest';
import type { ChatRequest } from '../../formats/chat.js';
import {
  effortFromReasoning,
  fromOpenAiChunk,
  fromOpenAiEmbeddings,
  fromOpenAiResponse,
  mapFinishReason,
  mapResponsesUsage,
  mapUsage,
  toOpenAiRequest,
} from './wire.js';

const base: ChatRequest = {
  model: 'gpt-x',
  messages: [
    { role: 'developer', content: 'Be brief.' },
    { role: 'user', content: 'Hi' },
    { role: 'assistant', content: 'Hello', reasoning: 'greeting' },
  ],
};

describe('toOpenAiRequest', () => {
  it('openai: max_tokens → max_completion_tokens, reasoning → reasoning_effort', () => {
    const body = toOpenAiRequest(
      { ...base, max_tokens: 100, reasoning: { effort: 'high' }, temperature: 0.2 },
      'openai',
      false,
    );
    expect(body.max_completion_tokens).toBe(100);
    expect(body).not.toHaveProperty('max_tokens');
    expect(body.reasoning_effort).toBe('high');
    expect(body).not.toHaveProperty('reasoning');
    expect(body.temperature).toBe(0.2);
    expect(body).not.toHaveProperty('stream');
    // developer stays for OpenAI; reasoning in history is not sent
    expect(body.messages).toEqual([
      { role: 'developer', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello' },
    ]);
  });

  it('openai: explicit max_completion_tokens wins; a budget maps to an effort', () => {
    const body = toOpenAiRequest({ ...base, max_tokens: 100, max_completion_tokens: 50 }, 'openai', false);
    expect(body.max_completion_tokens).toBe(50);
    expect(effortFromReasoning({ max_tokens: 1000 })).toBe('low');
    expect(effortFromReasoning({ max_tokens: 4000 })).toBe('medium');
    expect(effortFromReasoning({ max_tokens: 20000 })).toBe('high');
    expect(effortFromReasoning({ exclude: true })).toBeUndefined();
    expect(toOpenAiRequest({ ...base, reasoning: { effort: 'max' } }, 'openai', false).reasoning_effort).toBe(
      'max',
    );
  });

  it('openai-compatible: keeps max_tokens and reasoning, developer → system', () => {
    const body = toOpenAiRequest(
      { ...base, max_tokens: 100, reasoning: { max_tokens: 2000 } },
      'openai-compatible',
      false,
    );
    expect(body.max_tokens).toBe(100);
    expect(body).not.toHaveProperty('max_completion_tokens');
    expect(body.reasoning).toEqual({ max_tokens: 2000 });
    expect(body).not.toHaveProperty('reasoning_effort');
    expect((body.messages as any[])[0].role).toBe('system');
  });

  it('streams ask for usage; unknown fields are not forwarded', () => {
    const req = {
      ...base,
      stream: true,
      stream_options: { include_usage: false },
      provider: { order: ['x'] },
    } as ChatRequest;
    const body = toOpenAiRequest(req, 'openai', true);
    expect(body.stream).toBe(true);
    expect(body.stream_options).toEqual({ include_usage: true });
    expect(body).not.toHaveProperty('provider');
  });

  it('passes tools, tool_choice, response_format, stop, seed and logprobs through', () => {
    const tools = [{ type: 'function' as const, function: { name: 'f', parameters: { type: 'object' } } }];
    const body = toOpenAiRequest(
      {
        ...base,
        tools,
        tool_choice: { type: 'function', function: { name: 'f' } },
        parallel_tool_calls: false,
        response_format: { type: 'json_object' },
        stop: ['END'],
        seed: 7,
        logprobs: true,
        top_logprobs: 2,
        user: 'u1',
      },
      'openai',
      false,
    );
    expect(body).toMatchObject({
      tools,
      tool_choice: { type: 'function', function: { name: 'f' } },
      parallel_tool_calls: false,
      response_format: { type: 'json_object' },
      stop: ['END'],
      seed: 7,
      logprobs: true,
      top_logprobs: 2,
      user: 'u1',
    });
  });
});

describe('media in tool results', () => {
  const PNG = 'data:image/png;base64,iVBORw0KGgo=';
  const PDF = 'data:application/pdf;base64,JVBERi0x';
  const call = (id: string, name: string) => ({
    id,
    type: 'function' as const,
    function: { name, arguments: '{}' },
  });
  const loop: ChatRequest = {
    model: 'gpt-x',
    messages: [
      { role: 'user', content: 'Look at both' },
      { role: 'assistant', content: null, tool_calls: [call('c1', 'Read'), call('c2', 'Shot')] },
      {
        role: 'tool',
        tool_call_id: 'c1',
        content: [
          { type: 'text', text: 'page 1', cache_control: { type: 'ephemeral' } },
          { type: 'file', file: { filename: 'a.pdf', file_data: PDF } },
        ],
      },
      {
        role: 'tool',
        tool_call_id: 'c2',
        content: [
          { type: 'image_url', image_url: { url: PNG, detail: 'high' } },
          { type: 'image_url', image_url: { url: 'https://x.test/b.png' } },
        ],
      },
      { role: 'user', content: 'What do you see?' },
    ],
  };

  for (const flavor of ['openai', 'openai-compatible'] as const)
    it(`${flavor}: tool messages keep their text (a note when none), the media follow in one user message`, () => {
      const body = toOpenAiRequest(loop, flavor, false);
      expect(body.messages).toEqual([
        { role: 'user', content: 'Look at both' },
        { role: 'assistant', content: null, tool_calls: [call('c1', 'Read'), call('c2', 'Shot')] },
        { role: 'tool', tool_call_id: 'c1', content: 'page 1' },
        { role: 'tool', tool_call_id: 'c2', content: '(images attached below)' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Attached to the result of tool call c1 (Read):' },
            { type: 'file', file: { filename: 'a.pdf', file_data: PDF } },
            { type: 'text', text: 'Attached to the result of tool call c2 (Shot):' },
            { type: 'image_url', image_url: { url: PNG, detail: 'high' } },
            { type: 'image_url', image_url: { url: 'https://x.test/b.png' } },
          ],
        },
        { role: 'user', content: 'What do you see?' },
      ]);
    });

  it('a tool run that ends the request gets its user message last; text-only tool results are untouched', () => {
    const messages = loop.messages
      .slice(0, 2)
      .concat(
        { role: 'tool', tool_call_id: 'c1', content: [{ type: 'text', text: 'plain' }] },
        { role: 'tool', tool_call_id: 'c2', content: [{ type: 'image_url', image_url: { url: PNG } }] },
      );
    const body = toOpenAiRequest({ ...loop, messages }, 'openai', false);
    expect((body.messages as unknown[]).slice(2)).toEqual([
      { role: 'tool', tool_call_id: 'c1', content: [{ type: 'text', text: 'plain' }] },
      { role: 'tool', tool_call_id: 'c2', content: '(image attached below)' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Attached to the result of tool call c2 (Shot):' },
          { type: 'image_url', image_url: { url: PNG } },
        ],
      },
    ]);
    const plain = toOpenAiRequest({ ...loop, messages: messages.slice(0, 3) }, 'openai', false);
    expect((plain.messages as unknown[]).length).toBe(3);
  });
});

describe('cost and latency hints', () => {
  const cc = { type: 'ephemeral' } as const;
  const hints = {
    prompt_cache_key: 'tenant-1',
    prompt_cache_retention: '24h',
    prompt_cache_options: { mode: 'explicit', ttl: '30m' },
    service_tier: 'priority',
    verbosity: 'low',
    store: false,
    metadata: { run: '7' },
    safety_identifier: 'hash',
  } as const;
  const hinted: ChatRequest = {
    model: 'gpt-x',
    messages: [
      { role: 'system', content: [{ type: 'text', text: 'Rules', cache_control: cc }] },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Hi', cache_control: cc },
          { type: 'image_url', image_url: { url: 'https://x/a.png' }, cache_control: cc },
        ],
        cache_control: cc,
      },
    ],
    tools: [
      {
        type: 'function',
        function: { name: 'f' },
        cache_control: cc,
        origin: { type: 'custom', name: 'f' },
      },
    ],
    cache_control: cc,
    ...hints,
    top_k: 5,
    dropped: ['context_management'],
  };

  it('openai: sends its own hints; strips breakpoints, tool origins and the dropped list', () => {
    const body = toOpenAiRequest(hinted, 'openai', false);
    expect(body).toEqual({
      model: 'gpt-x',
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'Rules' }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Hi' },
            { type: 'image_url', image_url: { url: 'https://x/a.png' } },
          ],
        },
      ],
      tools: [{ type: 'function', function: { name: 'f' } }],
      ...hints,
    });
  });

  it("openai-compatible: sends top_k, none of OpenAI's hints", () => {
    const body = toOpenAiRequest(hinted, 'openai-compatible', false);
    expect(body.top_k).toBe(5);
    for (const k of [...Object.keys(hints), 'cache_control']) expect(body).not.toHaveProperty(k);
    expect(JSON.stringify(body)).not.toContain('cache_control');
  });
});

describe('cached-token usage', () => {
  it('Chat Completions: cached tokens are part of prompt_tokens and kept in the details', () => {
    expect(
      mapUsage({
        prompt_tokens: 1200,
        completion_tokens: 10,
        total_tokens: 1210,
        prompt_tokens_details: { cached_tokens: 1024, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 4 },
      }),
    ).toEqual({
      prompt_tokens: 1200,
      completion_tokens: 10,
      total_tokens: 1210,
      prompt_tokens_details: { cached_tokens: 1024, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 4 },
    });
    // in a stream: the usage-only last chunk
    const chunk = fromOpenAiChunk(
      {
        id: 'c',
        choices: [],
        usage: { prompt_tokens: 50, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 32 } },
      },
      'gpt-x',
    );
    expect(chunk.usage?.prompt_tokens_details?.cached_tokens).toBe(32);
  });

  it('OpenAI-compatible servers: DeepSeek-style prompt_cache_hit_tokens and a top-level cached_tokens', () => {
    const deepseek = {
      prompt_tokens: 900,
      completion_tokens: 5,
      prompt_cache_hit_tokens: 640,
      prompt_cache_miss_tokens: 260,
    };
    expect(mapUsage(deepseek)?.prompt_tokens_details).toEqual({ cached_tokens: 640 });
    expect(
      mapUsage({ prompt_tokens: 100, completion_tokens: 1, cached_tokens: 64 })?.prompt_tokens_details,
    ).toEqual({
      cached_tokens: 64,
    });
    expect(mapUsage({ prompt_tokens: 100, completion_tokens: 1 })).not.toHaveProperty(
      'prompt_tokens_details',
    );
  });

  it('Responses: input_tokens include the cached ones (input_tokens_details)', () => {
    expect(
      mapResponsesUsage({
        input_tokens: 2000,
        input_tokens_details: { cached_tokens: 1536 },
        output_tokens: 30,
        output_tokens_details: { reasoning_tokens: 12 },
        total_tokens: 2030,
      }),
    ).toEqual({
      prompt_tokens: 2000,
      completion_tokens: 30,
      total_tokens: 2030,
      prompt_tokens_details: { cached_tokens: 1536 },
      completion_tokens_details: { reasoning_tokens: 12 },
    });
    expect(mapResponsesUsage(null)).toBeUndefined();
    expect(mapResponsesUsage({ input_tokens: 3, output_tokens: 1 })).toEqual({
      prompt_tokens: 3,
      completion_tokens: 1,
      total_tokens: 4,
    });
  });
});

describe('OpenAI responses → canonical', () => {
  it('maps a completion with tool calls and reasoning_content', () => {
    const res = fromOpenAiResponse(
      {
        id: 'chatcmpl-1',
        object: 'chat.completion',
        created: 1700000000,
        model: 'gpt-x-2025',
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: null,
              refusal: null,
              reasoning_content: 'hmm',
              tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }],
            },
            logprobs: null,
            finish_reason: 'tool_calls',
          },
        ],
        usage: {
          prompt_tokens: 3,
          completion_tokens: 4,
          total_tokens: 7,
          prompt_tokens_details: { cached_tokens: 1 },
        },
        system_fingerprint: 'fp',
      },
      'gpt-x',
    );
    expect(res).toMatchObject({
      id: 'chatcmpl-1',
      created: 1700000000,
      model: 'gpt-x-2025',
      system_fingerprint: 'fp',
      usage: {
        prompt_tokens: 3,
        completion_tokens: 4,
        total_tokens: 7,
        prompt_tokens_details: { cached_tokens: 1 },
      },
    });
    expect(res.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      native_finish_reason: 'tool_calls',
      message: { role: 'assistant', content: null, reasoning: 'hmm', refusal: null },
    });
    expect(res.choices[0]!.message.tool_calls![0]!.id).toBe('call_1');
  });

  it('normalises finish reasons', () => {
    expect(mapFinishReason('function_call')).toBe('tool_calls');
    expect(mapFinishReason('length')).toBe('length');
    expect(mapFinishReason('eos')).toBe('stop');
    expect(mapFinishReason(null)).toBeNull();
  });

  it('maps chunks (delta fields, usage-only chunk, missing usage)', () => {
    const c = fromOpenAiChunk(
      {
        id: 'c1',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'm',
        choices: [
          {
            index: 0,
            delta: {
              reasoning: 'r',
              content: 'x',
              tool_calls: [{ index: 1, function: { arguments: '{"a' } }],
            },
            finish_reason: null,
          },
        ],
        usage: null,
      },
      'm',
    );
    expect(c.choices[0]!.delta).toEqual({
      reasoning: 'r',
      content: 'x',
      tool_calls: [{ index: 1, function: { arguments: '{"a' } }],
    });
    expect(c.usage).toBeUndefined();
    const u = fromOpenAiChunk(
      { id: 'c1', choices: [], usage: { prompt_tokens: 1, completion_tokens: 2 } },
      'm',
    );
    expect(u.choices).toEqual([]);
    expect(u.usage).toEqual({ prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 });
    expect(u.model).toBe('m');
  });

  it('maps embeddings', () => {
    const e = fromOpenAiEmbeddings(
      {
        object: 'list',
        data: [{ object: 'embedding', index: 0, embedding: [0.1] }],
        model: 'emb',
        usage: { prompt_tokens: 2, total_tokens: 2 },
      },
      'emb',
    );
    expect(e).toEqual({
      object: 'list',
      data: [{ object: 'embedding', index: 0, embedding: [0.1] }],
      model: 'emb',
      usage: { prompt_tokens: 2, total_tokens: 2 },
    });
  });
});
