import { describe, expect, it } from 'vitest';
import { type SseEvent, sseEventsOf } from './sse.js';
import { hasKeyWith, SseByteSplitter, stringValue, stringValuesLength, utf16Length } from './sse-bytes.js';

/** Every event the splitter found over the given cuts of `text`, and the bytes it let through. */
function split(bytes: Buffer, cuts: number[]) {
  const s = new SseByteSplitter();
  const events: SseEvent[] = [];
  const out: Buffer[] = [];
  let from = 0;
  for (const to of [...cuts, bytes.length]) {
    const batch = s.push(bytes.subarray(from, to));
    from = to;
    if (!batch) continue;
    out.push(batch.bytes);
    for (const e of batch.events) {
      // Each event's offsets hold its own block (the blank lines added: a CR last is held back).
      expect(sseEventsOf(`${batch.bytes.subarray(e.start, e.end).toString()}\n\n`)).toHaveLength(1);
      events.push({ event: e.name, data: e.data.toString() });
    }
  }
  return { events, out: Buffer.concat(out) };
}

describe('SseByteSplitter', () => {
  const odd = [
    'event: first\ndata: {}\n\n',
    ': a comment\r\n\r\n',
    'event: message_start\r\ndata: {"a":"é"}\r\n\r\n',
    'event:ping\ndata:{"type":"ping"}\n\n',
    ':keep-alive\n\n',
    'data: {"x":"漢字 and 🎉"}\rdata: second line\r\r',
    'id: 7\nretry: 10\nevent: named\ndata\n\n',
    'data: [DONE]\n\n',
  ].join('');
  const bytes = Buffer.from(odd);
  const expected = sseEventsOf(odd);

  it('finds the events eventsource-parser finds, however the bytes are cut', () => {
    expect(expected).toHaveLength(6);
    expect(split(bytes, [])).toEqual({ events: expected, out: bytes });
    // Every single cut, then every byte on its own (multi-byte characters and CRLFs split).
    for (let i = 1; i < bytes.length; i++)
      expect(split(bytes, [i])).toEqual({ events: expected, out: bytes });
    const each = Array.from({ length: bytes.length - 1 }, (_, i) => i + 1);
    expect(split(bytes, each)).toEqual({ events: expected, out: bytes });
  });

  it('reads the first field after a byte order mark, and relays the mark', () => {
    const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes]);
    for (const cut of [1, 2, 3, 5]) expect(split(bom, [cut])).toEqual({ events: expected, out: bom });
  });

  it('lets through only whole blocks: an event cut off is held back', () => {
    const whole = 'data: {"a":1}\n\n';
    const s = new SseByteSplitter();
    const batch = s.push(Buffer.from(`${whole}data: {"b":`));
    expect(batch?.bytes.toString()).toBe(whole);
    expect(s.push(Buffer.from('2}'))).toBeNull();
    expect(s.push(Buffer.from('\n\n'))?.bytes.toString()).toBe('data: {"b":2}\n\n');
  });
});

describe('byte readers', () => {
  /** Bytes as the readers take them: one latin1 character per byte. */
  const l1 = (text: string) => Buffer.from(text).toString('latin1');

  it('count characters as JavaScript does', () => {
    for (const t of ['plain', 'é', '漢字', '🎉 party', ''])
      expect(utf16Length(Buffer.from(t))).toBe(t.length);
  });

  it('measure string values without parsing', () => {
    for (const content of ['hi', 'a "quoted" \\ line\nbreak', 'é 漢 🎉', '\u0001']) {
      const json = JSON.stringify({ choices: [{ delta: { content } }, { delta: { content } }] });
      expect(stringValuesLength(l1(json), '"content"')).toBe(2 * content.length);
    }
    // Escaped non-ASCII, spaced keys; an array value and a key inside a string are not counted.
    const spaced =
      '{"content" : "\\u00e9\\ud83c\\udf89", "logprobs": {"content": []}, "x": "\\"content\\":\\"no\\""}';
    expect(stringValuesLength(l1(spaced), '"content"')).toBe('é🎉'.length);
  });

  it('find a key by the first byte of its value', () => {
    const usage = '"usage"';
    expect(hasKeyWith(l1('{"usage":null}'), usage, 0x7b)).toBe(false);
    expect(hasKeyWith(l1('{"usage": {"prompt_tokens":1}}'), usage, 0x7b)).toBe(true);
    expect(hasKeyWith(l1('{"content":"\\"usage\\":{"}'), usage, 0x7b)).toBe(false);
  });

  it("read a key's string value, the first or the last", () => {
    const chunk = l1(
      '{"id":"chatcmpl-\\"1\\"","choices":[{"finish_reason":null,"delta":{"content":"\\"finish_reason\\":\\"x\\""}},{"finish_reason" : "stop"}]}',
    );
    expect(stringValue(chunk, '"id"')).toBe('chatcmpl-"1"');
    expect(stringValue(chunk, '"finish_reason"', true)).toBe('stop');
    expect(stringValue(l1('{"finish_reason":null}'), '"finish_reason"', true)).toBeUndefined();
  });
});
