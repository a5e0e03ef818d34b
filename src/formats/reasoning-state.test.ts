import { deflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { ChatChunk, ChatResponse, ReasoningDetail } from './chat.js';
import { decodeReasoningState, encodeReasoningState } from './reasoning-state.js';
import {
  chatResponseToResponses,
  chatStreamToResponses,
  type ResponsesOutputItem,
  responsesRequestToChat,
} from './responses.js';

const A = 'anthropic-claude-v1';
const G = 'google-gemini-v1';

/** Claude's answer: a signed thinking block, a redacted one, a tool call. */
const CLAUDE: ReasoningDetail[] = [
  { type: 'reasoning.text', text: 'The user wants weather.', signature: 'sig-A', format: A, index: 0 },
  { type: 'reasoning.encrypted', data: 'REDACTED==', format: A, index: 1 },
];
/** Gemini's: a signed thought, and the function call's own signature (tied to the call). */
const GEMINI: ReasoningDetail[] = [
  { type: 'reasoning.text', text: 'Need the tool.', signature: 'g-thought', format: G, index: 0 },
  { type: 'reasoning.encrypted', data: 'g-call', id: 'call_1', format: G, index: 1 },
];
const CALL = { id: 'call_1', type: 'function' as const, function: { name: 'get_weather', arguments: '{}' } };

const answer = (message: ChatResponse['choices'][number]['message']): ChatResponse => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1_700_000_000,
  model: 'm',
  choices: [{ index: 0, message, finish_reason: 'tool_calls' }],
});
const chunk = (
  delta: ChatChunk['choices'][number]['delta'],
  finish: 'tool_calls' | null = null,
): ChatChunk => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 1_700_000_000,
  model: 'm',
  choices: [{ index: 0, delta, finish_reason: finish }],
});
async function* from(chunks: ChatChunk[]): AsyncGenerator<ChatChunk> {
  yield* chunks;
}

/** The next request's assistant message, from the output items sent back as a client does. */
function sentBack(output: ResponsesOutputItem[]) {
  const req = responsesRequestToChat({
    model: 'm',
    input: [
      { role: 'user', content: 'Weather?' },
      ...output,
      { type: 'function_call_output', call_id: 'call_1', output: '{"temp":21}' },
    ],
  });
  return req.messages[1];
}

