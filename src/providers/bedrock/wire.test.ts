import { describe, expect, it } from 'vitest';
import { TranslationError } from '../../formats/chat.js';
import { hostBetas } from '../anthropic/betas.js';
import { UpstreamError } from '../types.js';
import { ConverseStreamMapper, fromConverseResponse, toConverseRequest } from './converse.js';
import { errorType, streamException, withErrorType } from './errors.js';
import { encodeEventStreamMessage, eventStreamMessages } from './eventstream.js';
import { droppedInvokeBetas, invokeBody, isAnthropicModel, streamedEvent } from './invoke.js';

describe('canonical → Converse', () => {
  it('maps turns, images, tool calls and results, cache breakpoints and settings', () => {
    const body = toConverseRequest(
      {
        model: 'm',
        messages: [
          { role: 'system', content: [{ type: 'text', text: 'sys', cache_control: { type: 'ephemeral' } }] },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'look' },
              { type: 'image_url', image_url: { url: 'data:image/jpg;base64,AAAA' } },
            ],
          },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
          },
          { role: 'tool', tool_call_id: 't1', content: 'result' },
          { role: 'tool', tool_call_id: 't1', content: 'again' },
        ],
        tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
        tool_choice: { type: 'function', function: { name: 'f' } },
        max_completion_tokens: 10,
        top_p: 0.5,
        stop: 'X',
        top_k: 3,
      },
      { anthropic: false },
    );
    expect(body).toEqual({
      system: [{ text: 'sys' }, { cachePoint: { type: 'default' } }],
      messages: [
        {
          role: 'user',
          content: [{ text: 'look' }, { image: { format: 'jpeg', source: { bytes: 'AAAA' } } }],
        },
        { role: 'assistant', content: [{ toolUse: { toolUseId: 't1', name: 'f', input: { a: 1 } } }] },
        {
          role: 'user',
          content: [
            { toolResult: { toolUseId: 't1', content: [{ text: 'result' }] } },
            { toolResult: { toolUseId: 't1', content: [{ text: 'again' }] } },
          ],
        },
      ],
      inferenceConfig: { maxTokens: 10, topP: 0.5, stopSequences: ['X'] },
      toolConfig: {
        tools: [{ toolSpec: { name: 'f', inputSchema: { json: { type: 'object' } } } }],
        toolChoice: { tool: { name: 'f' } },
      },
      additionalModelRequestFields: { top_k: 3 },
    });
  });

  it('Claude: reasoning becomes thinking, history thinking goes back with its signature; others get neither', () => {
    const req = {
      model: 'm',
      messages: [
        { role: 'user' as const, content: 'q' },
        {
          role: 'assistant' as const,
          content: 'a',
          reasoning_details: [
            {
              type: 'reasoning.text' as const,
              text: 't',
              signature: 's',
              format: 'anthropic-claude-v1',
              index: 0,
            },
          ],
        },
        { role: 'user' as const, content: 'q2' },
      ],
      reasoning: { max_tokens: 2000 },
      temperature: 0.3,
    };
    const claude = toConverseRequest(req, { anthropic: true });
    expect(claude.additionalModelRequestFields).toEqual({
      thinking: { type: 'enabled', budget_tokens: 2000 },
    });
    expect(claude.inferenceConfig).toEqual({ maxTokens: 2000 + 4096 });
    expect((claude.messages as any[])[1].content).toEqual([
      { reasoningContent: { reasoningText: { text: 't', signature: 's' } } },
      { text: 'a' },
    ]);
    const llama = toConverseRequest(req, { anthropic: false });
    expect(llama.additionalModelRequestFields).toBeUndefined();
    expect(llama.inferenceConfig).toEqual({ temperature: 0.3 });
    expect((llama.messages as any[])[1].content).toEqual([{ text: 'a' }]);

    // The model's maximum as the catalog knows it: Claude's limit; a Llama still gets none.
    const known = toConverseRequest(req, { anthropic: true, maxOutput: 64000 });
    expect(known.inferenceConfig).toEqual({ maxTokens: 64000 });
    expect(known.additionalModelRequestFields).toEqual({
      thinking: { type: 'enabled', budget_tokens: 2000 },
    });
    const plain = { ...req, reasoning: undefined, temperature: undefined };
    expect(toConverseRequest(plain, { anthropic: true, maxOutput: 64000 }).inferenceConfig).toEqual({
      maxTokens: 64000,
    });
    expect(toConverseRequest(plain, { anthropic: true }).inferenceConfig).toEqual({ maxTokens: 4096 });
    expect(toConverseRequest(req, { anthropic: false, maxOutput: 64000 }).inferenceConfig).toEqual({
      temperature: 0.3,
    });
  });

  it('carries images and documents in tool results as toolResult content blocks', () => {
    const body = toConverseRequest(
      {
        model: 'm',
        messages: [
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 't1', type: 'function', function: { name: 'shot', arguments: '{}' } }],
          },
          {
            role: 'tool',
            tool_call_id: 't1',
            content: [
              { type: 'text', text: 'screen' },
              { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
              { type: 'file', file: { filename: 'log.txt', file_data: 'data:text/plain;base64,aGk=' } },
            ],
          },
        ],
      },
      { anthropic: false },
    );
    expect((body.messages as any[])[1].content).toEqual([
      {
        toolResult: {
          toolUseId: 't1',
          content: [
            { text: 'screen' },
            { image: { format: 'png', source: { bytes: 'AAAA' } } },
            { document: { format: 'txt', name: 'log', source: { bytes: 'aGk=' } } },
          ],
        },
      },
    ]);
  });

  it('refuses what Converse cannot carry with a TranslationError (a 400)', () => {
    const withImage = (url: string) =>
      toConverseRequest(
        { model: 'm', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url } }] }] },
        { anthropic: false },
      );
    expect(() => withImage('https://example.com/a.png')).toThrow(TranslationError);
    expect(() => withImage('data:image/tiff;base64,AAAA')).toThrow(/png, jpeg, gif or webp/);
  });
});

