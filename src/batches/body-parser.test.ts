import { describe, expect, it } from 'vitest';
import {
  BatchBodyError,
  type BatchBodyEvent,
  BatchBodyParser,
  type BatchBodyParserOptions,
} from './body-parser.js';

const LIMITS: BatchBodyParserOptions = { maxItemBytes: 1 << 20 };

/** Deterministic PRNG (mulberry32) so random chunkings and documents are reproducible. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const buf = (doc: string | Buffer): Buffer => (typeof doc === 'string' ? Buffer.from(doc, 'utf8') : doc);

/** Feeds `doc` in chunks whose sizes come from `size(k)` and returns every event, then calls end(). */
function feed(doc: string | Buffer, size: (k: number) => number, opts = LIMITS): BatchBodyEvent[] {
  const b = buf(doc);
  const p = new BatchBodyParser(opts);
  const out: BatchBodyEvent[] = [];
  for (let o = 0, k = 0; o < b.length; k++) {
    const n = Math.max(1, size(k));
    out.push(...p.write(b.subarray(o, o + n)));
    o += n;
  }
  p.end();
  expect(p.bytes).toBe(b.length);
  return out;
}
const whole = (doc: string | Buffer, opts = LIMITS) => feed(doc, () => buf(doc).length, opts);
const bytewise = (doc: string | Buffer, opts = LIMITS) => feed(doc, () => 1, opts);
const randomly = (doc: string | Buffer, seed: number, max = 40, opts = LIMITS) => {
  const r = rng(seed);
  return feed(doc, () => 1 + Math.floor(r() * max), opts);
};

/** The error `doc` raises (from write or end), and where it was raised. */
function failure(
  doc: string | Buffer,
  opts = LIMITS,
  chunk = Number.POSITIVE_INFINITY,
): { err: BatchBodyError; at: 'write' | 'end'; events: BatchBodyEvent[] } {
  const b = buf(doc);
  const p = new BatchBodyParser(opts);
  const events: BatchBodyEvent[] = [];
  let at: 'write' | 'end' = 'write';
  try {
    for (let o = 0; o < b.length; o += Math.min(chunk, b.length))
      events.push(...p.write(b.subarray(o, o + chunk)));
    at = 'end';
    p.end();
  } catch (err) {
    expect(err).toBeInstanceOf(BatchBodyError);
    return { err: err as BatchBodyError, at, events };
  }
  throw new Error(`expected a BatchBodyError for ${b.toString()}`);
}

/** The events a document built by JSON.stringify(obj) must produce. */
function expected(obj: Record<string, unknown>): BatchBodyEvent[] {
  const out: BatchBodyEvent[] = [];
  for (const [name, value] of Object.entries(obj)) {
    if (name !== 'requests') out.push({ kind: 'field', name, value });
    else
      for (const [index, el] of (value as unknown[]).entries())
        out.push({ kind: 'request', index, value: el, raw: JSON.stringify(el) });
  }
  return out;
}

/** Runs every chunking strategy and checks they all give `want`. */
function expectAllChunkings(doc: string | Buffer, want: BatchBodyEvent[], opts = LIMITS): void {
  expect(whole(doc, opts)).toEqual(want);
  expect(bytewise(doc, opts)).toEqual(want);
  for (const seed of [1, 2, 3, 42, 1337]) expect(randomly(doc, seed, 40, opts)).toEqual(want);
}

const tricky = {
  custom_id: 'a]}"\\',
  body: {
    model: 'm',
    messages: [{ role: 'user', content: 'brackets ] } [ { and quotes " \\" \\\\ " end' }],
    nested: [[[]], {}, [{ a: [1, { b: '}' }, '{', '[', ']'] }]],
    controls: 'tab\t nl\n cr\r nul\u0000 bs\b',
    unicode: 'café € 😀 日本語',
    endsWithBackslash: '\\',
    twoBackslashes: '\\\\',
    threeBackslashesThenQuote: '\\\\\\"',
    emptyString: '',
    numbers: [0, -1, 1.5e-7, 123456789],
    literals: [true, false, null],
  },
};

