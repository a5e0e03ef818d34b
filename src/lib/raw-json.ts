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

import { scanMembers } from './json-splice.js';

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

/**
 * Where the value of each top-level member of the JSON object in `b` lies (the last of a repeated
 * key, as JSON.parse keeps), or null when the scan cannot follow it (not an object, a key written
 * with escapes). `b` was parsed already: it is well-formed JSON.
 */
export function memberSpans(b: Buffer): Map<string, Span> | null {
  const spans = new Map<string, Span>();
  const close = scanMembers(b, (key, start, end) => {
    spans.set(key, [start, end]);
    return true;
  });
  return close === -1 ? null : spans;
}