describe('Converse → canonical', () => {
  it('maps text, tool use, reasoning, the stop reason and usage with cache counts', () => {
    const res = fromConverseResponse(
      {
        output: {
          message: {
            role: 'assistant',
            content: [
              { reasoningContent: { reasoningText: { text: 'think', signature: 's' } } },
              { text: 'a' },
              { text: 'b' },
              { toolUse: { toolUseId: 't', name: 'f', input: { x: 1 } } },
            ],
          },
        },
        stopReason: 'tool_use',
        usage: { inputTokens: 10, outputTokens: 5, cacheReadInputTokens: 100, cacheWriteInputTokens: 7 },
      },
      'model-x',
      'req-1',
    );
    expect(res.id).toBe('req-1');
    expect(res.choices[0]).toMatchObject({
      message: {
        content: 'ab',
        reasoning: 'think',
        reasoning_details: [
          { type: 'reasoning.text', text: 'think', signature: 's', format: 'anthropic-claude-v1', index: 0 },
        ],
        tool_calls: [{ id: 't', type: 'function', function: { name: 'f', arguments: '{"x":1}' } }],
      },
      finish_reason: 'tool_calls',
      native_finish_reason: 'tool_use',
    });
    expect(res.usage).toEqual({
      prompt_tokens: 117,
      completion_tokens: 5,
      total_tokens: 122,
      prompt_tokens_details: { cached_tokens: 100, cache_write_tokens: 7 },
    });
  });

  it('an answer without output is an upstream error (fallback), not a crash', () => {
    expect(() => fromConverseResponse({ message: 'hm' }, 'm')).toThrow(UpstreamError);
  });

  it('maps a ConverseStream, and refuses one that ends before messageStop', () => {
    const m = new ConverseStreamMapper('m', 'r');
    const chunks = [
      m.push('messageStart', { role: 'assistant' }),
      m.push('contentBlockDelta', { contentBlockIndex: 0, delta: { reasoningContent: { text: 'hmm' } } }),
      m.push('contentBlockDelta', {
        contentBlockIndex: 0,
        delta: { reasoningContent: { signature: 'sig' } },
      }),
      m.push('contentBlockDelta', { contentBlockIndex: 1, delta: { text: 'hi' } }),
      m.push('contentBlockStart', {
        contentBlockIndex: 2,
        start: { toolUse: { toolUseId: 't', name: 'f' } },
      }),
      m.push('contentBlockDelta', { contentBlockIndex: 2, delta: { toolUse: { input: '{"a"' } } }),
      m.push('contentBlockDelta', { contentBlockIndex: 2, delta: { toolUse: { input: ':1}' } } }),
      m.push('messageStop', { stopReason: 'guardrail_intervened' }),
      m.push('metadata', { usage: { inputTokens: 3, outputTokens: 4 } }),
    ].flat();
    expect(chunks.map((c) => c.choices[0]?.delta)).toEqual([
      { role: 'assistant', content: '' },
      {
        reasoning: 'hmm',
        reasoning_details: [{ type: 'reasoning.text', text: 'hmm', format: 'anthropic-claude-v1', index: 0 }],
      },
      {
        reasoning_details: [
          { type: 'reasoning.text', text: '', signature: 'sig', format: 'anthropic-claude-v1', index: 0 },
        ],
      },
      { content: 'hi' },
      { tool_calls: [{ index: 0, id: 't', type: 'function', function: { name: 'f', arguments: '' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '{"a"' } }] },
      { tool_calls: [{ index: 0, function: { arguments: ':1}' } }] },
      {},
      undefined,
    ]);
    expect(chunks[7]!.choices[0]!.finish_reason).toBe('content_filter');
    expect(chunks[8]!.usage).toMatchObject({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 });
    expect(m.done).toBe(true);
    const cut = new ConverseStreamMapper('m');
    cut.push('messageStart', {});
    expect(() => cut.finish()).toThrow(UpstreamError);
  });
});

