import { describe, expect, it } from 'vitest';
import { speechDoneUsage, TranscriptTap } from './audio.js';

describe('speechDoneUsage', () => {
  const done = (usage: object) => `data: ${JSON.stringify({ type: 'speech.audio.done', usage })}\n\n`;

  it('reads the usage of the last speech.audio.done event', () => {
    const tail = `data: {"type":"speech.audio.delta","audio":"AAAA"}\n\n${done({ input_tokens: 3, output_tokens: 40 })}`;
    expect(speechDoneUsage(tail)).toEqual({ input_tokens: 3, output_tokens: 40 });
  });

  it('none without a whole done event, or with usage that cannot be right', () => {
    expect(speechDoneUsage('data: {"type":"speech.audio.delta","audio":"AAAA"}\n\n')).toBeNull();
    expect(speechDoneUsage('data: {"type":"speech.audio.do')).toBeNull();
    expect(speechDoneUsage(done({ input_tokens: -1, output_tokens: 4 }))).toBeNull();
    expect(speechDoneUsage(done({ input_tokens: 1, output_tokens: 1e12 }))).toBeNull();
  });
});

describe('TranscriptTap', () => {
  const event = (e: object) => `data: ${JSON.stringify(e)}\n\n`;

  it('reads the deltas and the done event however the bytes are cut (mid-line, mid-character)', () => {
    const done = { type: 'transcript.text.done', text: 'héllo wörld', usage: { input_tokens: 5 } };
    const bytes = Buffer.from(
      event({ type: 'transcript.text.delta', delta: 'héllo' }) +
        event({ type: 'transcript.text.delta', delta: ' wörld' }) +
        event(done),
    );
    const tap = new TranscriptTap();
    for (let i = 0; i < bytes.length; i += 7) tap.push(bytes.subarray(i, i + 7));
    tap.end();
    expect(tap.text).toBe('héllo wörld');
    expect(tap.done).toEqual(done);
  });

  it('no done event when the stream stops before a whole one; other lines are ignored', () => {
    const tap = new TranscriptTap();
    tap.push(
      Buffer.from(
        `: ping\nevent: x\n${event({ type: 'transcript.text.delta', delta: 'a' })}data: {"type":"transcript.text.do`,
      ),
    );
    tap.end();
    expect(tap.text).toBe('a');
    expect(tap.done).toBeNull();
  });
});
