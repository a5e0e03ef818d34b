import { describe, expect, it } from 'vitest';
import type { ChatRequest } from '../../formats/chat.js';
import {
  effortFromReasoning,
  fromOpenAiChunk,
  fromOpenAiEmbeddings,
  fromOpenAiResponse,
  mapFinishReason,
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