describe('BatchBodyParser: valid documents', () => {
  const requests = [{ custom_id: 'a', body: { x: 1 } }, tricky, { custom_id: 'c', body: {} }];
  const fields = {
    endpoint: '/v1/chat/completions',
    model: 'x',
    completion_window: '24h',
    provider: { only: ['openai'] },
  };

  it.each([
    ['first', { requests, ...fields }],
    [
      'middle',
      {
        endpoint: fields.endpoint,
        model: fields.model,
        requests,
        completion_window: fields.completion_window,
        provider: fields.provider,
      },
    ],
    ['last', { ...fields, requests }],
  ])('emits fields and requests in document order with requests %s', (_where, obj) => {
    const doc = JSON.stringify(obj);
    const want = expected(obj);
    expect(want.filter((e) => e.kind === 'request')).toHaveLength(3);
    expectAllChunkings(doc, want);
  });

  it('handles an empty requests array and a document without requests', () => {
    expectAllChunkings('{"requests":[],"model":"x"}', [{ kind: 'field', name: 'model', value: 'x' }]);
    expectAllChunkings('{ "requests" : [ ] }', []);
    expectAllChunkings('{}', []);
    expectAllChunkings(' \n\t{ } \r\n', []);
  });

  it('parses every kind of top-level field value', () => {
    const obj = {
      s: 'str "q" \\ }',
      n: -12.5e3,
      z: 0,
      t: true,
      f: false,
      nul: null,
      o: { a: [1, { b: ']' }] },
      a: [[], {}, '[', 1],
      e: {},
      ea: [],
    };
    expectAllChunkings(JSON.stringify(obj), expected(obj));
    // Scalars followed by whitespace, and at the end of the object.
    expectAllChunkings('{"a": 1 ,"b":true\n,"c":null}', [
      { kind: 'field', name: 'a', value: 1 },
      { kind: 'field', name: 'b', value: true },
      { kind: 'field', name: 'c', value: null },
    ]);
  });

  it('gives `raw` as the exact element text, whitespace and escapes included', () => {
    const el0 =
      '{ "custom_id" : "e\\u00e9\\ud83d\\ude00" ,\n "body" : { "x" : [ 1 , 2 ] , "s":"\\\\\\"}]" , "p":"\\/" } }';
    const el1 = '{}';
    const el2 = '{"k":"é😀"}';
    const doc = `{"requests" : [\n  ${el0} ,${el1},\n${el2}\n ] , "n":1}`;
    const want: BatchBodyEvent[] = [
      { kind: 'request', index: 0, value: JSON.parse(el0), raw: el0 },
      { kind: 'request', index: 1, value: {}, raw: el1 },
      { kind: 'request', index: 2, value: { k: 'é😀' }, raw: el2 },
      { kind: 'field', name: 'n', value: 1 },
    ];
    expect(JSON.parse(el0)).toEqual({ custom_id: 'eé😀', body: { x: [1, 2], s: '\\"}]', p: '/' } });
    expectAllChunkings(doc, want);
  });

  it('keeps raw elements of a pretty-printed document as they appear in it', () => {
    const obj = { model: 'x', requests: [tricky, { a: [1, 2] }] };
    const doc = JSON.stringify(obj, null, 2);
    const events = bytewise(doc);
    const reqs = events.filter((e) => e.kind === 'request');
    expect(reqs.map((e) => e.value)).toEqual(obj.requests);
    let from = 0;
    for (const e of reqs) {
      const at = doc.indexOf(e.raw, from);
      expect(at).toBeGreaterThan(from);
      expect(e.raw).toMatch(/^\{[\s\S]*\}$/);
      from = at + e.raw.length;
    }
    expect(events).toEqual(whole(doc));
  });

  it('decodes escaped field names and emits them decoded', () => {
    expectAllChunkings('{"mo\\u0064el":"x","\\"q\\"":1,"é":2}', [
      { kind: 'field', name: 'model', value: 'x' },
      { kind: 'field', name: '"q"', value: 1 },
      { kind: 'field', name: 'é', value: 2 },
    ]);
  });

  it('gives identical events for every two-way split of a tricky document', () => {
    const obj = { endpoint: 'e\\"', requests: [tricky, tricky], tail: 'é😀\\' };
    const b = Buffer.from(JSON.stringify(obj));
    const want = expected(obj);
    for (let k = 0; k <= b.length; k++) {
      const p = new BatchBodyParser(LIMITS);
      const events = [...p.write(b.subarray(0, k)), ...p.write(b.subarray(k))];
      p.end();
      expect(events, `split at ${k}`).toEqual(want);
    }
  });

  it('reassembles multi-byte characters split across chunks', () => {
    // é is 2 bytes, € 3, 😀 4: cut inside each of them.
    const doc = '{"requests":[{"t":"é€😀"}],"f":"😀"}';
    const b = Buffer.from(doc);
    const start = b.indexOf(Buffer.from('é'));
    for (let cut = start + 1; cut < start + 9; cut++) {
      const p = new BatchBodyParser(LIMITS);
      expect(p.write(b.subarray(0, cut))).toEqual([]);
      const events = p.write(b.subarray(cut));
      p.end();
      expect(events).toEqual([
        { kind: 'request', index: 0, value: { t: 'é€😀' }, raw: '{"t":"é€😀"}' },
        { kind: 'field', name: 'f', value: '😀' },
      ]);
    }
  });

  it('handles escapes split across chunks (backslash at the end of a chunk)', () => {
    const el = '{"a":"x\\"y\\\\","b":"\\u00e9"}';
    const doc = `{"requests":[${el}]}`;
    const b = Buffer.from(doc);
    // Cut right after each backslash, and inside \u00e9.
    const cuts = [...b.keys()].filter((i) => b[i - 1] === 0x5c || b[i - 2] === 0x5c || b[i - 3] === 0x5c);
    expect(cuts.length).toBeGreaterThan(6);
    for (const cut of cuts) {
      const p = new BatchBodyParser(LIMITS);
      const events = [...p.write(b.subarray(0, cut)), ...p.write(b.subarray(cut))];
      p.end();
      expect(events, `cut at ${cut}`).toEqual([
        { kind: 'request', index: 0, value: JSON.parse(el), raw: el },
      ]);
    }
  });

  it('emits each event from the write that completes it', () => {
    const p = new BatchBodyParser(LIMITS);
    expect(p.write(Buffer.from('{"model":"x'))).toEqual([]);
    expect(p.write(Buffer.from('","requests":[{"a":1},{"b"'))).toEqual([
      { kind: 'field', name: 'model', value: 'x' },
      { kind: 'request', index: 0, value: { a: 1 }, raw: '{"a":1}' },
    ]);
    expect(p.write(Buffer.from(':2}],"n":12'))).toEqual([
      { kind: 'request', index: 1, value: { b: 2 }, raw: '{"b":2}' },
    ]);
    // A number is only complete once its delimiter arrives.
    expect(p.write(Buffer.from('3'))).toEqual([]);
    expect(p.write(Buffer.from('}'))).toEqual([{ kind: 'field', name: 'n', value: 123 }]);
    expect(p.write(Buffer.alloc(0))).toEqual([]);
    p.end();
    expect(p.bytes).toBe(Buffer.byteLength('{"model":"x","requests":[{"a":1},{"b":2}],"n":123}'));
  });

  it('skips a leading UTF-8 BOM, even split across chunks', () => {
    const doc = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":1}')]);
    expectAllChunkings(doc, [{ kind: 'field', name: 'a', value: 1 }]);
    expect(failure(Buffer.from([0xef, 0xbb, 0x7b, 0x7d])).err.message).toBe('Body must be a JSON object');
    expect(failure(' \ufeff{}').err.message).toBe('Body must be a JSON object');
  });

  it('matches JSON.parse on random documents in random chunkings', () => {
    const pool = [
      'a',
      'Z',
      ' ',
      '"',
      '\\',
      '{',
      '}',
      '[',
      ']',
      ',',
      ':',
      'é',
      '€',
      '😀',
      '\n',
      '\u0001',
      '\u2028',
    ];
    for (let seed = 1; seed <= 12; seed++) {
      const r = rng(seed);
      const str = () =>
        Array.from({ length: Math.floor(r() * 12) }, () => pool[Math.floor(r() * pool.length)]).join('');
      const value = (depth: number): unknown => {
        const pick = Math.floor(r() * (depth > 3 ? 4 : 6));
        if (pick === 0) return str();
        if (pick === 1) return Math.round((r() - 0.5) * 1e6) / 100;
        if (pick === 2) return [true, false, null][Math.floor(r() * 3)];
        if (pick === 3) return Math.floor(r() * 1000);
        if (pick === 4) return Array.from({ length: Math.floor(r() * 4) }, () => value(depth + 1));
        return Object.fromEntries(
          Array.from({ length: Math.floor(r() * 4) }, () => [str(), value(depth + 1)]),
        );
      };
      const requests = Array.from({ length: 1 + Math.floor(r() * 8) }, () => ({
        custom_id: str(),
        body: value(0),
      }));
      const obj: Record<string, unknown> = { [`f${str()}`]: value(0), requests, [`g${str()}`]: value(0) };
      const doc = JSON.stringify(obj);
      expectAllChunkings(doc, expected(obj));
      for (let s = 0; s < 5; s++) expect(randomly(doc, seed * 100 + s, 3)).toEqual(expected(obj));
    }
  });

  it('accepts an element exactly at maxItemBytes and fields exactly at maxFieldBytes', () => {
    const el = '{"a":"xxxxx"}'; // 13 bytes
    const opts = { maxItemBytes: 13, maxFieldBytes: 5 };
    expectAllChunkings(
      `{"requests":[${el},${el}],"f":"abc"}`,
      [
        { kind: 'request', index: 0, value: { a: 'xxxxx' }, raw: el },
        { kind: 'request', index: 1, value: { a: 'xxxxx' }, raw: el },
        { kind: 'field', name: 'f', value: 'abc' },
      ],
      opts,
    );
  });
});

