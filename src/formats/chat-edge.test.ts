import type OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { TranslationError } from './chat.js';
import { chatRequestFromBody } from './chat-edge.js';

describe('chatRequestFromBody', () => {
  it('keeps every canonical field of a full OpenAI body and ignores Gatehouse / unknown fields (golden)', () => {
    const body: OpenAI.Chat.ChatCompletionCreateParams & Record<string, unknown> = {
      model: 'openai/gpt-test',
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'developer', content: [{ type: 'text', text: 'dev' }] },
        {
          role: 'user',
          name: 'ann',
          content: [
            { type: 'text', text: 'Look' },
            { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'high' } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"x":1}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: [{ type: 'text', text: 'ok' }] },
        { role: 'assistant', content: [{ type: 'refusal', refusal: 'Not that.' }] },
      ],
      stream: true,
      stream_options: { include_usage: true },
      max_completion_tokens: 200,
      temperature: 1.2,
      top_p: 0.5,
      stop: ['\n\n'],
      seed: 7,
      presence_penalty: 0.1,
      frequency_penalty: -0.1,
      tools: [
        {
          type: 'function',
          function: { name: 'f', description: 'F', parameters: { type: 'object' }, strict: true },
        },
      ],
      tool_choice: 'required',
      parallel_tool_calls: false,
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'out', schema: { type: 'object' }, strict: true },
      },
      logprobs: true,
      top_logprobs: 2,
      reasoning_effort: 'low',
      user: 'u',
      n: 1,
      store: false,
      metadata: { a: 'b' },
      service_tier: 'auto',
      // Gatehouse-level fields: read by the router from the raw body, ignored here.
      provider: { order: ['openai'] },
      models: ['a', 'b'],
      route: 'fallback',
      transforms: ['middle-out'],
      usage: { include: true },
      debug: { echo_upstream_body: true },
      something_new: 42,
    };
    expect(chatRequestFromBody(body)).toEqual({
      model: 'openai/gpt-test',
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'developer', content: [{ type: 'text', text: 'dev' }] },
        {
          role: 'user',
          name: 'ann',
          content: [
            { type: 'text', text: 'Look' },
            { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'high' } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"x":1}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: [{ type: 'text', text: 'ok' }] },
        { role: 'assistant', content: [{ type: 'text', text: 'Not that.' }] },
      ],
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 200,
      temperature: 1.2,
      top_p: 0.5,
      stop: ['\n\n'],
      seed: 7,
      presence_penalty: 0.1,
      frequency_penalty: -0.1,
      tools: [
        {
          type: 'function',
          function: { name: 'f', description: 'F', parameters: { type: 'object' }, strict: true },
        },
      ],
      tool_choice: 'required',
      parallel_tool_calls: false,
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'out', schema: { type: 'object' }, strict: true },
      },
      logprobs: true,
      top_logprobs: 2,
      reasoning: { effort: 'low' },
      user: 'u',
      store: false,
      metadata: { a: 'b' },
      service_tier: 'auto',
    });
  });

  it('carries cache breakpoints, top_k and the cost / latency hints as they are', () => {
    const cc = { type: 'ephemeral' };
    const body = {
      model: 'm',
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'Long rules', cache_control: cc }] },
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: 'https://x/a.png' }, cache_control: cc },
            { type: 'text', text: 'Hi', cache_control: { type: 'ephemeral', ttl: '1h' } },
          ],
        },
        { role: 'assistant', content: [{ type: 'text', text: 'Yo', cache_control: cc }] },
      ],
      tools: [{ type: 'function', function: { name: 'f' }, cache_control: cc }],
      cache_control: cc,
      top_k: 40,
      prompt_cache_key: 'tenant-1',
      prompt_cache_retention: '24h',
      prompt_cache_options: { mode: 'explicit', ttl: '30m' },
      service_tier: 'flex',
      verbosity: 'low',
      store: true,
      metadata: { run: '7' },
      safety_identifier: 'hash-of-user',
    };
    expect(chatRequestFromBody(body)).toEqual(body);
  });

  it.each([
    ['messages[0].content[0].cache_control.type', { type: 'persistent' }],
    ['messages[0].content[0].cache_control.ttl', { type: 'ephemeral', ttl: '2d' }],
  ])('refuses a malformed cache_control (%s)', (path, cc) => {
    const body = {
      model: 'm',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'a', cache_control: cc }] }],
    };
    expect(() => chatRequestFromBody(body)).toThrow(new RegExp(`^${path.replace(/[[\].]/g, '\\$&')}`));
  });

  it('refuses malformed hints with their path', () => {
    const base = { model: 'm', messages: [{ role: 'user', content: 'a' }] };
    expect(() => chatRequestFromBody({ ...base, verbosity: 'loud' })).toThrow(/^verbosity: must be one of/);
    expect(() => chatRequestFromBody({ ...base, metadata: { a: 1 } })).toThrow(
      /^metadata\.a: must be a string/,
    );
    expect(() => chatRequestFromBody({ ...base, top_k: 1.5 })).toThrow(/^top_k: must be an integer/);
    expect(() => chatRequestFromBody({ ...base, prompt_cache_options: { mode: 'always' } })).toThrow(
      /^prompt_cache_options\.mode: must be one of/,
    );
  });

  it('drops and lists predicted outputs (they only speed an answer up)', () => {
    const base = { model: 'm', messages: [{ role: 'user', content: 'a' }] };
    expect(chatRequestFromBody({ ...base, prediction: { type: 'content', content: 'x' } }).dropped).toEqual([
      'prediction',
    ]);
    expect(chatRequestFromBody(base).dropped).toBeUndefined();
  });

  it('treats max_tokens and max_completion_tokens as the same field', () => {
    const base = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
    expect(chatRequestFromBody({ ...base, max_tokens: 5 }).max_tokens).toBe(5);
    expect(chatRequestFromBody({ ...base, max_completion_tokens: 6 }).max_tokens).toBe(6);
    expect(chatRequestFromBody({ ...base, max_tokens: 7, max_completion_tokens: 7 })).toEqual({
      ...base,
      max_tokens: 7,
    });
  });

  it('passes OpenRouter-style reasoning and assistant reasoning history through', () => {
    const req = chatRequestFromBody({
      model: 'm',
      messages: [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: 'a', reasoning: 'because' },
      ],
      reasoning: { max_tokens: 1000, exclude: true, enabled: true },
      stop: 'STOP',
    });
    expect(req.messages[1]).toEqual({ role: 'assistant', content: 'a', reasoning: 'because' });
    expect(req.reasoning).toEqual({ max_tokens: 1000, exclude: true });
    expect(req.stop).toBe('STOP');
  });

  it('keeps assistant reasoning_details (as Gatehouse returned them) and drops unknown entry types', () => {
    const details = [
      { type: 'reasoning.text', text: 'Hm.', signature: 'sig', format: 'anthropic-claude-v1', index: 0 },
      { type: 'reasoning.encrypted', data: 'opaque', format: 'anthropic-claude-v1', index: 1 },
      { type: 'reasoning.encrypted', data: 'g', id: 'call_1', format: 'google-gemini-v1', index: 2 },
      { type: 'reasoning.summary', summary: 'short', format: 'openai-responses-v1', index: 3 },
      { type: 'reasoning.text', text: 'unsigned', signature: null },
    ];
    const req = chatRequestFromBody({
      model: 'm',
      messages: [
        { role: 'user', content: 'q' },
        {
          role: 'assistant',
          content: 'a',
          reasoning: 'Hm.',
          reasoning_details: [...details, { type: 'reasoning.future', blob: 1 }],
        },
        { role: 'assistant', content: 'b', reasoning_details: [{ type: 'vendor.thing' }] },
      ],
    });
    expect(req.messages[1]).toEqual({
      role: 'assistant',
      content: 'a',
      reasoning: 'Hm.',
      reasoning_details: details,
    });
    expect(req.messages[2]).toEqual({ role: 'assistant', content: 'b' });
  });

  it('maps legacy functions / function_call (request, history and function messages)', () => {
    const req = chatRequestFromBody({
      model: 'm',
      messages: [
        { role: 'user', content: 'weather?' },
        {
          role: 'assistant',
          content: null,
          function_call: { name: 'get_weather', arguments: '{"city":"Rome"}' },
        },
        { role: 'function', name: 'get_weather', content: '20°C' },
      ],
      functions: [{ name: 'get_weather', parameters: { type: 'object' } }],
      function_call: { name: 'get_weather' },
    });
    expect(req.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_legacy_1',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"city":"Rome"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_legacy_1', content: '20°C' },
    ]);
    expect(req.tools).toEqual([
      { type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } },
    ]);
    expect(req.tool_choice).toEqual({ type: 'function', function: { name: 'get_weather' } });
    expect(
      chatRequestFromBody({ model: 'm', messages: [{ role: 'user', content: 'x' }], function_call: 'none' })
        .tool_choice,
    ).toBe('none');
  });

  it('says exactly "n > 1 is not supported"', () => {
    expect(() =>
      chatRequestFromBody({ model: 'm', messages: [{ role: 'user', content: 'x' }], n: 2 }),
    ).toThrow(new TranslationError('n > 1 is not supported'));
  });

  const ok = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
  const msg = (m: unknown) => ({ ...ok, messages: [m] });
  it.each([
    ['body', []],
    ['model', { messages: ok.messages }],
    ['messages', { model: 'm', messages: [] }],
    ['messages', { model: 'm' }],
    ['messages[0].role', msg({ role: 'robot', content: 'x' })],
    [
      'messages[0].content[0].input_audio.data',
      msg({ role: 'user', content: [{ type: 'input_audio', input_audio: { format: 'wav' } }] }),
    ],
    [
      'messages[0].content[0].file.file_data',
      msg({ role: 'user', content: [{ type: 'file', file: { file_data: 'JVBERi0x' } }] }),
    ],
    [
      'messages[0].content[0].file',
      msg({ role: 'user', content: [{ type: 'file', file: { filename: 'a.pdf' } }] }),
    ],
    [
      'messages[0].content[0].image_url',
      msg({ role: 'user', content: [{ type: 'image_url', image_url: 'https://x' }] }),
    ],
    [
      'messages[0].content[0].image_url.detail',
      msg({ role: 'user', content: [{ type: 'image_url', image_url: { url: 'u', detail: 'max' } }] }),
    ],
    ['messages[0].content', msg({ role: 'user', content: 5 })],
    [
      'messages[0].content[0].type',
      msg({ role: 'system', content: [{ type: 'image_url', image_url: { url: 'u' } }] }),
    ],
    ['messages[0].tool_call_id', msg({ role: 'tool', content: 'x' })],
    [
      'messages[0].tool_calls[0].function.arguments',
      msg({
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: {} } }],
      }),
    ],
    [
      'messages[0].tool_calls[0].type',
      msg({
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c', type: 'custom', custom: { name: 'f', input: 'x' } }],
      }),
    ],
    ['messages[0].audio', msg({ role: 'assistant', content: null, audio: { id: 'a1' } })],
    ['messages[0].reasoning_details', msg({ role: 'assistant', content: 'x', reasoning_details: {} })],
    ['messages[0].reasoning_details[0]', msg({ role: 'assistant', content: 'x', reasoning_details: ['t'] })],
    [
      'messages[0].reasoning_details[0].type',
      msg({ role: 'assistant', content: 'x', reasoning_details: [{ text: 'no type' }] }),
    ],
    [
      'messages[0].reasoning_details[0].data',
      msg({ role: 'assistant', content: 'x', reasoning_details: [{ type: 'reasoning.encrypted' }] }),
    ],
    [
      'messages[0].reasoning_details[0].signature',
      msg({
        role: 'assistant',
        content: 'x',
        reasoning_details: [{ type: 'reasoning.text', text: 't', signature: 1 }],
      }),
    ],
    [
      'messages[0].reasoning_details[0].index',
      msg({
        role: 'assistant',
        content: 'x',
        reasoning_details: [{ type: 'reasoning.summary', summary: 's', index: -1 }],
      }),
    ],
    ['messages[0]', msg({ role: 'function', name: 'f', content: 'orphan' })],
    ['max_tokens', { ...ok, max_tokens: 0 }],
    ['max_completion_tokens', { ...ok, max_tokens: 5, max_completion_tokens: 6 }],
    ['temperature', { ...ok, temperature: 2.5 }],
    ['top_p', { ...ok, top_p: 'high' }],
    ['stop[0]', { ...ok, stop: [1] }],
    ['seed', { ...ok, seed: 1.5 }],
    ['presence_penalty', { ...ok, presence_penalty: 3 }],
    ['frequency_penalty', { ...ok, frequency_penalty: -3 }],
    ['tools[0].type', { ...ok, tools: [{ type: 'custom', custom: { name: 'x' } }] }],
    ['tools[0].function.name', { ...ok, tools: [{ type: 'function', function: {} }] }],
    ['functions', { ...ok, tools: [], functions: [] }],
    ['tool_choice', { ...ok, tool_choice: 'always' }],
    ['tool_choice.type', { ...ok, tool_choice: { type: 'custom', custom: { name: 'x' } } }],
    [
      'tool_choice.allowed_tools.tools',
      { ...ok, tool_choice: { type: 'allowed_tools', allowed_tools: { mode: 'auto', tools: [] } } },
    ],
    ['function_call', { ...ok, tool_choice: 'auto', function_call: 'auto' }],
    ['response_format.type', { ...ok, response_format: { type: 'xml' } }],
    [
      'response_format.json_schema.name',
      { ...ok, response_format: { type: 'json_schema', json_schema: {} } },
    ],
    ['logprobs', { ...ok, logprobs: 'yes' }],
    ['top_logprobs', { ...ok, top_logprobs: 21 }],
    ['reasoning.enabled', { ...ok, reasoning: { enabled: false } }],
    ['reasoning.effort', { ...ok, reasoning: { effort: 'ultra' } }],
    ['reasoning_effort', { ...ok, reasoning: { effort: 'high' }, reasoning_effort: 'low' }],
    ['stream', { ...ok, stream: 'true' }],
    ['stream_options.include_usage', { ...ok, stream_options: { include_usage: 1 } }],
    ['user', { ...ok, user: 5 }],
    ['audio', { ...ok, audio: { voice: 'alloy', format: 'mp3' } }],
    ['modalities', { ...ok, modalities: ['text', 'audio'] }],
    [
      'web_search_options.search_context_size',
      { ...ok, web_search_options: { search_context_size: 'huge' } },
    ],
    ['logit_bias', { ...ok, logit_bias: { '50256': -100 } }],
  ])('refuses %s', (field, body) => {
    expect(() => chatRequestFromBody(body)).toThrow(TranslationError);
    expect(() => chatRequestFromBody(body)).toThrow(new RegExp(`^${field.replace(/[[\].]/g, '\\$&')}:`));
  });

  it.each([
    { reasoning_effort: 'none' },
    { reasoning: { effort: 'none' } },
    { reasoning: { effort: 'none' }, reasoning_effort: 'none' },
  ])('an effort of none asks for no reasoning (%j)', (fields) => {
    expect(chatRequestFromBody({ ...ok, ...fields }).reasoning).toBeUndefined();
  });

  it.each(['xhigh', 'max'])('carries the %s effort', (effort) => {
    expect(chatRequestFromBody({ ...ok, reasoning_effort: effort }).reasoning).toEqual({ effort });
    expect(chatRequestFromBody({ ...ok, reasoning: { effort } }).reasoning).toEqual({ effort });
  });

  it('takes images and documents in tool messages, as in user messages', () => {
    const req = chatRequestFromBody({
      model: 'm',
      messages: [
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
        },
        {
          role: 'tool',
          tool_call_id: 'c1',
          content: [
            { type: 'text', text: 'shot' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
            { type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBE' } },
          ],
        },
      ],
    });
    expect(req.messages[1]?.content).toEqual([
      { type: 'text', text: 'shot' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
      { type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBE' } },
    ]);
    expect(() =>
      chatRequestFromBody({
        model: 'm',
        messages: [{ role: 'tool', tool_call_id: 'c1', content: [{ type: 'video', video: {} }] }],
      }),
    ).toThrow("messages[0].content[0].type: 'video' parts are not supported");
  });

  it("takes OpenAI's original image detail", () => {
    const part = { type: 'image_url', image_url: { url: 'https://x/a.png', detail: 'original' } };
    expect(chatRequestFromBody({ ...ok, messages: [{ role: 'user', content: [part] }] }).messages).toEqual([
      { role: 'user', content: [part] },
    ]);
  });

  it("reads OpenAI's prompt_cache_breakpoint as a breakpoint on its part (a ttl asks for the longest)", () => {
    const bp = { mode: 'explicit' };
    const req = chatRequestFromBody({
      ...ok,
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'Rules', prompt_cache_breakpoint: bp }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Doc', prompt_cache_breakpoint: { mode: 'explicit', ttl: '30m' } },
            {
              type: 'text',
              text: 'Both',
              prompt_cache_breakpoint: bp,
              cache_control: { type: 'ephemeral', ttl: '5m' },
            },
          ],
        },
      ],
    });
    expect(req.messages).toEqual([
      { role: 'system', content: [{ type: 'text', text: 'Rules', cache_control: { type: 'ephemeral' } }] },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Doc', cache_control: { type: 'ephemeral', ttl: '1h' } },
          { type: 'text', text: 'Both', cache_control: { type: 'ephemeral', ttl: '5m' } },
        ],
      },
    ]);
    expect(() =>
      chatRequestFromBody({
        ...ok,
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'x', prompt_cache_breakpoint: { mode: 'auto' } }] },
        ],
      }),
    ).toThrow(/^messages\[0\]\.content\[0\]\.prompt_cache_breakpoint\.mode: must be one of/);
  });

  it("takes OpenAI's allowed_tools choice as the listed tools alone, with its mode", () => {
    const fn = (name: string) => ({ type: 'function', function: { name } });
    const choice = (names: string[], mode = 'required') => ({
      type: 'allowed_tools',
      allowed_tools: { mode, tools: names.map((name) => ({ type: 'function', function: { name } })) },
    });
    const body = { ...ok, tools: [fn('a'), fn('b'), fn('c')] };
    const req = chatRequestFromBody({ ...body, tool_choice: choice(['c', 'a']) });
    expect(req.tools).toEqual([fn('a'), fn('c')]);
    expect(req.tool_choice).toBe('required');
    expect(chatRequestFromBody({ ...body, tool_choice: choice(['b'], 'auto') }).tool_choice).toBe('auto');
    expect(() => chatRequestFromBody({ ...body, tool_choice: choice(['d']) })).toThrow(
      /^tool_choice\.allowed_tools\.tools\[0\]\.function\.name: names no tool of the request/,
    );
    expect(() => chatRequestFromBody({ ...body, tool_choice: choice(['a'], 'any') })).toThrow(
      /^tool_choice\.allowed_tools\.mode: must be one of/,
    );
  });

  it('ignores no-op values of refused fields', () => {
    expect(
      chatRequestFromBody({ ...ok, logit_bias: {}, modalities: ['text'], n: 1, stream_options: {} }),
    ).toEqual({
      ...ok,
      stream_options: {},
    });
  });
});
