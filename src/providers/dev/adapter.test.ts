import { describe, expect, it } from 'vitest';
import type { ChatChunk, ChatRequest } from '../../formats/chat.js';
import { UpstreamError } from '../types.js';
import { countWords, DevProvider, devEmbedding, parseDirective, wordPieces } from './adapter.js';

const dev = new DevProvider({ slug: 'gatehouse', kind: 'dev', baseUrl: 'dev://local', apiKey: null });
const ctx = (signal = new AbortController().signal) => ({ apiKey: null, signal });
const ask = (text: string, extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model: 'echo',
  messages: [{ role: 'user', content: text }],
  ...extra,
});

async function collect(it: AsyncIterable<ChatChunk>): Promise<ChatChunk[]> {
  const out: ChatChunk[] = [];
  for await (const c of it) out.push(c);
  return out;
}

describe('parseDirective', () => {
  it('finds the JSON object after gatehouse: (braces inside strings included)', () => {
    const { directive, rest } = parseDirective(
      'Before gatehouse:{"text":"a } b {","usage":{"prompt_tokens":1}} after',
    );
    expect(directive).toEqual({ text: 'a } b {', usage: { prompt_tokens: 1 } });
    expect(rest).toBe('Before  after');
  });
  it('ignores a marker without a valid object', () => {
    expect(parseDirective('gatehouse: not json').directive).toBeNull();
    expect(parseDirective('gatehouse:{broken').directive).toBeNull();
    expect(parseDirective('gatehouse:{bad} then gatehouse:{"text":"ok"}').directive).toEqual({ text: 'ok' });
  });
  it('word helpers', () => {
    expect(countWords('  a  b\nc ')).toBe(3);
    expect(wordPieces('one two  three')).toEqual(['one ', 'two  ', 'three']);
    expect(wordPieces('').join('')).toBe('');
  });
});

