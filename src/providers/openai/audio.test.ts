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
  const data = (e: object) => ({ data: JSON.stringify(e) });

  it('reads the deltas and the done event', () => {
    const done = { type: 'transcript.text.done', text: 'héllo wörld', usage: { input_tokens: 5 } };
    const tap = new TranscriptTap();
    tap.read(data({ type: 'transcript.text.delta', delta: 'héllo' }));
    tap.read(data({ type: 'transcript.text.delta', delta: ' wörld' }));
    tap.read(data(done));
    expect(tap.text).toBe('héllo wörld');
    expect(tap.done).toEqual(done);
  });

  it('other events are passed over; no done event until one came', () => {
    const tap = new TranscriptTap();
    tap.read({ event: 'x', data: '{"type":"x"}' });
    tap.read(data({ type: 'transcript.text.delta', delta: 'a' }));
    expect(tap.text).toBe('a');
    expect(tap.done).toBeNull();
  });

  it('an error event or data that is not JSON throws, the message without the secrets', () => {
    const tap = new TranscriptTap(['sk-secret-1234']);
    expect(() =>
      tap.read({
        event: 'error',
        data: JSON.stringify({ type: 'error', error: { message: 'bad key sk-secret-1234', code: 500 } }),
      }),
    ).toThrow(expect.objectContaining({ status: 500, message: expect.not.stringContaining('sk-secret') }));
    expect(() => tap.read(data({ type: 'error', error: { message: 'overloaded' } }))).toThrow('overloaded');
    expect(() => tap.read({ data: '{"type":"transcript.te' })).toThrow(/invalid stream event/);
  });
});
