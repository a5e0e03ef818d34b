import { describe, expect, it } from 'vitest';
import { encodeSse, parseSse, parseSseChunks, sseJson } from './sse.js';

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

describe('SSE', () => {
  it('round-trips named and unnamed events across arbitrary chunk boundaries', async () => {
    const text = `${encodeSse({ event: 'message_start', data: '{"a":1}' })}${sseJson({ b: 'x\ny' })}: keepalive\n\n`;
    const bytes = new TextEncoder().encode(`${text}data: [DONE]\n\n`);
    async function* split() {
      for (let i = 0; i < bytes.length; i += 7) yield bytes.slice(i, i + 7);
    }
    expect(await collect(parseSse(split()))).toEqual([
      { event: 'message_start', data: '{"a":1}' },
      { event: undefined, data: '{"b":"x\\ny"}' },
      { event: undefined, data: '[DONE]' },
    ]);
  });

  it('splits multi-line data into several data lines', () => {
    expect(encodeSse({ data: 'a\nb' })).toBe('data: a\ndata: b\n\n');
    expect(encodeSse({ event: 'x', data: 'a\n\nb' })).toBe('event: x\ndata: a\ndata: \ndata: b\n\n');
  });

  it('groups the events that one chunk completes, an event cut across chunks in the later one', async () => {
    async function* chunks() {
      yield new TextEncoder().encode('data: 1\n\ndata: 2\n\nda');
      yield 'ta: 3\n';
      yield '\nevent: e\ndata: 4\n\n: ping\n\n';
      yield 'data: 5'; // no blank line: ended by the body's end
    }
    expect(await collect(parseSseChunks(chunks()))).toEqual([
      [
        { event: undefined, data: '1' },
        { event: undefined, data: '2' },
      ],
      [
        { event: undefined, data: '3' },
        { event: 'e', data: '4' },
      ],
    ]);
  });
});
