import { describe, expect, it } from 'vitest';
import { MessageAccumulator } from './accumulate.js';

const frame = (data: object) =>
  `event: ${(data as { type: string }).type}\ndata: ${JSON.stringify(data)}\n\n`;

/** A stream with thinking, text and a tool call whose input arrives in pieces. */
const EVENTS = [
  {
    type: 'message_start',
    message: {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-x',
      content: [],
      stop_reason: null,
      usage: { input_tokens: 12, output_tokens: 1 },
    },
  },
  { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Let me ' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'look.' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'sig==' } },
  { type: 'content_block_stop', index: 0 },
  { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
  { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Checking ' } },
  { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Oslo.' } },
  { type: 'content_block_stop', index: 1 },
  {
    type: 'content_block_start',
    index: 2,
    content_block: { type: 'tool_use', id: 'toolu_1', name: 'weather', input: {} },
  },
  { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"ci' } },
  { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: 'ty":"Oslo"}' } },
  { type: 'content_block_stop', index: 2 },
  {
    type: 'message_delta',
    delta: { stop_reason: 'tool_use', stop_sequence: null },
    usage: { output_tokens: 40 },
  },
  { type: 'message_stop' },
];

describe('MessageAccumulator', () => {
  it('builds the whole message from its events, whatever the frames’ boundaries', () => {
    const text = EVENTS.map(frame).join('');
    for (const cut of [
      EVENTS.map(frame),
      [text],
      // Bytes cut every 7, through events and multi-byte characters alike.
      Array.from({ length: Math.ceil(text.length / 7) }, (_, i) =>
        Buffer.from(text).subarray(i * 7, i * 7 + 7),
      ),
    ]) {
      const acc = new MessageAccumulator();
      for (const piece of cut) acc.feed(piece);
      expect(acc.message()).toEqual({
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: 'claude-x',
        content: [
          { type: 'thinking', thinking: 'Let me look.', signature: 'sig==' },
          { type: 'text', text: 'Checking Oslo.' },
          { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Oslo' } },
        ],
        stop_reason: 'tool_use',
        stop_sequence: null,
        usage: { input_tokens: 12, output_tokens: 40 },
      });
    }
  });

  it('holds no message for a stream cut before message_stop', () => {
    const acc = new MessageAccumulator();
    for (const e of EVENTS.slice(0, -1)) acc.feed(frame(e));
    expect(acc.message()).toBeNull();
  });
});
