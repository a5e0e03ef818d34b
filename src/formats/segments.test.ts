import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import type { ChatChunk, FinishReason } from './chat.js';
import { chatStreamToMessages } from './messages.js';
import { chatStreamToResponses } from './responses.js';
import { responseBlocks, segmentChatStream } from './segments.js';
import { sseJson } from './sse.js';

type Delta = ChatChunk['choices'][number]['delta'];
const chunk = (delta: Delta, finish: FinishReason | null = null, index = 0): ChatChunk => ({
  id: 'gen-1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'x',
  choices: [{ index, delta, finish_reason: finish }],
});
async function* from(chunks: ChatChunk[]): AsyncGenerator<ChatChunk> {
  yield* chunks;
}
async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}
const sseResponse = async (events: AsyncIterable<{ event: string; data: object }>) => {
  let text = '';
  for await (const e of events) text += sseJson(e.data, e.event);
  return async () => new Response(text, { headers: { 'content-type': 'text/event-stream' } });
};

/** Two tool calls whose pieces interleave (some upstreams announce every call before any arguments). */
const INTERLEAVED = [
  chunk({ tool_calls: [{ index: 0, id: 'c0', function: { name: 'a', arguments: '{"x":' } }] }),
  chunk({ tool_calls: [{ index: 1, id: 'c1', function: { name: 'b', arguments: '{"y":2}' } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '1}' } }] }),
  chunk({}, 'tool_calls'),
];

describe('reasoningFormat: blocks that follow the reasoning_details of one format', () => {
  const A = 'anthropic-claude-v1';
  const STREAM = [
    chunk({
      reasoning: 'a',
      reasoning_details: [{ type: 'reasoning.text', text: 'a', format: A, index: 0 }],
    }),
    chunk({
      reasoning_details: [{ type: 'reasoning.text', text: '', signature: 'S0', format: A, index: 0 }],
    }),
    chunk({ reasoning_details: [{ type: 'reasoning.encrypted', data: 'R', format: A, index: 1 }] }),
    chunk({
      reasoning: 'b',
      reasoning_details: [{ type: 'reasoning.text', text: 'b', format: A, index: 2 }],
    }),
    chunk({
      content: 'ok',
      reasoning_details: [{ type: 'reasoning.encrypted', data: 'G', format: 'google-gemini-v1', index: 0 }],
    }),
    chunk({}, 'stop'),
  ];

  it('one block per entry, with signature and data, in order', async () => {
    const segs = await collect(segmentChatStream(from(STREAM), { reasoningFormat: A }));
    const end = segs.at(-1);
    expect(end?.type === 'end' && end.blocks).toEqual([
      { kind: 'reasoning', text: 'a', signature: 'S0' },
      { kind: 'reasoning', text: '', data: 'R' },
      { kind: 'reasoning', text: 'b' },
      { kind: 'text', text: 'ok' },
    ]);
    expect(segs.filter((s) => s.type === 'delta').map((s) => s.type === 'delta' && s.text)).toEqual([
      'a',
      'b',
      'ok',
    ]);
  });

  it('without the option (and for other formats) reasoning comes from the reasoning text as before', async () => {
    for (const opts of [{}, { reasoningFormat: 'openai-responses-v1' }]) {
      const segs = await collect(segmentChatStream(from(STREAM), opts));
      const end = segs.at(-1);
      expect(end?.type === 'end' && end.blocks).toEqual([
        { kind: 'reasoning', text: 'ab' },
        { kind: 'text', text: 'ok' },
      ]);
    }
  });

  it('responseBlocks follows the same rule', () => {
    const res = {
      id: 'x',
      object: 'chat.completion' as const,
      created: 1,
      model: 'm',
      choices: [
        {
          index: 0,
          finish_reason: 'stop' as const,
          message: {
            role: 'assistant' as const,
            content: 'ok',
            reasoning: 'ab',
            reasoning_details: [
              { type: 'reasoning.text' as const, text: 'a', signature: 'S0', format: A, index: 0 },
              { type: 'reasoning.encrypted' as const, data: 'R', format: A, index: 1 },
              { type: 'reasoning.text' as const, text: 'b', format: A, index: 2 },
            ],
          },
        },
      ],
    };
    expect(responseBlocks(res, { reasoningFormat: A }).blocks).toEqual([
      { kind: 'reasoning', text: 'a', signature: 'S0' },
      { kind: 'reasoning', text: '', data: 'R' },
      { kind: 'reasoning', text: 'b' },
      { kind: 'text', text: 'ok' },
    ]);
    expect(responseBlocks(res).blocks).toEqual([
      { kind: 'reasoning', text: 'ab' },
      { kind: 'text', text: 'ok' },
    ]);
  });
});

describe('segmentChatStream', () => {
  it('ignores choices other than 0 and picks up usage wherever it arrives', async () => {
    const withUsage: ChatChunk = {
      ...chunk({ content: 'a' }),
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    };
    const segs = await collect(
      segmentChatStream(from([withUsage, chunk({ content: 'ignored' }, null, 1), chunk({}, 'stop')])),
    );
    expect(segs.map((s) => s.type)).toEqual(['begin', 'open', 'delta', 'close', 'end']);
    expect(segs.at(-1)).toEqual({
      type: 'end',
      finish: 'stop',
      nativeFinish: null,
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      blocks: [{ kind: 'text', text: 'a' }],
    });
  });

  it('marks tool-call pieces that arrive after their block closed as late, and keeps the full arguments', async () => {
    const segs = await collect(segmentChatStream(from(INTERLEAVED)));
    expect(segs.filter((s) => s.type === 'delta')).toEqual([
      { type: 'delta', index: 0, kind: 'tool', text: '{"x":' },
      { type: 'delta', index: 1, kind: 'tool', text: '{"y":2}' },
      { type: 'delta', index: 0, kind: 'tool', text: '1}', late: true },
    ]);
    expect(segs.at(-1)).toMatchObject({
      blocks: [
        { kind: 'tool', id: 'c0', name: 'a', arguments: '{"x":1}' },
        { kind: 'tool', id: 'c1', name: 'b', arguments: '{"y":2}' },
      ],
    });
  });

  it('reports a tool call that never got a name', async () => {
    const segs = await collect(
      segmentChatStream(from([chunk({ tool_calls: [{ index: 3, function: { arguments: '{}' } }] })])),
    );
    expect(segs.at(-1)).toEqual({
      type: 'error',
      message: 'the upstream stream sent tool call 3 without a name',
    });
  });

  it('late pieces still accumulate correctly in both official clients (best effort for interleaving upstreams)', async () => {
    const anthropic = new Anthropic({
      apiKey: 'k',
      baseURL: 'http://gatehouse.test',
      maxRetries: 0,
      fetch: await sseResponse(chatStreamToMessages(from(INTERLEAVED), 'm')),
    });
    const message = await anthropic.messages
      .stream({ model: 'm', max_tokens: 10, messages: [] })
      .finalMessage();
    expect(message.content.map((b) => (b.type === 'tool_use' ? b.input : null))).toEqual([
      { x: 1 },
      { y: 2 },
    ]);

    const openai = new OpenAI({
      apiKey: 'k',
      baseURL: 'http://gatehouse.test',
      maxRetries: 0,
      fetch: await sseResponse(chatStreamToResponses(from(INTERLEAVED), 'm')),
    });
    const response = await openai.responses.stream({ model: 'm', input: 'x' }).finalResponse();
    expect(response.output.map((o) => (o.type === 'function_call' ? o.arguments : null))).toEqual([
      '{"x":1}',
      '{"y":2}',
    ]);
  });
});
