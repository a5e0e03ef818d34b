/**
 * A JSON body that keeps the bytes it was parsed from, so that a body made from it — a lane's: the
 * caller's members but a few — is serialized with its unchanged members copied from those bytes
 * instead of serialized again. A call's body can be megabytes (an image, an agent's long history);
 * `JSON.stringify` and the UTF-8 encoding of its result cost the event loop more than the parse.
 * The copy is also the most faithful pass-through: the provider gets the caller's own bytes (its
 * number spellings, its escapes).
 *
 * What makes the copy right: a member is copied only when the new body holds the very value the
 * parse made (`===`), and nothing changes a parsed body in place — bodies made from it are new
 * objects (spreads, maps; the content filters' `structuredClone`). GATEHOUSE_VERIFY_RAW_JSON=1 (the
 * test suite sets it) checks each serialization against `JSON.stringify` and throws on a difference.
 */

const SOURCE = Symbol('raw JSON source');

interface Source {
  bytes: Buffer;
  /** The parsed body's members as the parse made them (a member set on the body later is not theirs). */
  body: Record<string, unknown>;
  /** Where each top-level member's value lies in `bytes`; null when the scan could not follow them. */
  spans?: Map<string, Span> | null;
}
type Span = [start: number, end: number];
type Sourced = { [SOURCE]?: Source };

const VERIFY = process.env.GATEHOUSE_VERIFY_RAW_JSON === '1';
// Smaller bodies are serialized as before, and smaller members too: scanning, slicing and copying
// pay off only on large ones. Under verification every body and member is copied, so that the
// test suite's every lane call checks that nothing changed a parsed body in place.
const MIN_BODY_BYTES = VERIFY ? 0 : 16 * 1024;
const MIN_MEMBER_BYTES = VERIFY ? 1 : 512;

/**
 * Remembers that `body` was parsed from `bytes` (a non-enumerable property: spreads, clones and
 * JSON drop it). Small bodies are not marked.
 */
export function keepBytes(body: unknown, bytes: Buffer): void {
  if (bytes.length < MIN_BODY_BYTES || typeof body !== 'object' || body === null || Array.isArray(body))
    return;
  Object.defineProperty(body, SOURCE, {
    value: { bytes, body: { ...(body as Record<string, unknown>) } } satisfies Source,
  });
}

/** `to`, a new body made from `from`, serializes from `from`'s bytes where their members are the same. */
export function sameSource<T extends object>(to: T, from: object): T {
  const src = (from as Sourced)[SOURCE];
  if (src && to !== from && !Object.hasOwn(to, SOURCE)) Object.defineProperty(to, SOURCE, { value: src });
  return to;
}

/**
 * `body` as JSON: what `JSON.stringify(body)` says, with each top-level member it shares with the
 * body it was made from (`sameSource`) copied from that body's bytes. A Buffer when any member was
 * copied, else the string.
 */
export function jsonBody(body: unknown): string | Buffer {
  const src = body ? (body as Sourced)[SOURCE] : undefined;
  if (!src) return JSON.stringify(body);
  if (src.spans === undefined) src.spans = memberSpans(src.bytes);
  const spans = src.spans;
  if (!spans) return JSON.stringify(body);
  const parts: Buffer[] = [];
  let text = '{';
  let first = true;
  let copied = false;
  const obj = body as Record<string, unknown>;
  for (const key of Object.keys(obj)) {
    const value = obj[key];
    if (value === undefined || typeof value === 'function' || typeof value === 'symbol') continue;
    text += `${first ? '' : ','}${JSON.stringify(key)}:`;
    first = false;
    const span = value === src.body[key] ? spans.get(key) : undefined;
    if (span && span[1] - span[0] >= MIN_MEMBER_BYTES) {
      parts.push(Buffer.from(text), src.bytes.subarray(span[0], span[1]));
      text = '';
      copied = true;
    } else text += JSON.stringify(value);
  }
  text += '}';
  if (!copied) return text;
  parts.push(Buffer.from(text));
  const out = Buffer.concat(parts);
  if (VERIFY) verify(out, body);
  return out;
}

function verify(out: Buffer, body: unknown): void {
  const expected = JSON.stringify(body);
  if (JSON.stringify(JSON.parse(out.toString('utf8'))) !== expected)
    throw new Error('raw JSON: a copied member differs from the body (was a parsed body changed in place?)');
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

const isSpace = (c: number | undefined) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

function skipSpace(b: Buffer, i: number): number {
  while (i < b.length && isSpace(b[i])) i++;
  return i;
}

/** The index just past the string starting at `i` (a quote), or -1 when it never ends. */
function skipString(b: Buffer, i: number): number {
  let at = b.indexOf(QUOTE, i + 1);
  while (at !== -1) {
    let slashes = 0;
    while (b[at - 1 - slashes] === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return at + 1;
    at = b.indexOf(QUOTE, at + 1);
  }
  return -1;
}

/** The index just past the value starting at `i`, or -1 when it is cut off. */
function skipValue(b: Buffer, i: number): number {
  const c = b[i];
  if (c === QUOTE) return skipString(b, i);
  if (c === OPEN_BRACE || c === OPEN_BRACKET) {
    let depth = 0;
    while (i < b.length) {
      const d = b[i];
      if (d === QUOTE) {
        i = skipString(b, i);
        if (i === -1) return -1;
        continue;
      }
      if (d === OPEN_BRACE || d === OPEN_BRACKET) depth++;
      else if (d === CLOSE_BRACE || d === CLOSE_BRACKET) {
        depth--;
        if (depth === 0) return i + 1;
      }
      i++;
    }
    return -1;
  }
  // A number, true, false or null: up to the next delimiter.
  while (i < b.length) {
    const d = b[i];
    if (d === COMMA || d === CLOSE_BRACE || isSpace(d)) return i;
    i++;
  }
  return -1;
}

/**
 * Where the value of each top-level member of the JSON object in `b` lies (the last of a repeated
 * key, as JSON.parse keeps), or null when the scan cannot follow it (not an object, a key written
 * with escapes). `b` was parsed already: it is well-formed JSON.
 */
export function memberSpans(b: Buffer): Map<string, Span> | null {
  let i = skipSpace(b, 0);
  // A byte-order mark (which the parse skipped) or anything but an object: not followed.
  if (b[i] !== OPEN_BRACE) return null;
  i = skipSpace(b, i + 1);
  const spans = new Map<string, Span>();
  if (b[i] === CLOSE_BRACE) return spans;
  for (;;) {
    if (b[i] !== QUOTE) return null;
    const keyEnd = skipString(b, i);
    if (keyEnd === -1) return null;
    for (let k = i + 1; k < keyEnd - 1; k++) if (b[k] === BACKSLASH) return null;
    const key = b.toString('utf8', i + 1, keyEnd - 1);
    i = skipSpace(b, keyEnd);
    if (b[i] !== COLON) return null;
    const start = skipSpace(b, i + 1);
    const end = skipValue(b, start);
    if (end === -1 || end === start) return null;
    spans.set(key, [start, end]);
    i = skipSpace(b, end);
    if (b[i] === CLOSE_BRACE) return spans;
    if (b[i] !== COMMA) return null;
    i = skipSpace(b, i + 1);
  }
}
