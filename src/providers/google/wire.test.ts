import { describe, expect, it } from 'vitest';
import { type ChatChunk, type ChatRequest, TranslationError } from '../../formats/chat.js';
import { collapseReasoningDetails } from '../../formats/reasoning-details.js';
import { UpstreamError } from '../types.js';
import { geminiStreamError } from './errors.js';
import {
  floatsToBase64,
  fromGeminiEmbeddings,
  fromGeminiResponse,
  GeminiStreamMapper,
  mapGeminiFinish,
  mapGeminiUsage,
  SKIP_SIGNATURE,
  toGeminiEmbeddingsRequest,
  toGeminiRequest,
  toGeminiSchema,
} from './wire.js';

const req = (r: Partial<ChatRequest>): ChatRequest => ({ model: 'gemini-x', messages: [], ...r });
const G = 'google-gemini-v1';

describe('toGeminiRequest', () => {
  it('maps system, roles, tool calls and tool results (named by call id)', () => {
    const body = toGeminiRequest(
      req({
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Weather?' },
          {
            role: 'assistant',
            content: null,
            reasoning: 'dropped',
            tool_calls: [
              { id: 'c1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
              { id: 'c2', type: 'function', function: { name: 'time', arguments: '{}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'c1', content: '{"temp":21}' },
          { role: 'tool', tool_call_id: 'c2', content: '12:00' },
          { role: 'assistant', content: 'It is 21°C.' },
        ],
      }),
    );
    expect(body.systemInstruction).toEqual({ parts: [{ text: 'Be brief.' }] });
    expect(body.contents).toEqual([
      { role: 'user', parts: [{ text: 'Weather?' }] },
      {
        role: 'model',
        parts: [
          { functionCall: { name: 'weather', args: { city: 'Paris' } } },
          { functionCall: { name: 'time', args: {} } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'weather', response: { temp: 21 } } },
          { functionResponse: { name: 'time', response: { result: '12:00' } } },
        ],
      },
      { role: 'model', parts: [{ text: 'It is 21°C.' }] },
    ]);
  });

  it('refuses a tool result that answers no tool call', () => {
    expect(() =>
      toGeminiRequest(req({ messages: [{ role: 'tool', tool_call_id: 'nope', content: 'x' }] })),
    ).toThrow(TranslationError);
  });

  it('maps images to inlineData / fileData', () => {
    const body = toGeminiRequest(
      req({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What?' },
              { type: 'image_url', image_url: { url: 'data:image/webp;base64,UklGR' } },
              { type: 'image_url', image_url: { url: 'https://example.com/a/photo.PNG?x=1' } },
            ],
          },
        ],
      }),
    );
    expect((body.contents as any)[0].parts).toEqual([
      { text: 'What?' },
      { inlineData: { mimeType: 'image/webp', data: 'UklGR' } },
      { fileData: { mimeType: 'image/png', fileUri: 'https://example.com/a/photo.PNG?x=1' } },
    ]);
  });

  it('maps tools, tool_choice and generation config', () => {
    const body = toGeminiRequest(
      req({
        messages: [{ role: 'user', content: 'x' }],
        tools: [
          {
            type: 'function',
            function: {
              name: 'f',
              description: 'd',
              parameters: {
                $schema: 'http://json-schema.org/draft-07/schema#',
                type: 'object',
                additionalProperties: false,
                properties: {
                  a: { type: ['string', 'null'], description: 'A' },
                  b: { type: 'array', items: { const: 'x' } },
                },
                required: ['a'],
              },
            },
          },
        ],
        tool_choice: { type: 'function', function: { name: 'f' } },
        max_tokens: 100,
        temperature: 0.5,
        top_p: 0.8,
        top_k: 32,
        stop: 'END',
        seed: 3,
        response_format: {
          type: 'json_schema',
          json_schema: { name: 's', schema: { type: 'object', properties: { n: { type: 'integer' } } } },
        },
        reasoning: { effort: 'medium', exclude: true },
      }),
    );
    expect(body.tools).toEqual([
      {
        functionDeclarations: [
          {
            name: 'f',
            description: 'd',
            parameters: {
              type: 'OBJECT',
              required: ['a'],
              properties: {
                a: { type: 'STRING', nullable: true, description: 'A' },
                b: { type: 'ARRAY', items: { enum: ['x'] } },
              },
            },
          },
        ],
      },
    ]);
    expect(body.toolConfig).toEqual({ functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['f'] } });
    expect(body.generationConfig).toEqual({
      maxOutputTokens: 100,
      temperature: 0.5,
      topP: 0.8,
      topK: 32,
      stopSequences: ['END'],
      seed: 3,
      responseMimeType: 'application/json',
      responseSchema: { type: 'OBJECT', properties: { n: { type: 'INTEGER' } } },
      thinkingConfig: { thinkingBudget: 8192, includeThoughts: false },
    });
    expect(toGeminiRequest(req({ tool_choice: 'required' })).toolConfig).toEqual({
      functionCallingConfig: { mode: 'ANY' },
    });
    expect(toGeminiRequest(req({ tool_choice: 'none' })).toolConfig).toEqual({
      functionCallingConfig: { mode: 'NONE' },
    });
    expect(toGeminiRequest(req({ tool_choice: 'auto' })).toolConfig).toEqual({
      functionCallingConfig: { mode: 'AUTO' },
    });
    expect(
      (toGeminiRequest(req({ response_format: { type: 'json_object' } })).generationConfig as any)
        .responseMimeType,
    ).toBe('application/json');
    expect(toGeminiRequest(req({ messages: [{ role: 'user', content: 'x' }] }))).not.toHaveProperty(
      'generationConfig',
    );
  });

  it('toGeminiSchema leaves out what Gemini refuses in the schemas coding agents send', () => {
    expect(
      toGeminiSchema({
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        additionalProperties: false,
        properties: {
          timeout: { type: 'number', exclusiveMinimum: 0, maximum: 600000 },
          env: {
            type: 'object',
            propertyNames: { pattern: '^[A-Z_]+$' },
            additionalProperties: { type: 'string' },
          },
          level: { type: 'integer', enum: [1, 2, 3] },
          mode: { const: 'fast' },
        },
        required: ['timeout', 'missing'],
      }),
    ).toEqual({
      type: 'OBJECT',
      properties: {
        timeout: { type: 'NUMBER', maximum: 600000 },
        env: { type: 'OBJECT' },
        level: { type: 'INTEGER' },
        mode: { enum: ['fast'] },
      },
      required: ['timeout'],
    });
    // Arrays get items (any element); other types lose theirs (an MCP server's hint).
    expect(
      toGeminiSchema({
        type: 'object',
        properties: {
          ids: { type: 'array' },
          value: { type: 'string', items: { type: 'string' }, maxItems: 2 },
        },
      }),
    ).toEqual({
      type: 'OBJECT',
      properties: { ids: { type: 'ARRAY', items: {} }, value: { type: 'STRING' } },
    });
    expect(toGeminiSchema({ type: 'object', properties: {}, required: ['x'] })).toEqual({
      type: 'OBJECT',
      properties: {},
    });
  });

  it('leaves out a search only offered beside functions (Gemini refuses the two together)', () => {
    const fn = { type: 'function' as const, function: { name: 'f', parameters: { type: 'object' } } };
    const base = { model: 'gemini-3.5-pro', messages: [{ role: 'user' as const, content: 'hi' }] };
    const tools = (r: object) => (toGeminiRequest({ ...base, ...r }).tools as object[]).map(Object.keys);
    expect(tools({ tools: [fn], web_search: { origin: 'web_search' } })).toEqual([['functionDeclarations']]);
    expect(tools({ web_search: { origin: 'web_search' } })).toEqual([['googleSearch']]);
    // Asked for outright: sent (and Gemini's answer relayed).
    expect(tools({ tools: [fn], web_search: {} })).toEqual([['functionDeclarations'], ['googleSearch']]);
  });

  it('toGeminiSchema turns oneOf into anyOf', () => {
    expect(toGeminiSchema({ oneOf: [{ type: 'string' }, { type: 'number' }] })).toEqual({
      anyOf: [{ type: 'STRING' }, { type: 'NUMBER' }],
    });
  });
});