describe('InvokeModel for Anthropic models', () => {
  it('recognises Anthropic model ids, inference profiles and ARNs', () => {
    for (const id of [
      'anthropic.claude-3-5-haiku-20241022-v1:0',
      'us.anthropic.claude-sonnet-4-20250514-v1:0',
      'global.anthropic.claude-sonnet-4-5-20250929-v1:0',
      'apac.anthropic.claude-3-haiku-20240307-v1:0',
      'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-7-sonnet-20250219-v1:0',
    ])
      expect(isAnthropicModel(id), id).toBe(true);
    for (const id of [
      'meta.llama3-70b-instruct-v1:0',
      'us.amazon.nova-pro-v1:0',
      'mistral.mistral-large-2402-v1:0',
    ])
      expect(isAnthropicModel(id), id).toBe(false);
  });

  it('sends the caller body without model and stream, with the Bedrock version and betas in the body', () => {
    const [a, b] = ['interleaved-thinking-2025-05-14', 'context-management-2025-06-27'];
    expect(
      invokeBody(
        { model: 'x', stream: true, max_tokens: 5, messages: [], anthropic_beta: [a] },
        { 'anthropic-beta': `${b}, ${a}` },
      ),
    ).toEqual({
      anthropic_version: 'bedrock-2023-05-31',
      max_tokens: 5,
      messages: [],
      anthropic_beta: [a, b],
    });
  });

  it('leaves a web search out of the Converse body (Converse has none)', () => {
    const body = toConverseRequest(
      {
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
        tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
        web_search: { origin: 'web_search' },
      },
      { anthropic: true },
    );
    expect((body.toolConfig as any).tools.map((t: any) => t.toolSpec?.name)).toEqual(['f']);
  });

  it('sends only the beta flags Bedrock has: renamed to Bedrock’s name, the others left out and listed', () => {
    // Claude Code's header: Bedrock answers "invalid beta flag" to any flag it does not have.
    const header =
      'claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,per-turn-control-2026-07-01,advanced-tool-use-2025-11-20,effort-2025-11-24';
    const body = { model: 'x', max_tokens: 5, messages: [] };
    expect(invokeBody(body, { 'anthropic-beta': header }).anthropic_beta).toEqual([
      'claude-code-20250219',
      'interleaved-thinking-2025-05-14',
      'context-management-2025-06-27',
      'tool-search-tool-2025-10-19',
      'effort-2025-11-24',
    ]);
    expect(droppedInvokeBetas(body, { 'anthropic-beta': header })).toEqual(['per-turn-control-2026-07-01']);
    // None left: no empty list either.
    const none = invokeBody({ ...body, anthropic_beta: ['made-up-2030-01-01'] }, {});
    expect(none).not.toHaveProperty('anthropic_beta');
    // Converse has no tool search: its flag is left out there.
    expect(hostBetas(['advanced-tool-use-2025-11-20', 'effort-2025-11-24'], 'bedrock-converse')).toEqual({
      kept: ['effort-2025-11-24'],
      dropped: ['advanced-tool-use-2025-11-20'],
    });
  });

  it('turns a chunk event into the Anthropic SSE event it carries', () => {
    const data = JSON.stringify({ type: 'message_stop' });
    expect(
      streamedEvent({
        messageType: 'event',
        type: 'chunk',
        body: { bytes: Buffer.from(data).toString('base64') },
      }),
    ).toEqual({ event: 'message_stop', data });
    expect(() => streamedEvent({ messageType: 'event', type: 'chunk', body: {} })).toThrow(UpstreamError);
  });
});