describe('reasoning state in Responses encrypted_content', () => {
  it('round-trips Claude signed + redacted thinking through a non-streamed answer', () => {
    const r = chatResponseToResponses(
      answer({
        role: 'assistant',
        content: null,
        reasoning: 'The user wants weather.',
        reasoning_details: CLAUDE,
        tool_calls: [CALL],
      }),
      'test/claude',
    );
    const rs = r.output[0];
    expect(rs).toMatchObject({ type: 'reasoning', summary: [{ text: 'The user wants weather.' }] });
    expect((rs as { encrypted_content?: string }).encrypted_content).toMatch(/^gatehouse\.rd1\./);
    // The state is the provider's reasoning, nothing else (no Gatehouse secret could be in it).
    expect(decodeReasoningState((rs as { encrypted_content?: string }).encrypted_content)).toEqual(CLAUDE);
    const m = sentBack(r.output);
    expect(m).toMatchObject({ role: 'assistant', reasoning: 'The user wants weather.', tool_calls: [CALL] });
    expect(m?.reasoning_details).toEqual(CLAUDE);
  });

  it('gives state without reasoning text an item of its own, leading the output', () => {
    const r = chatResponseToResponses(
      answer({
        role: 'assistant',
        content: null,
        reasoning_details: [CLAUDE[1] as ReasoningDetail],
        tool_calls: [CALL],
      }),
      'test/claude',
    );
    expect(r.output.map((i) => i.type)).toEqual(['reasoning', 'function_call']);
    expect(r.output[0]).toMatchObject({ summary: [] });
    expect(sentBack(r.output)?.reasoning_details).toEqual([CLAUDE[1]]);
  });

  it('round-trips Gemini signatures through a stream, a signature after the text on a trailing item', async () => {
    const events = [];
    for await (const e of chatStreamToResponses(
      from([
        chunk({ role: 'assistant', content: '' }),
        chunk({
          reasoning: 'Need ',
          reasoning_details: [{ type: 'reasoning.text', text: 'Need ', format: G, index: 0 }],
        }),
        chunk({
          reasoning: 'the tool.',
          reasoning_details: [
            { type: 'reasoning.text', text: 'the tool.', signature: 'g-thought', format: G, index: 0 },
          ],
        }),
        chunk({ content: 'Checking.' }),
        chunk({ tool_calls: [{ index: 0, ...CALL }], reasoning_details: [GEMINI[1] as ReasoningDetail] }),
        chunk({}, 'tool_calls'),
      ]),
      'test/gemini',
    ))
      events.push(e.data);
    const doneItems = events.flatMap((e) => (e.type === 'response.output_item.done' ? [e.item] : []));
    expect(doneItems.map((i) => i.type)).toEqual(['reasoning', 'message', 'function_call', 'reasoning']);
    expect(doneItems[3]).toMatchObject({
      summary: [],
      encrypted_content: expect.stringMatching(/^gatehouse/),
    });
    const completed = events.at(-1);
    expect(completed?.type).toBe('response.completed');
    const output = (completed as { response: { output: ResponsesOutputItem[] } }).response.output;
    // The final response carries the same items, state included.
    const state = (i: ResponsesOutputItem) => [i.id, (i as { encrypted_content?: string }).encrypted_content];
    expect(output.map(state)).toEqual(doneItems.map(state));
    expect(sentBack(output)?.reasoning_details).toEqual(GEMINI);
  });

  it('streams Claude thinking: the signature and the redacted block go with the reasoning item', async () => {
    const events = [];
    for await (const e of chatStreamToResponses(
      from([
        chunk({ role: 'assistant', content: '' }),
        chunk({
          reasoning: 'The user wants weather.',
          reasoning_details: [
            { type: 'reasoning.text', text: 'The user wants weather.', format: A, index: 0 },
          ],
        }),
        chunk({
          reasoning_details: [{ type: 'reasoning.text', text: '', signature: 'sig-A', format: A, index: 0 }],
        }),
        chunk({ reasoning_details: [CLAUDE[1] as ReasoningDetail] }),
        chunk({ tool_calls: [{ index: 0, ...CALL }] }),
        chunk({}, 'tool_calls'),
      ]),
      'test/claude',
    ))
      events.push(e.data);
    const completed = events.at(-1) as { response: { output: ResponsesOutputItem[] } };
    expect(completed.response.output.map((i) => i.type)).toEqual(['reasoning', 'function_call']);
    expect(sentBack(completed.response.output)?.reasoning_details).toEqual(CLAUDE);
  });

  it('ignores encrypted_content that is not Gatehouse’s: the call goes on without restored reasoning', () => {
    const bad = (encrypted_content: unknown) =>
      sentBack([
        {
          type: 'reasoning',
          id: 'rs_1',
          summary: [{ type: 'summary_text', text: 'Thought.' }],
          encrypted_content,
        } as never,
        {
          type: 'function_call',
          id: 'fc_1',
          call_id: 'call_1',
          name: 'get_weather',
          arguments: '{}',
          status: 'completed',
        },
      ]);
    const bomb = `gatehouse.rd1.${deflateRawSync(Buffer.alloc(64 * 1024 * 1024, 0x20)).toString('base64url')}`;
    for (const foreign of [
      'gAAAAABoOpenAIFernetToken==', // OpenAI's own
      'gatehouse.rd1.!!!not base64 at all',
      'gatehouse.rd1.',
      `gatehouse.rd1.${Buffer.from('{"no":"deflate"}').toString('base64url')}`,
      `gatehouse.rd1.${deflateRawSync(Buffer.from('{"not":"a list"}')).toString('base64url')}`,
      `gatehouse.rd1.${deflateRawSync(Buffer.from('[{"type":"reasoning.text","text":5}]')).toString('base64url')}`,
      bomb,
      42,
      null,
    ]) {
      const m = bad(foreign);
      expect(m).toMatchObject({ role: 'assistant', reasoning: 'Thought.' });
      expect(m).not.toHaveProperty('reasoning_details');
    }
  });

  it('adds no state to an answer without reasoning_details, and no longer lists include reasoning.encrypted_content as dropped', () => {
    const r = chatResponseToResponses(answer({ role: 'assistant', content: 'hi', reasoning: 'x' }), 'm');
    expect(r.output[0]).not.toHaveProperty('encrypted_content');
    expect(encodeReasoningState([])).toBeUndefined();
    const req = responsesRequestToChat({
      model: 'm',
      input: 'hi',
      include: ['reasoning.encrypted_content', 'file_search_call.results'],
    });
    expect(req.dropped).toEqual(['include[1]']);
  });
});