describe('media in tool results', () => {
  const call = (id: string, name: string) => ({
    id,
    type: 'function' as const,
    function: { name, arguments: '{}' },
  });
  it('go as inline or file data after the turn’s function responses, each result’s introduced', () => {
    const body = toGeminiRequest(
      req({
        messages: [
          { role: 'user', content: 'Look' },
          { role: 'assistant', content: null, tool_calls: [call('c1', 'Read'), call('c2', 'Shot')] },
          {
            role: 'tool',
            tool_call_id: 'c1',
            content: [
              { type: 'text', text: '{"pages":1}' },
              { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
            ],
          },
          {
            role: 'tool',
            tool_call_id: 'c2',
            content: [{ type: 'image_url', image_url: { url: 'https://x.test/s.webp' } }],
          },
          { role: 'user', content: 'Describe them' },
        ],
      }),
    );
    expect(body.contents).toEqual([
      { role: 'user', parts: [{ text: 'Look' }] },
      {
        role: 'model',
        parts: [{ functionCall: { name: 'Read', args: {} } }, { functionCall: { name: 'Shot', args: {} } }],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'Read', response: { pages: 1 } } },
          { functionResponse: { name: 'Shot', response: { result: '(image attached below)' } } },
          { text: 'Attached to the result of tool call c1 (Read):' },
          { inlineData: { mimeType: 'image/png', data: 'AAAA' } },
          { text: 'Attached to the result of tool call c2 (Shot):' },
          { fileData: { mimeType: 'image/webp', fileUri: 'https://x.test/s.webp' } },
          { text: 'Describe them' },
        ],
      },
    ]);
  });

  it('do not end the current turn on Gemini 3 (its unsigned calls still get the stand-in)', () => {
    const body = toGeminiRequest(
      req({
        model: 'gemini-3-pro-preview',
        messages: [
          { role: 'user', content: 'Look' },
          { role: 'assistant', content: null, tool_calls: [call('c1', 'Shot')] },
          {
            role: 'tool',
            tool_call_id: 'c1',
            content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }],
          },
          { role: 'assistant', content: null, tool_calls: [call('c2', 'Shot')] },
          { role: 'tool', tool_call_id: 'c2', content: 'done' },
        ],
      }),
    );
    const models = (body.contents as { role: string; parts: Record<string, unknown>[] }[]).filter(
      (c) => c.role === 'model',
    );
    expect(models.map((c) => c.parts[0]?.thoughtSignature)).toEqual([SKIP_SIGNATURE, SKIP_SIGNATURE]);
  });
});