describe('BatchBodyParser: malformed documents', () => {
  it('rejects bodies that are not one JSON object', () => {
    for (const doc of ['[1,2]', '[{"custom_id":"a"}]', '"str"', '42', 'null', 'x', '', '   ', '\n']) {
      const { err } = failure(doc);
      expect(err.message, JSON.stringify(doc)).toBe('Body must be a JSON object');
      expect(err.index).toBeUndefined();
    }
  });

  it('reports missing commas and colons with the byte offset', () => {
    expect(failure('{"a":1 "b":2}').err.message).toBe("Malformed JSON at byte 7: expected ',' or '}'");
    expect(failure('{"a":"x""b":2}').err.message).toBe("Malformed JSON at byte 8: expected ',' or '}'");
    expect(failure('{"a":{}"b":2}').err.message).toBe("Malformed JSON at byte 7: expected ',' or '}'");
    expect(failure('{"requests":[{} {}]}').err.message).toBe(
      "Malformed JSON at byte 16: expected ',' or ']'",
    );
    expect(failure('{"a" 1}').err.message).toBe("Malformed JSON at byte 5: expected ':'");
    expect(failure('{"a":}').err.message).toBe('Malformed JSON at byte 5: expected a value');
    expect(failure('{"a":,"b":1}').err.message).toBe('Malformed JSON at byte 5: expected a value');
    expect(failure('{a:1}').err.message).toBe("Malformed JSON at byte 1: expected a field name or '}'");
    expect(failure('{,}').err.message).toBe("Malformed JSON at byte 1: expected a field name or '}'");
    expect(failure('{"requests":[,{}]}').err.message).toBe(
      'Malformed JSON at byte 13: expected a requests[] element',
    );
  });

  it('rejects trailing commas', () => {
    expect(failure('{"a":1,}').err.message).toBe('Malformed JSON at byte 7: expected a field name');
    expect(failure('{"requests":[{},]}').err.message).toBe(
      "Malformed JSON at byte 16: expected a requests[] element after ','",
    );
  });

  it('rejects garbage after the closing brace (whitespace is fine)', () => {
    expect(whole('{"a":1}  \n')).toEqual([{ kind: 'field', name: 'a', value: 1 }]);
    expect(failure('{"a":1} x').err.message).toBe(
      'Malformed JSON at byte 8: unexpected data after the JSON object',
    );
    expect(failure('{}}').err.message).toBe(
      'Malformed JSON at byte 2: unexpected data after the JSON object',
    );
    expect(failure('{}{}', LIMITS, 1).err.message).toBe(
      'Malformed JSON at byte 2: unexpected data after the JSON object',
    );
  });

  it('reports a truncated document only at end(), for every prefix of a valid one', () => {
    const doc = Buffer.from(
      JSON.stringify({ model: 'é', requests: [tricky, { a: 1 }], n: 12, o: { x: [1] } }),
    );
    for (let k = 1; k < doc.length; k++) {
      const p = new BatchBodyParser(LIMITS);
      p.write(doc.subarray(0, k)); // must not throw
      expect(() => p.end(), `prefix of ${k} bytes`).toThrow(BatchBodyError);
      expect(() => p.end()).toThrow(/^Unexpected end of body at byte \d+/);
    }
    const truncated = '{"model":"x","requests":[{"a":1},{"b":';
    const { err, at, events } = failure(truncated);
    expect(at).toBe('end');
    expect(err.message).toBe(`Unexpected end of body at byte ${truncated.length}, inside requests[1]`);
    expect(events.map((e) => e.kind)).toEqual(['field', 'request']);
  });

  it('reports an unterminated string at end()', () => {
    for (const doc of [
      '{"a":"abc',
      '{"requests":[{"a":"x}]}',
      '{"a',
      '{"a":"\\"}',
      '{"requests":[{"a":"\\\\\\"}]}',
    ]) {
      const { err, at } = failure(doc);
      expect(at, doc).toBe('end');
      expect(err.message).toMatch(/^Unexpected end of body/);
    }
  });

  it('rejects non-object elements with their index', () => {
    const cases: [string, number][] = [
      ['{"requests":[{}, 5]}', 1],
      ['{"requests":["x"]}', 0],
      ['{"requests":[{},{},[]]}', 2],
      ['{"requests":[null]}', 0],
      ['{"requests":[{}, -1]}', 1],
      ['{"requests":[true]}', 0],
    ];
    for (const [doc, index] of cases) {
      const { err, at } = failure(doc);
      expect(at).toBe('write');
      expect(err.message).toBe(`requests[${index}] must be an object`);
      expect(err.index).toBe(index);
      expect(err.tooLarge).toBe(false);
    }
  });

  it('rejects invalid element JSON with its index and the JSON.parse message', () => {
    for (const [doc, index] of [
      ['{"requests":[{"a":}]}', 0],
      ['{"requests":[{},{"a":1,}]}', 1],
      ['{"requests":[{},{},{"a":[1}]}', 2],
      ['{"requests":[{"a":tru}]}', 0],
      ['{"requests":[{"a":"\\x"}]}', 0],
      ['{"requests":[{"a":"raw\ncontrol"}]}', 0],
    ] as const) {
      const { err } = failure(doc);
      expect(err.message, doc).toMatch(new RegExp(`^requests\\[${index}\\] is not valid JSON: .+`));
      expect(err.index).toBe(index);
    }
    let msg = '';
    try {
      JSON.parse('{"a":}');
    } catch (e) {
      msg = (e as Error).message;
    }
    expect(failure('{"requests":[{"a":}]}').err.message).toBe(`requests[0] is not valid JSON: ${msg}`);
  });

  it('rejects invalid field values naming the field', () => {
    expect(failure('{"a":tru}').err.message).toMatch(/^Field "a" is not valid JSON: /);
    expect(failure('{"a":1.}').err.message).toMatch(/^Field "a" is not valid JSON: /);
    expect(failure('{"a":{"b":}}').err.message).toMatch(/^Field "a" is not valid JSON: /);
    expect(failure('{"a":[1]]}').err.message).toBe("Malformed JSON at byte 8: expected ',' or '}'");
    expect(failure('{"a":"\\q"}').err.message).toMatch(/^Field "a" is not valid JSON: /);
    expect(failure('{"a\\q":1}').err.message).toBe('Malformed JSON at byte 5: invalid field name');
  });

  it('requires "requests" to be an array', () => {
    for (const doc of ['{"requests":{}}', '{"requests":null}', '{"requests":"x"}', '{"requests":1}']) {
      expect(failure(doc).err.message).toBe('"requests" must be an array');
    }
  });

  it('rejects duplicate top-level keys, compared after decoding escapes', () => {
    expect(failure('{"endpoint":"a","endpoint":"b"}').err.message).toBe('Duplicate field "endpoint"');
    expect(failure('{"requests":[],"model":1,"requests":[]}').err.message).toBe('Duplicate field "requests"');
    expect(failure('{"a":1,"\\u0061":2}').err.message).toBe('Duplicate field "a"');
  });

  it('rejects an element over maxItemBytes with its index, as soon as it exceeds the limit', () => {
    const opts = { maxItemBytes: 100 };
    const small = '{"a":1}';
    const { err } = failure(`{"requests":[${small},{"a":"${'x'.repeat(200)}"}]}`, opts);
    expect(err.message).toBe('requests[1] is larger than 100 bytes');
    expect(err.index).toBe(1);
    expect(err.tooLarge).toBe(true);
    // One byte over, completed within a single chunk.
    expect(failure(`{"requests":[{"a":"${'x'.repeat(93)}"}]}`, opts).err.message).toBe(
      'requests[0] is larger than 100 bytes',
    );

    // Streamed: the write that pushes the element past the limit throws; the rest is never needed.
    const p = new BatchBodyParser(opts);
    expect(p.write(Buffer.from(`{"requests":[${small},{"a":"`))).toHaveLength(1);
    let threwAfter = -1;
    for (let k = 0; k < 100; k++) {
      try {
        p.write(Buffer.from('xxxxxxxxxx'));
      } catch (e) {
        expect((e as BatchBodyError).message).toBe('requests[1] is larger than 100 bytes');
        threwAfter = k;
        break;
      }
    }
    // The element holds 6 bytes before the loop, so it passes 100 bytes during the 10th write (k = 9).
    expect(threwAfter).toBe(9);
    // And on a single chunk that stops in the middle of the oversized element.
    expect(() =>
      new BatchBodyParser(opts).write(Buffer.from(`{"requests":[{"a":"${'x'.repeat(150)}`)),
    ).toThrow('requests[0] is larger than 100 bytes');
  });

  it('rejects field values and names over maxFieldBytes', () => {
    const { err } = failure(`{"model":"${'m'.repeat(65535)}"}`, LIMITS, 4096);
    expect(err.message).toBe('Field "model" is larger than 65536 bytes');
    expect(err.tooLarge).toBe(true);
    expect(err.index).toBeUndefined();
    expect(whole(`{"model":"${'m'.repeat(65534)}"}`)).toHaveLength(1);
    const opts = { maxItemBytes: 1000, maxFieldBytes: 8 };
    expect(failure('{"p":{"only":["openai"]}}', opts, 3).err.message).toBe(
      'Field "p" is larger than 8 bytes',
    );
    expect(failure('{"n":1234567890}', opts).err.message).toBe('Field "n" is larger than 8 bytes');
    // Keys are bounded separately (1024 bytes, quotes included).
    expect(whole(`{"${'k'.repeat(1022)}":1}`, opts)).toHaveLength(1);
    expect(failure(`{"${'k'.repeat(1023)}":1}`, opts, 100).err.message).toBe(
      'A field name is longer than 1024 bytes',
    );
  });

  it('stays failed after an error', () => {
    const p = new BatchBodyParser(LIMITS);
    expect(() => p.write(Buffer.from('{"a":1,}'))).toThrow('expected a field name');
    expect(() => p.write(Buffer.from('"b":2}'))).toThrow('expected a field name');
    expect(() => p.end()).toThrow('expected a field name');
    expect(p.bytes).toBe(8);
  });

  it('gives BatchBodyError a name and keeps it an Error', () => {
    const e = new BatchBodyError('requests[2] must be an object', 2);
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe('BatchBodyError');
    expect(e.index).toBe(2);
    expect(e.tooLarge).toBe(false);
  });
});
