import { describe, expect, it } from 'vitest';
import { setMembers } from './json-splice.js';

const SET = { provider: '"OpenAI"', usage: '{"prompt_tokens":3,"cost":0.5}' };

/** What the splice must equal: the parsed object with the members set, in spread order. */
const spread = (text: string, set: Record<string, string>) => {
  const parsed: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(set)) parsed[k] = JSON.parse(v);
  return JSON.stringify({ ...JSON.parse(text), ...parsed });
};

describe('setMembers', () => {
  it.each([
    ['members replaced where they are', '{"id":"x","usage":{"prompt_tokens":1},"provider":"a","z":1}'],
    ['members appended when absent', '{"id":"x","choices":[{"index":0}]}'],
    ['an empty object', '{}'],
    ['an empty object with spaces', ' { \n } '],
    [
      'pretty-printed',
      '{\n  "id": "x",\n  "usage": {\n    "a": [1, 2, {"b": "}"}]\n  },\n  "n": -1.5e3\n}\n',
    ],
    [
      'strings holding braces, quotes and backslashes',
      '{"a":"{\\"usage\\":1}","b":"\\\\","usage":null,"c":"]"}',
    ],
    ['literals', '{"a":true,"b":false,"c":null,"usage":0}'],
    ['a key that only contains the name', '{"my_usage":1,"provider_x":{"provider":"no"}}'],
  ])('%s', (_name, text) => {
    const out = setMembers(text, SET);
    expect(out).not.toBeNull();
    // The same members, values and order as parsing and spreading would give.
    expect(JSON.stringify(JSON.parse(out as string))).toBe(spread(text, SET));
  });

  it("keeps the provider's other text byte for byte", () => {
    const text = '{"id":"x",  "n":1.0, "s":"\\u00e9", "usage":{"t":1}}';
    expect(setMembers(text, { usage: '{"t":2}' })).toBe(
      '{"id":"x",  "n":1.0, "s":"\\u00e9", "usage":{"t":2}}',
    );
  });

  it.each([
    ['an array', '[1,2]'],
    ['a string', '"text"'],
    ['a cut-off object', '{"id":"x","usage":{"a":1}'],
    ['a cut-off string', '{"id":"x'],
    ['text after the object', '{"id":"x"} {"id":"y"}'],
    ['a member set twice', '{"usage":1,"usage":2}'],
    ['a key written with escapes', '{"us\\u0061ge":1}'],
    ['a member without a value', '{"id":}'],
    ['a trailing comma', '{"id":1,}'],
    ['no colon', '{"id" 1}'],
  ])('gives up on %s (the caller serializes instead)', (_name, text) => {
    expect(setMembers(text, SET)).toBeNull();
  });

  it('matches parse-and-spread on generated answers', () => {
    let seed = 7;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const value = (depth: number): unknown => {
      const kind = rnd(depth > 2 ? 4 : 6);
      if (kind === 0) return rnd(1000) - 500;
      if (kind === 1) return ['a"b', '}{', '\\', 'usage', 'ü'][rnd(5)];
      if (kind === 2) return [true, false, null][rnd(3)];
      if (kind === 3) return rnd(100) / 7;
      if (kind === 4) return Array.from({ length: rnd(4) }, () => value(depth + 1));
      return Object.fromEntries(Array.from({ length: rnd(4) }, (_, i) => [`k${i}`, value(depth + 1)]));
    };
    for (let n = 0; n < 300; n++) {
      const obj: Record<string, unknown> = {};
      for (const key of ['id', 'usage', 'choices', 'provider', 'x'].filter(() => rnd(2))) obj[key] = value(0);
      const text = JSON.stringify(obj, null, rnd(3));
      expect(JSON.stringify(JSON.parse(setMembers(text, SET) as string))).toBe(spread(text, SET));
    }
  });
});