describe('Gemini responses → canonical', () => {
  it('maps parts, function calls, finish reason and usage', () => {
    const res = fromGeminiResponse(
      {
        candidates: [
          {
            content: {
              role: 'model',
              parts: [
                { text: 'Thinking…', thought: true },
                { text: 'Calling. ' },
                { functionCall: { name: 'weather', args: { city: 'Paris' } } },
              ],
            },
            finishReason: 'STOP',
            index: 0,
          },
        ],
        usageMetadata: {
          promptTokenCount: 10,
          candidatesTokenCount: 5,
          thoughtsTokenCount: 3,
          cachedContentTokenCount: 4,
          totalTokenCount: 18,
        },
        modelVersion: 'gemini-x-001',
        responseId: 'resp-1',
      },
      'gemini-x',
    );
    expect(res.id).toBe('resp-1');
    expect(res.model).toBe('gemini-x-001');
    const choice = res.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.native_finish_reason).toBe('STOP');
    expect(choice.message.content).toBe('Calling. ');
    expect(choice.message.reasoning).toBe('Thinking…');
    expect(choice.message.tool_calls![0]!.id).toMatch(/^call_/);
    expect(choice.message.tool_calls![0]!.function).toEqual({
      name: 'weather',
      arguments: '{"city":"Paris"}',
    });
    expect(res.usage).toEqual({
      prompt_tokens: 10,
      completion_tokens: 8,
      total_tokens: 18,
      prompt_tokens_details: { cached_tokens: 4 },
      completion_tokens_details: { reasoning_tokens: 3 },
    });
  });

  it('maps finish reasons and a blocked prompt', () => {
    expect(mapGeminiFinish('MAX_TOKENS', false)).toBe('length');
    expect(mapGeminiFinish('SAFETY', false)).toBe('content_filter');
    expect(mapGeminiFinish('RECITATION', false)).toBe('content_filter');
    expect(mapGeminiFinish('PROHIBITED_CONTENT', true)).toBe('content_filter');
    expect(mapGeminiFinish('STOP', false)).toBe('stop');
    const blocked = fromGeminiResponse(
      { promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount: 3 } },
      'g',
    );
    expect(blocked.choices[0]).toMatchObject({
      finish_reason: 'content_filter',
      native_finish_reason: 'SAFETY',
      message: { content: '' },
    });
    expect(mapGeminiUsage(undefined)).toEqual({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
  });

  it('maps a stream and takes usage from the last event', () => {
    const m = new GeminiStreamMapper('gemini-x');
    const out: ChatChunk[] = [];
    const ev = (parts: unknown[], extra: Record<string, unknown> = {}) => ({
      candidates: [{ content: { role: 'model', parts }, index: 0, ...extra }],
      usageMetadata: { promptTokenCount: 5 },
      responseId: 'r1',
      modelVersion: 'gemini-x-001',
    });
    out.push(...m.push(ev([{ text: 'hm', thought: true }])));
    out.push(...m.push(ev([{ text: 'Hello ' }])));
    out.push(
      ...m.push({
        ...ev([{ text: 'world' }], { finishReason: 'MAX_TOKENS' }),
        usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 2 },
      }),
    );
    out.push(...m.finish());
    expect(out.map((c) => c.choices[0]?.delta ?? null)).toEqual([
      { role: 'assistant', content: '' },
      { reasoning: 'hm', reasoning_details: [{ type: 'reasoning.text', text: 'hm', format: G, index: 0 }] },
      { content: 'Hello ' },
      { content: 'world' },
      {},
      null,
    ]);
    expect(out.at(-2)!.choices[0]).toMatchObject({
      finish_reason: 'length',
      native_finish_reason: 'MAX_TOKENS',
    });
    expect(out.at(-1)!.usage).toEqual({ prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 });
    expect(out.every((c) => c.id === 'r1' && c.model === 'gemini-x-001')).toBe(true);
    // Gemini counts the prompt in its first event: the first chunk carries it, no other.
    expect(out[0]!.prompt_usage).toEqual({ prompt_tokens: 5 });
    expect(out.slice(1).some((c) => c.prompt_usage)).toBe(false);
  });

  it('a stream without a finish reason is cut off; an error payload throws', () => {
    const m = new GeminiStreamMapper('g');
    m.push({ candidates: [{ content: { parts: [{ text: 'a' }] } }] });
    expect(() => m.finish()).toThrow(UpstreamError);
    expect(() =>
      new GeminiStreamMapper('g').push({ error: { code: 503, message: 'busy', status: 'UNAVAILABLE' } }),
    ).toThrow('UNAVAILABLE: busy');
    expect(geminiStreamError({ error: { message: 'x', status: 'RESOURCE_EXHAUSTED' } }).status).toBe(429);
  });
});