describe('dev provider', () => {
  it('echoes the last user message with deterministic word counts', async () => {
    const res = await dev.chat(
      {
        model: 'echo',
        messages: [
          { role: 'system', content: 'be nice' },
          { role: 'user', content: 'first message' },
          { role: 'assistant', content: 'ok' },
          { role: 'user', content: [{ type: 'text', text: 'hello there world' }] },
        ],
      },
      ctx(),
    );
    expect(res.choices[0]!.message.content).toBe('hello there world');
    expect(res.usage).toEqual({ prompt_tokens: 8, completion_tokens: 3, total_tokens: 11 });
    expect(res.model).toBe('echo');
    const again = await dev.chat(ask('x'), ctx());
    expect(again.id).not.toBe(res.id);
  });

  it('follows a directive: text, reasoning, tool calls, finish and usage', async () => {
    const res = await dev.chat(
      ask(
        'gatehouse:{"text":"hi","reasoning":"think","tool_calls":[{"name":"get_weather","arguments":{"city":"Paris"}}],"finish_reason":"stop","usage":{"prompt_tokens":12}}',
        { model: 'scripted' },
      ),
      ctx(),
    );
    const c = res.choices[0]!;
    expect(c.message).toMatchObject({ content: 'hi', reasoning: 'think' });
    expect(c.message.tool_calls![0]!.function).toEqual({
      name: 'get_weather',
      arguments: '{"city":"Paris"}',
    });
    expect(c.finish_reason).toBe('stop');
    expect(res.usage!.prompt_tokens).toBe(12);
    expect(res.usage!.completion_tokens).toBe(1 + 1 + 2);
    expect(res.usage!.completion_tokens_details).toEqual({ reasoning_tokens: 1 });
  });

  it('tool calls without text give null content and tool_calls finish', async () => {
    const res = await dev.chat(ask('gatehouse:{"tool_calls":[{"name":"f"}]}'), ctx());
    expect(res.choices[0]!.message.content).toBeNull();
    expect(res.choices[0]!.finish_reason).toBe('tool_calls');
    expect(res.choices[0]!.message.tool_calls![0]!.function.arguments).toBe('{}');
  });

  it('steps script an agent loop: the step is the assistant messages after the last user message', async () => {
    const directive =
      'gatehouse:{"usage":{"prompt_tokens":7},"steps":[{"tool_calls":[{"id":"c1","name":"read_file"}]},{"text":"read it"},{"text":"last"}]}';
    const call = (after: { role: 'assistant' | 'tool'; content: string }[]) =>
      dev.chat({ model: 'scripted', messages: [{ role: 'user', content: directive }, ...after] }, ctx());
    const first = await call([]);
    expect(first.choices[0]!.message.tool_calls![0]!.function.name).toBe('read_file');
    expect(first.usage!.prompt_tokens).toBe(7);
    const second = await call([
      { role: 'assistant', content: '' },
      { role: 'tool', content: 'file text' },
    ]);
    expect(second.choices[0]!.message.content).toBe('read it');
    expect(second.choices[0]!.finish_reason).toBe('stop');
    const beyond = await call([
      { role: 'assistant', content: '' },
      { role: 'assistant', content: '' },
      { role: 'assistant', content: '' },
    ]);
    expect(beyond.choices[0]!.message.content).toBe('last');
  });

  it('echoes the rest of the message when the directive has no text', async () => {
    const res = await dev.chat(ask('please repeat gatehouse:{"delay_ms":1}'), ctx());
    expect(res.choices[0]!.message.content).toBe('please repeat');
  });

  it('streams word chunks and ends with usage', async () => {
    const chunks = await collect(await dev.chatStream(ask('one two three'), ctx()));
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '')).toEqual([
      '',
      'one ',
      'two ',
      'three',
      '',
      '',
    ]);
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('stop');
    expect(chunks.at(-1)!.choices).toEqual([]);
    expect(chunks.at(-1)!.usage).toEqual({ prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 });
    // The prompt count is known before answering: on the first chunk, and only there.
    expect(chunks[0]!.prompt_usage).toEqual({ prompt_tokens: 3 });
    expect(chunks.slice(1).some((c) => c.prompt_usage)).toBe(false);
  });

  it('fail_after_chunks makes the stream die with UpstreamError(502)', async () => {
    const stream = await dev.chatStream(ask('gatehouse:{"text":"a b c d","fail_after_chunks":2}'), ctx());
    const seen: ChatChunk[] = [];
    const err = await (async () => {
      for await (const c of stream) seen.push(c);
    })().catch((e) => e);
    expect(seen).toHaveLength(2);
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err.status).toBe(502);
  });

  it('a scripted error rejects before the stream starts', async () => {
    const err = await dev
      .chatStream(ask('gatehouse:{"error":{"status":429,"message":"slow down","retry_after_s":1}}'), ctx())
      .catch((e) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err).toMatchObject({ status: 429, message: 'slow down', retryAfterMs: 1000, retryable: true });
  });

  it('delays are abortable and reject with the abort reason', async () => {
    const ac = new AbortController();
    const started = Date.now();
    const p = dev.chat(ask('gatehouse:{"delay_ms":5000}'), ctx(ac.signal));
    setTimeout(() => ac.abort(), 20);
    const err = await p.catch((e) => e);
    expect(err.name).toBe('AbortError');
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('chunk_delay_ms spaces the chunks', async () => {
    const started = Date.now();
    await collect(await dev.chatStream(ask('gatehouse:{"text":"a b","chunk_delay_ms":20}'), ctx()));
    expect(Date.now() - started).toBeGreaterThanOrEqual(60);
  });

  it('embeddings are deterministic unit vectors', async () => {
    const res = await dev.embeddings(
      { model: 'embed', input: ['hello world', 'hello world', 'other'] },
      ctx(),
    );
    expect(res.data[0]!.embedding).toEqual(res.data[1]!.embedding);
    expect(res.data[0]!.embedding).not.toEqual(res.data[2]!.embedding);
    const v = res.data[0]!.embedding as number[];
    expect(v).toHaveLength(8);
    expect(Math.hypot(...v)).toBeCloseTo(1, 6);
    expect(res.usage.prompt_tokens).toBe(5);
    expect(devEmbedding('x')).toEqual(devEmbedding('x'));
    const tokens = await dev.embeddings({ model: 'embed', input: [1, 2, 3] }, ctx());
    expect(tokens.data).toHaveLength(1);
    expect(tokens.usage.prompt_tokens).toBe(3);
  });
});