describe('event-stream framing and Bedrock errors', () => {
  async function* bytes(parts: Uint8Array[]) {
    for (const p of parts) yield p;
  }

  it('decodes messages however the bytes are cut, and refuses a body ending mid-message', async () => {
    const a = encodeEventStreamMessage('event', 'messageStart', { role: 'assistant' });
    const b = encodeEventStreamMessage('exception', 'throttlingException', { message: 'slow' });
    const all = Buffer.concat([a, b]);
    const oneByOne = [...all].map((x) => Uint8Array.of(x));
    const out = [];
    for await (const m of eventStreamMessages(bytes(oneByOne))) out.push(m);
    expect(out).toEqual([
      { messageType: 'event', type: 'messageStart', body: { role: 'assistant' } },
      { messageType: 'exception', type: 'throttlingException', body: { message: 'slow' } },
    ]);
    const cut = eventStreamMessages(bytes([all.subarray(0, a.length + 5)]));
    await expect(
      (async () => {
        for await (const _ of cut);
      })(),
    ).rejects.toThrow(/mid-message/);
    const corrupt = Buffer.from(a);
    corrupt[corrupt.length - 6]! ^= 0xff;
    await expect(
      (async () => {
        for await (const _ of eventStreamMessages(bytes([corrupt])));
      })(),
    ).rejects.toThrow(/corrupt/);
  });

  it('names the error type and sets what may fall back', () => {
    expect(errorType('ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/')).toBe(
      'ValidationException',
    );
    const base = new UpstreamError(424, 'model failed');
    const e = withErrorType(base, 'ModelErrorException:http://x');
    expect([e.status, e.retryable, e.message]).toEqual([424, true, 'ModelErrorException: model failed']);
    const denied = withErrorType(new UpstreamError(403, 'no'), 'AccessDeniedException');
    expect(denied.retryable).toBe(false);
    const mid = streamException('modelStreamErrorException', { message: 'broke with secret-1' }, [
      'secret-1',
    ]);
    expect([mid.status, mid.retryable, mid.message]).toEqual([
      502,
      true,
      'ModelStreamErrorException: broke with [redacted]',
    ]);
    expect(streamException('validationException', { message: 'bad' }, []).retryable).toBe(false);
  });
});