describe('cached-token usage', () => {
  // Gemini's promptTokenCount already includes cachedContentTokenCount (implicit or explicit cache).
  const usageMetadata = {
    promptTokenCount: 3000,
    cachedContentTokenCount: 2048,
    candidatesTokenCount: 10,
    totalTokenCount: 3010,
  };
  const canonical = {
    prompt_tokens: 3000,
    completion_tokens: 10,
    total_tokens: 3010,
    prompt_tokens_details: { cached_tokens: 2048 },
  };

  it('a response and a stream report the cached tokens', () => {
    expect(mapGeminiUsage(usageMetadata)).toEqual(canonical);
    const candidate = { content: { role: 'model', parts: [{ text: 'hi' }] }, finishReason: 'STOP' };
    expect(fromGeminiResponse({ candidates: [candidate], usageMetadata }, 'gemini-x').usage).toEqual(
      canonical,
    );
    const m = new GeminiStreamMapper('gemini-x');
    m.push({ candidates: [{ content: { role: 'model', parts: [{ text: 'h' }] } }] });
    m.push({ candidates: [candidate], usageMetadata });
    expect(m.finish().at(-1)?.usage).toEqual(canonical);
  });
});

describe('Gemini thoughts and thought signatures ⇄ reasoning_details', () => {
  const candidate = (parts: unknown[], extra: Record<string, unknown> = {}) => ({
    candidates: [{ content: { role: 'model', parts }, index: 0, ...extra }],
    responseId: 'r1',
  });

  it('maps a signed thought run, a function-call signature and a text signature', () => {
    const res = fromGeminiResponse(
      candidate(
        [
          { text: 'Think ', thought: true },
          { text: 'more.', thought: true, thoughtSignature: 'T-SIG' },
          { text: 'Calling.', thoughtSignature: 'TEXT-SIG' },
          { functionCall: { name: 'w', args: { city: 'Oslo' } }, thoughtSignature: 'FC-SIG' },
          { functionCall: { name: 'w', args: { city: 'Rome' } } },
        ],
        { finishReason: 'STOP' },
      ),
      'g',
    );
    const m = res.choices[0]!.message;
    const [first, second] = m.tool_calls!;
    expect(m.reasoning).toBe('Think more.');
    expect(m.content).toBe('Calling.');
    expect(m.reasoning_details).toEqual([
      { type: 'reasoning.text', text: 'Think more.', signature: 'T-SIG', format: G, index: 0 },
      { type: 'reasoning.encrypted', data: 'TEXT-SIG', format: G, index: 1 },
      { type: 'reasoning.encrypted', data: 'FC-SIG', id: first!.id, format: G, index: 2 },
    ]);
    expect(second!.id).not.toBe(first!.id);

    // Sent back: the signatures return on the parts they came from.
    const body = toGeminiRequest(
      req({
        messages: [
          { role: 'user', content: 'Weather?' },
          m,
          { role: 'tool', tool_call_id: first!.id, content: '{"t":21}' },
          { role: 'tool', tool_call_id: second!.id, content: '{"t":25}' },
        ],
      }),
    );
    expect((body.contents as unknown[])[1]).toEqual({
      role: 'model',
      parts: [
        { text: 'Think more.', thought: true, thoughtSignature: 'T-SIG' },
        { text: 'Calling.', thoughtSignature: 'TEXT-SIG' },
        { functionCall: { name: 'w', args: { city: 'Oslo' } }, thoughtSignature: 'FC-SIG' },
        { functionCall: { name: 'w', args: { city: 'Rome' } } },
      ],
    });
  });

  it('reasoning.exclude drops the thought text but keeps the signatures', () => {
    const res = fromGeminiResponse(
      candidate([
        { text: 'secret', thought: true },
        { functionCall: { name: 'w', args: {} }, thoughtSignature: 'FC-SIG' },
      ]),
      'g',
      { excludeReasoning: true },
    );
    const m = res.choices[0]!.message;
    expect(m).not.toHaveProperty('reasoning');
    expect(m.reasoning_details).toEqual([
      { type: 'reasoning.encrypted', data: 'FC-SIG', id: m.tool_calls![0]!.id, format: G, index: 0 },
    ]);
  });

  it('streams thought runs and signatures as fragments sharing their entry index', () => {
    const s = new GeminiStreamMapper('g');
    const out: ChatChunk[] = [];
    out.push(...s.push(candidate([{ text: 'a', thought: true }])));
    out.push(...s.push(candidate([{ text: 'b', thought: true }])));
    out.push(...s.push(candidate([{ text: '', thought: true, thoughtSignature: 'T-SIG' }])));
    out.push(...s.push(candidate([{ text: 'Hi' }])));
    out.push(
      ...s.push(
        candidate([{ functionCall: { id: 'fc-1', name: 'w', args: {} }, thoughtSignature: 'FC-SIG' }], {
          finishReason: 'STOP',
        }),
      ),
    );
    out.push(...s.push(candidate([{ text: '', thoughtSignature: 'END-SIG' }])));
    out.push(...s.finish());
    const deltas = out.map((c) => c.choices[0]?.delta);
    expect(deltas).toContainEqual({
      tool_calls: [{ index: 0, id: 'fc-1', type: 'function', function: { name: 'w', arguments: '{}' } }],
      reasoning_details: [{ type: 'reasoning.encrypted', data: 'FC-SIG', id: 'fc-1', format: G, index: 1 }],
    });
    expect(deltas).toContainEqual({
      reasoning_details: [{ type: 'reasoning.encrypted', data: 'END-SIG', format: G, index: 2 }],
    });
    expect(collapseReasoningDetails(deltas.flatMap((d) => d?.reasoning_details ?? []))).toEqual([
      { type: 'reasoning.text', text: 'ab', signature: 'T-SIG', format: G, index: 0 },
      { type: 'reasoning.encrypted', data: 'FC-SIG', id: 'fc-1', format: G, index: 1 },
      { type: 'reasoning.encrypted', data: 'END-SIG', format: G, index: 2 },
    ]);
    expect(deltas.map((d) => d?.reasoning ?? '').join('')).toBe('ab');
  });

  it('sends back only signed gemini-format entries; a loose signature needs a text part', () => {
    const body = toGeminiRequest(
      req({
        messages: [
          { role: 'user', content: 'x' },
          {
            role: 'assistant',
            content: null,
            reasoning: 'bare reasoning',
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
            reasoning_details: [
              { type: 'reasoning.text', text: 'unsigned', format: G, index: 0 },
              { type: 'reasoning.text', text: 'claude', signature: 'A-SIG', format: 'anthropic-claude-v1' },
              { type: 'reasoning.encrypted', data: 'LOOSE', format: G, index: 1 },
              { type: 'reasoning.encrypted', data: 'OTHER-CALL', id: 'nope', format: G, index: 2 },
              { type: 'reasoning.encrypted', data: 'C1-SIG', id: 'c1', format: G, index: 3 },
            ],
          },
          { role: 'tool', tool_call_id: 'c1', content: 'ok' },
        ],
      }),
    );
    expect((body.contents as unknown[])[1]).toEqual({
      role: 'model',
      parts: [{ functionCall: { name: 'f', args: {} }, thoughtSignature: 'C1-SIG' }],
    });
  });
});

