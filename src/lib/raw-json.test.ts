import { describe, expect, it } from 'vitest';
import { jsonBody, keepBytes, memberSpans, sameSource } from './raw-json.js';

/** A parsed body that remembers its bytes, as the JSON body parser makes it. */
function parsed(text: string): Record<string, unknown> {
  const bytes = Buffer.from(text);
  const body = JSON.parse(text);
  keepBytes(body, bytes);
  return body;
}

const big = (n: number) => 'x'.repeat(n);

describe('memberSpans', () => {
  const at = (text: string) => {
    const b = Buffer.from(text);
    const spans = memberSpans(b);
    return spans && Object.fromEntries([...spans].map(([k, [s, e]]) => [k, b.toString('utf8', s, e)]));
  };

  it('finds each member value, compact or pretty-printed', () => {
    expect(at('{"a":1,"b":"x","c":[1,{"d":"}"}],"e":{"f":null}}')).toEqual({
      a: '1',
      b: '"x"',
      c: '[1,{"d":"}"}]',
      e: '{"f":null}',
    });
    expect(at('{\n  "a": 1 ,\n  "b" : "x",\n  "c": [1, {"d": "}"}]\n}\n')).toEqual({
      a: '1',
      b: '"x"',
      c: '[1, {"d": "}"}]',
    });
  });

  it('follows strings holding quotes, backslashes and brackets', () => {
    expect(at('{"a":"q\\"]}","b":"\\\\","c":["\\\\\\"",{"x":"{"}],"d":true}')).toEqual({
      a: '"q\\"]}"',
      b: '"\\\\"',
      c: '["\\\\\\"",{"x":"{"}]',
      d: 'true',
    });
  });

  it('keeps the last of a repeated key, as the parse does', () => {
    expect(at('{"a":1,"a":[2]}')).toEqual({ a: '[2]' });
  });

  it('gives up on what it does not follow: a key with escapes, not an object', () => {
    expect(at('{"\\u0061":1}')).toBeNull();
    expect(at('[1,2]')).toBeNull();
    expect(at('\ufeff{"a":1}')).toBeNull();
    expect(at('{}')).toEqual({});
  });
});

describe('jsonBody', () => {
  const history = JSON.stringify(
    Array.from({ length: 200 }, (_, i) => ({ role: 'user', content: `caf\u00e9 ${i} ${big(100)}` })),
    null,
    1,
  ).replaceAll('é', '\\u00e9');
  const text = `{"model":"a/b","provider":{"x":1},"n":1.50,"messages":${history},"tools":[{"name":"t"}]}`;

  it("copies the members a lane's body shares with the caller's, byte for byte", () => {
    const body = parsed(text);
    const { provider: _, ...rest } = body;
    const lane = sameSource({ ...rest, model: 'b', stream_options: { include_usage: true } }, body);
    const out = jsonBody(lane);
    expect(Buffer.isBuffer(out)).toBe(true);
    const s = out.toString();
    expect(s).toContain(`"messages":${history}`);
    // Changed members are serialized; key order is the new body's.
    expect(JSON.parse(s)).toEqual(JSON.parse(JSON.stringify(lane)));
    expect(s.startsWith('{"model":"b","n":')).toBe(true);
    expect(s.endsWith(',"stream_options":{"include_usage":true}}')).toBe(true);
  });

  it('serializes a member the new body replaced, even under the same key', () => {
    const body = parsed(text);
    const messages = [...(body.messages as object[]), { role: 'user', content: 'more' }];
    const out = jsonBody(sameSource({ ...body, messages }, body));
    expect(JSON.parse(out.toString()).messages).toHaveLength(201);
    expect(out.toString()).not.toContain(history);
  });

  it('is JSON.stringify for bodies without a source', () => {
    expect(jsonBody({ a: [1, 2] })).toBe('{"a":[1,2]}');
    // A clone (the content filters' redaction) has no source: serialized in full.
    const body = parsed(text);
    expect(jsonBody(structuredClone(body))).toBe(JSON.stringify(body));
  });

  it('serializes a member set on the parsed body itself after the parse', () => {
    const body = parsed(text);
    body.model = 'c/d';
    body.messages = [];
    const out = jsonBody(sameSource({ ...body }, body)).toString();
    expect(JSON.parse(out)).toMatchObject({ model: 'c/d', messages: [] });
  });

  it('skips undefined members as JSON.stringify does', () => {
    const body = parsed(text);
    const out = jsonBody(sameSource({ ...body, tools: undefined }, body)).toString();
    expect(JSON.parse(out)).not.toHaveProperty('tools');
  });

  it('refuses a copy when a parsed body was changed in place (checked under the test suite)', () => {
    const body = parsed(text);
    (body.messages as { content: string }[])[0]!.content = 'changed';
    expect(() => jsonBody(sameSource({ ...body, model: 'b' }, body))).toThrow(/changed in place/);
  });
});
