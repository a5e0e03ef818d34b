import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MIN_REFLECTED, REDACTED, Redactor } from './redaction.js';

const SECRET = 'sk-Live_9f8E7d6C5b4A3/+ é=&x?';
const redactor = new Redactor([SECRET]);
const bytes = Buffer.from(SECRET, 'utf8');

/** Every form a reflecting host may use, as it would appear inside a longer text. */
const reflections: [string, string][] = [
  ['raw', SECRET],
  ['JSON-escaped', JSON.stringify(SECRET).slice(1, -1)],
  ['JSON-escaped, ASCII only', 'sk-Live_9f8E7d6C5b4A3\\/+ \\u00e9=&x?'],
  ['URL-encoded (%20)', encodeURIComponent(SECRET)],
  ['form-encoded (+)', new URLSearchParams({ k: SECRET }).toString().slice(2)],
  ['JSON-escaped twice', JSON.stringify(JSON.stringify(SECRET)).slice(3, -3)],
  ['URL-encoded twice', encodeURIComponent(encodeURIComponent(SECRET))],
  ['HTML-escaped', 'sk-Live_9f8E7d6C5b4A3/+ é=&amp;x?'],
  ['base64', bytes.toString('base64')],
  ['base64url', bytes.toString('base64url')],
  ['hex', bytes.toString('hex')],
  ['HEX', bytes.toString('hex').toUpperCase()],
  ['upper case', SECRET.toUpperCase()],
  ['lower case', SECRET.toLowerCase()],
];

describe('Redactor', () => {
  it.each(reflections)('removes the %s form, in a longer text', (_, form) => {
    const out = redactor.redact(`before ${form} after`);
    expect(out).toBe(`before ${REDACTED} after`);
  });

  it('removes a secret inside a longer base64 text at each of the three alignments', () => {
    for (const lead of ['', 'a', 'ab', 'abc', 'abcd']) {
      for (const encode of ['base64', 'base64url'] as const) {
        const b64 = Buffer.from(`${lead}${SECRET}tail-bytes`).toString(encode);
        const out = redactor.redact(b64);
        // Only the characters mixing the secret's bits with its neighbours' remain around the marker.
        const n = bytes.length + lead.length;
        expect(out.indexOf(REDACTED)).toBe(Math.ceil((8 * lead.length) / 6));
        expect(out.slice(out.indexOf(REDACTED) + REDACTED.length)).toBe(b64.slice(Math.floor((8 * n) / 6)));
      }
    }
  });

  it(`removes any reflected piece of ${MIN_REFLECTED} characters or more, keeps shorter ones`, () => {
    for (let i = 0; i + MIN_REFLECTED <= SECRET.length; i++) {
      const piece = SECRET.slice(i, i + MIN_REFLECTED);
      expect(redactor.redact(`[${piece}]`)).toBe(`[${REDACTED}]`);
    }
    expect(redactor.redact(`<${SECRET.slice(3, 3 + MIN_REFLECTED - 1)}>`)).toBe(
      `<${SECRET.slice(3, 3 + MIN_REFLECTED - 1)}>`,
    );
  });

  it('takes a value with a lone surrogate (which encodeURIComponent refuses)', () => {
    const odd = new Redactor(['pre-\ud800-post-value 😀']);
    expect(odd.redact('x pre-\ud800-post-value 😀 y')).toBe(`x ${REDACTED} y`);
  });

  it('removes a value with quotes and backslashes JSON-escaped twice, and HTML-escaped', () => {
    const v = `q"uo\\te'<d>-${'x'.repeat(6)}`;
    const r = new Redactor([v]);
    const twice = JSON.stringify({ inner: JSON.stringify({ v }) });
    expect(r.redact(twice)).toBe(
      JSON.stringify({ inner: JSON.stringify({ v: 'X' }) }).replace('X', REDACTED),
    );
    const html = `<p>${v.replaceAll('&', '&amp;').replaceAll('"', '&quot;').replaceAll("'", '&#39;').replaceAll('<', '&lt;').replaceAll('>', '&gt;')}</p>`;
    expect(r.redact(html)).toBe(`<p>${REDACTED}</p>`);
  });

  it('leaves ordinary text alone', () => {
    const text = JSON.stringify({ ok: true, id: 'req_0123456789', live: 'sk-test', n: 42 });
    expect(redactor.redact(text)).toBe(text);
  });

  it('finds a secret split across chunks at any position, in every form', () => {
    for (const [, form] of reflections) {
      const body = Buffer.from(`start ${form} middle ${form} end`);
      for (let cut = 1; cut < body.length; cut += 3) {
        const s = redactor.stream();
        const out = s.push(body.subarray(0, cut)) + s.push(body.subarray(cut)) + s.end();
        expect(out).toBe(`start ${REDACTED} middle ${REDACTED} end`);
      }
    }
  });

  it('streams byte by byte (a multi-byte character split) with the same result', () => {
    const body = Buffer.from(`é ${SECRET} ü ${bytes.toString('hex')} ✓`);
    const s = redactor.stream();
    let out = '';
    for (const b of body) out += s.push(Buffer.from([b]));
    out += s.end();
    expect(out).toBe(`é ${REDACTED} ü ${REDACTED} ✓`);
  });

  it('redacts a 256 KiB body quickly', () => {
    const many = new Redactor(Array.from({ length: 20 }, (_, i) => `${SECRET}-${i}`));
    const body = `${'lorem ipsum dolor sit amet '.repeat(9_000)}${SECRET}`;
    const t0 = performance.now();
    expect(many.redact(body).endsWith(REDACTED)).toBe(true);
    expect(performance.now() - t0).toBeLessThan(3_000);
  });
});

describe('Redactor with long values', () => {
  const long = `-----BEGIN KEY-----\n${randomBytes(48_000).toString('base64')}\n-----END KEY-----`;

  it('indexes a 65 KiB value in bounded time and removes it whole, with no gap', () => {
    const t0 = performance.now();
    const r = new Redactor([long]);
    expect(performance.now() - t0).toBeLessThan(3_000);
    const json = JSON.stringify(long).slice(1, -1);
    for (const form of [
      long,
      json,
      Buffer.from(long).toString('base64'),
      Buffer.from(long).toString('hex'),
    ]) {
      expect(r.redact(`a ${form} b`)).toBe(`a ${REDACTED} b`);
    }
    // A piece is found and removed whole, also when the value arrives in chunks.
    expect(r.redact(`<${long.slice(1_000, 1_200)}>`)).toBe(`<${REDACTED}>`);
    const body = Buffer.from(`[${long}]`);
    const s = r.stream();
    let out = '';
    for (let i = 0; i < body.length; i += 1_000) out += s.push(body.subarray(i, i + 1_000));
    expect(out + s.end()).toBe(`[${REDACTED}]`);
  });
});