describe('Gemini 3: function calls of the current turn that come back unsigned', () => {
  const call = (id: string, name = 'f') => ({
    id,
    type: 'function' as const,
    function: { name, arguments: '{}' },
  });
  const signed = (id: string, data: string) => ({
    type: 'reasoning.encrypted' as const,
    data,
    id,
    format: G,
  });
  // Turn 1 (answered), then turn 2: a step calling two functions at once, then a signed step.
  const messages: ChatRequest['messages'] = [
    { role: 'user', content: 'first question' },
    { role: 'assistant', content: null, tool_calls: [call('a')] },
    { role: 'tool', tool_call_id: 'a', content: 'ok' },
    { role: 'assistant', content: 'first answer' },
    { role: 'user', content: 'second question' },
    { role: 'assistant', content: null, tool_calls: [call('b'), call('c', 'g')] },
    { role: 'tool', tool_call_id: 'b', content: 'ok' },
    { role: 'tool', tool_call_id: 'c', content: 'ok' },
    { role: 'assistant', content: null, tool_calls: [call('d')], reasoning_details: [signed('d', 'D-SIG')] },
    { role: 'tool', tool_call_id: 'd', content: 'ok' },
  ];
  const signatures = (model: string) =>
    (
      toGeminiRequest(req({ model, messages })).contents as {
        role: string;
        parts: Record<string, unknown>[];
      }[]
    )
      .filter((c) => c.role === 'model')
      .map((c) => c.parts.filter((p) => p.functionCall).map((p) => p.thoughtSignature ?? null));

  it("get Google's stand-in on each step's first call; signed steps and earlier turns stay as they are", () => {
    expect(signatures('gemini-3-pro-preview')).toEqual([[null], [], [SKIP_SIGNATURE, null], ['D-SIG']]);
    expect(signatures('models/gemini-4-flash')).toEqual([[null], [], [SKIP_SIGNATURE, null], ['D-SIG']]);
  });

  it('not for the models that do not require signatures', () => {
    for (const model of ['gemini-2.5-flash', 'gemini-x', 'gemma-3-27b-it']) {
      expect(signatures(model)).toEqual([[null], [], [null, null], ['D-SIG']]);
    }
  });
});

