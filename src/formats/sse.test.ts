import { describe, expect, it } from 'vitest';
import { encodeSse, parseSse, sseJson } from './sse.js';

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
  });
});