describe('Gemini 3: Google Search beside function tools (server-side tool invocations)', () => {
  const fn = { type: 'function' as const, function: { name: 'lookup', parameters: { type: 'object' } } };
  const offered = {
    model: 'gemini-3-pro-preview',
    messages: [{ role: 'user' as const, content: 'Release and weather?' }],
    tools: [fn],
    web_search: { origin: 'web_search' },
  };
  const searchCall = {
    toolCall: { id: 'srv-1', toolType: 'GOOGLE_SEARCH_WEB', args: { queries: ['gatehouse release'] } },
    thoughtSignature: 'SRV-CALL-SIG',
  };
  const searchResponse = {
    toolResponse: {
      id: 'srv-1',
      toolType: 'GOOGLE_SEARCH_WEB',
      response: { search_suggestions: '<b>x</b>' },
    },
    thoughtSignature: 'SRV-RESP-SIG',
  };
  const answer = (parts: unknown[], extra: object = {}) => ({
    candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0, ...extra }],
    responseId: 'r1',
  });
  const entry = (part: unknown, textBefore: number, callsBefore: number) =>
    JSON.stringify({ geminiServerPart: part, textBefore, callsBefore });

  it('sends both tools and asks for the server-side invocations; without them the search stays out', () => {
    const body = toGeminiRequest({ ...offered, tool_choice: 'auto' }, { serverSideTools: true });
    expect(body.tools).toEqual([
      { functionDeclarations: [{ name: 'lookup', parameters: { type: 'OBJECT' } }] },
      { googleSearch: {} },
    ]);
    expect(body.toolConfig).toEqual({
      functionCallingConfig: { mode: 'AUTO' },
      includeServerSideToolInvocations: true,
    });
    // Gemini 2 and Vertex AI (no serverSideTools): the offered search is left out, no flag.
    const older = toGeminiRequest({ ...offered, model: 'gemini-2.5-pro' });
    expect(older.tools).toEqual([
      { functionDeclarations: [{ name: 'lookup', parameters: { type: 'OBJECT' } }] },
    ]);
    expect(older).not.toHaveProperty('toolConfig');
    // The search alone needs no flag.
    const alone = toGeminiRequest({ ...offered, tools: undefined }, { serverSideTools: true });
    expect(alone.tools).toEqual([{ googleSearch: {} }]);
    expect(alone).not.toHaveProperty('toolConfig');
  });

  it("an answer's server parts become reasoning_details, never tool calls; grounding still maps", () => {
    const grounding = {
      webSearchQueries: ['gatehouse release'],
      groundingChunks: [{ web: { uri: 'https://example.com/r', title: 'Release' } }],
    };
    const res = fromGeminiResponse(
      {
        ...answer(
          [
            { text: 'Searching. ' },
            searchCall,
            searchResponse,
            { text: 'Found it.' },
            {
              functionCall: { id: 'fc-1', name: 'lookup', args: { city: 'Oslo' } },
              thoughtSignature: 'FC-SIG',
            },
          ],
          { groundingMetadata: grounding },
        ),
        usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 3 },
      },
      'gemini-3-pro-preview',
    );
    const m = res.choices[0]!.message;
    expect(m.content).toBe('Searching. Found it.');
    expect(m.tool_calls).toEqual([
      { id: 'fc-1', type: 'function', function: { name: 'lookup', arguments: '{"city":"Oslo"}' } },
    ]);
    expect(res.choices[0]!.finish_reason).toBe('tool_calls');
    expect(m.reasoning_details).toEqual([
      { type: 'reasoning.encrypted', data: entry(searchCall, 11, 0), format: G, index: 0 },
      { type: 'reasoning.encrypted', data: entry(searchResponse, 11, 0), format: G, index: 1 },
      { type: 'reasoning.encrypted', data: 'FC-SIG', id: 'fc-1', format: G, index: 2 },
    ]);
    expect(m.web_search_calls).toEqual([
      {
        id: 'ws_0',
        query: 'gatehouse release',
        sources: [{ url: 'https://example.com/r', title: 'Release' }],
      },
    ]);
    expect(res.usage?.server_tool_use).toEqual({ web_search_requests: 1 });
  });

  it('sent back, the server parts return unchanged where they stood (text split around them)', () => {
    const res = fromGeminiResponse(
      answer([
        { text: 'Thinking', thought: true, thoughtSignature: 'T-SIG' },
        { text: 'Searching. ', thoughtSignature: 'TEXT-SIG' },
        searchCall,
        searchResponse,
        { text: 'Found it.' },
        { functionCall: { id: 'fc-1', name: 'lookup', args: {} }, thoughtSignature: 'FC-SIG' },
        { toolCall: { id: 'srv-2', toolType: 'GOOGLE_SEARCH_WEB', args: {} } },
        { functionCall: { id: 'fc-2', name: 'lookup', args: {} } },
      ]),
      'gemini-3-pro-preview',
    );
    const m = res.choices[0]!.message;
    const messages: ChatRequest['messages'] = [
      { role: 'user', content: 'Release and weather?' },
      m,
      { role: 'tool', tool_call_id: 'fc-1', content: '{"t":1}' },
      { role: 'tool', tool_call_id: 'fc-2', content: '{"t":2}' },
    ];
    const body = toGeminiRequest({ ...offered, messages }, { serverSideTools: true });
    expect((body.contents as unknown[])[1]).toEqual({
      role: 'model',
      parts: [
        { text: 'Thinking', thought: true, thoughtSignature: 'T-SIG' },
        { text: 'Searching. ', thoughtSignature: 'TEXT-SIG' },
        searchCall,
        searchResponse,
        { text: 'Found it.' },
        { functionCall: { name: 'lookup', args: {} }, thoughtSignature: 'FC-SIG' },
        { toolCall: { id: 'srv-2', toolType: 'GOOGLE_SEARCH_WEB', args: {} } },
        { functionCall: { name: 'lookup', args: {} } },
      ],
    });
    // Where the model cannot take them (Vertex AI, Gemini 2): left out, the rest as before.
    const elsewhere = toGeminiRequest({ ...offered, model: 'gemini-2.5-pro', messages });
    expect((elsewhere.contents as { parts: unknown[] }[])[1]!.parts).toEqual([
      { text: 'Thinking', thought: true, thoughtSignature: 'T-SIG' },
      { text: 'Searching. Found it.', thoughtSignature: 'TEXT-SIG' },
      { functionCall: { name: 'lookup', args: {} }, thoughtSignature: 'FC-SIG' },
      { functionCall: { name: 'lookup', args: {} } },
    ]);
  });

  it('a JSON entry that is no server part goes nowhere (not as a signature)', () => {
    const body = toGeminiRequest(
      {
        ...offered,
        messages: [
          { role: 'user', content: 'x' },
          {
            role: 'assistant',
            content: 'Hi',
            reasoning_details: [
              { type: 'reasoning.encrypted', data: '{"geminiServerPart":{"text":"x"}}', format: G },
              { type: 'reasoning.encrypted', data: '{not json', format: G },
            ],
          },
        ],
      },
      { serverSideTools: true },
    );
    expect((body.contents as unknown[])[1]).toEqual({ role: 'model', parts: [{ text: 'Hi' }] });
  });

  it('streams the server parts as entries in part order, whole, beside the text and the call', () => {
    const s = new GeminiStreamMapper('gemini-3-pro-preview');
    const out: ChatChunk[] = [];
    out.push(...s.push({ candidates: [{ content: { parts: [{ text: 'Searching. ' }] } }] }));
    out.push(...s.push({ candidates: [{ content: { parts: [searchCall, { text: '' }] } }] }));
    out.push(...s.push({ candidates: [{ content: { parts: [searchResponse] } }] }));
    out.push(
      ...s.push(
        answer([
          { text: 'Found it.' },
          { functionCall: { id: 'fc-1', name: 'lookup', args: {} }, thoughtSignature: 'FC-SIG' },
        ]),
      ),
    );
    out.push(...s.finish());
    const deltas = out.map((c) => c.choices[0]?.delta);
    expect(deltas.flatMap((d) => d?.tool_calls ?? []).map((c) => c.id)).toEqual(['fc-1']);
    expect(deltas.map((d) => d?.content ?? '').join('')).toBe('Searching. Found it.');
    expect(collapseReasoningDetails(deltas.flatMap((d) => d?.reasoning_details ?? []))).toEqual([
      { type: 'reasoning.encrypted', data: entry(searchCall, 11, 0), format: G, index: 0 },
      { type: 'reasoning.encrypted', data: entry(searchResponse, 11, 0), format: G, index: 1 },
      { type: 'reasoning.encrypted', data: 'FC-SIG', id: 'fc-1', format: G, index: 2 },
    ]);
    expect(out.at(-2)?.choices[0]?.finish_reason).toBe('tool_calls');
  });
});

describe('Gemini embeddings', () => {
  it('builds batchEmbedContents and maps the vectors back', () => {
    const { requests, texts } = toGeminiEmbeddingsRequest({
      model: 'models/text-embedding-004',
      input: ['a b', 'cdef'],
      dimensions: 8,
    });
    expect(requests).toEqual([
      { model: 'models/text-embedding-004', content: { parts: [{ text: 'a b' }] }, outputDimensionality: 8 },
      { model: 'models/text-embedding-004', content: { parts: [{ text: 'cdef' }] }, outputDimensionality: 8 },
    ]);
    const res = fromGeminiEmbeddings(
      { embeddings: [{ values: [1, 2] }, { values: [3, 4] }] },
      { model: 'e', input: texts },
      texts,
    );
    expect(res.data).toEqual([
      { object: 'embedding', index: 0, embedding: [1, 2] },
      { object: 'embedding', index: 1, embedding: [3, 4] },
    ]);
    expect(res.usage).toEqual({ prompt_tokens: 2, total_tokens: 2 });
    const b64 = fromGeminiEmbeddings(
      { embeddings: [{ values: [1] }] },
      { model: 'e', input: 'x', encoding_format: 'base64' },
      ['x'],
    );
    expect(b64.data[0]!.embedding).toBe(floatsToBase64([1]));
    expect(() => toGeminiEmbeddingsRequest({ model: 'e', input: [1, 2, 3] })).toThrow(TranslationError);
  });
});
