/**
 * SSE read as bytes, for relaying a stream as it came: where each event's block starts and ends
 * (its blank line included), its name and its data — a view of the bytes, decoded only by a reader
 * that needs it. Field rules as the SSE specification has them (and `eventsource-parser`, which
 * the decoding path uses): lines end with CRLF, LF or CR; one space after the colon is dropped; a
 * block without data (a comment, a ping) is no event.
 */
import { isAscii } from 'node:buffer';

export interface ByteEvent {
  /** Offsets of its block in the buffer `SseByteSplitter.push` returned. */
  start: number;
  end: number;
  /** The `event:` field; undefined for unnamed events. */
  name: string | undefined;
  /** Its data: a view of the bytes when on one line, the lines joined (decoded) when on several. */
  data: Buffer | string;
}

/** What one read completed: its bytes up to the last block boundary, and the events in them. */
export interface ByteBatch {
  bytes: Buffer;
  events: ByteEvent[];
}

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const SPACE = 0x20;

/**
 * Cuts a byte stream at its SSE block boundaries: `push` returns the bytes of the blocks a read
 * completed (the rest is carried to the next read), so a frame relayed from them always ends on a
 * whole event — a multi-byte character or an event split across reads is never cut.
 */
export class SseByteSplitter {
  private carry: Buffer | null = null;
  private started = false;

  push(chunk: Buffer): ByteBatch | null {
    const buf = this.carry ? Buffer.concat([this.carry, chunk]) : chunk;
    const events: ByteEvent[] = [];
    const len = buf.length;
    // CR line ends are rare: without one, each line end is one native search.
    const cr = buf.indexOf(CR) !== -1;
    let pos = 0;
    if (!this.started) {
      // A byte order mark opening the stream is no part of its first field (it is relayed).
      if (len < 3 && BOM.subarray(0, len).equals(buf)) {
        this.carry = Buffer.from(buf);
        return null;
      }
      if (buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf) pos = 3;
    }
    let blockStart = 0;
    let boundary = 0;
    let name: string | undefined;
    let data: Buffer | string | null = null;
    while (pos < len) {
      let lineEnd: number;
      let next: number;
      if (!cr) {
        lineEnd = buf.indexOf(LF, pos);
        if (lineEnd === -1) break;
        next = lineEnd + 1;
      } else {
        lineEnd = pos;
        while (lineEnd < len && buf[lineEnd] !== LF && buf[lineEnd] !== CR) lineEnd++;
        if (lineEnd === len) break;
        if (buf[lineEnd] === CR) {
          // A CR last in the read may be the first half of a CRLF: wait for the next byte.
          if (lineEnd + 1 === len) break;
          next = buf[lineEnd + 1] === LF ? lineEnd + 2 : lineEnd + 1;
        } else next = lineEnd + 1;
      }
      if (lineEnd === pos) {
        if (data !== null) events.push({ start: blockStart, end: next, name, data });
        name = undefined;
        data = null;
        blockStart = next;
        boundary = next;
      } else if (buf[pos] !== COLON) {
        const field = fieldOf(buf, pos, lineEnd);
        if (field === DATA) {
          const value = buf.subarray(valueStart(buf, pos + 4, lineEnd), lineEnd);
          data = data === null ? value : `${data.toString()}\n${value.toString()}`;
        } else if (field === EVENT) {
          const value = buf.toString('utf8', valueStart(buf, pos + 5, lineEnd), lineEnd);
          name = value === '' ? undefined : value;
        }
      }
      pos = next;
    }
    // Until a block has passed, the carried bytes still open the stream (its mark included).
    if (boundary > 0) this.started = true;
    this.carry = boundary < len ? Buffer.from(buf.subarray(boundary)) : null;
    return boundary === 0 ? null : { bytes: buf.subarray(0, boundary), events };
  }
}

const DATA = 1;
const EVENT = 2;

/** `data` or `event` when the line is that field (its name alone, or followed by a colon). */
function fieldOf(buf: Buffer, pos: number, end: number): number {
  const b = buf[pos];
  if (b === 0x64 && buf[pos + 1] === 0x61 && buf[pos + 2] === 0x74 && buf[pos + 3] === 0x61) {
    return pos + 4 === end || buf[pos + 4] === COLON ? DATA : 0;
  }
  if (
    b === 0x65 &&
    buf[pos + 1] === 0x76 &&
    buf[pos + 2] === 0x65 &&
    buf[pos + 3] === 0x6e &&
    buf[pos + 4] === 0x74
  ) {
    return pos + 5 === end || buf[pos + 5] === COLON ? EVENT : 0;
  }
  return 0;
}

/** Where a field's value starts: after its colon and one space (the end for a bare field name). */
function valueStart(buf: Buffer, colon: number, end: number): number {
  if (colon >= end) return end;
  return buf[colon + 1] === SPACE ? colon + 2 : colon + 1;
}

/** The length in UTF-16 code units (a JavaScript string's) of UTF-8 bytes, without decoding them. */
export function utf16Length(bytes: Buffer): number {
  if (isAscii(bytes)) return bytes.length;
  let n = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i] as number;
    if ((b & 0xc0) !== 0x80) n += b >= 0xf0 ? 2 : 1;
  }
  return n;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

// The readers below take a JSON text's bytes as a latin1 string (`buf.toString('latin1')`: one
// character per byte, made without decoding UTF-8): its `indexOf` runs inside V8, where a Buffer's
// crosses into C++ per call — more than a small chunk's `JSON.parse` when a chunk needs several.

/** Whether a JSON text has `"key": <a value starting with the byte `first`>` (whitespace allowed). */
export function hasKeyWith(json: string, key: string, first: number): boolean {
  return valueAt(json, key, 0, first) !== -1;
}

/**
 * The summed lengths (UTF-16 code units, as JavaScript counts them) of the string values of `key`
 * (a quoted name, e.g. `"content"`) anywhere in a JSON text, without parsing it. A key name can
 * only match where it is a key: inside a JSON string its quotes are escaped.
 */
export function stringValuesLength(json: string, key: string): number {
  let n = 0;
  let from = 0;
  for (;;) {
    const at = valueAt(json, key, from, QUOTE);
    if (at === -1) return n;
    let i = at + 1;
    while (i < json.length) {
      const b = json.charCodeAt(i);
      if (b === QUOTE) break;
      if (b === BACKSLASH) {
        // An escape is one code unit (`\uD83D\uDE00` is two escapes, two units, as in the string).
        i += json.charCodeAt(i + 1) === 0x75 ? 6 : 2;
        n++;
        continue;
      }
      if ((b & 0xc0) !== 0x80) n += b >= 0xf0 ? 2 : 1;
      i++;
    }
    from = i + 1;
  }
}

/**
 * A string value of `key` in a JSON text (decoded), without parsing the rest of it: the first, or
 * with `last` the last. Undefined when the key has no string value.
 */
export function stringValue(json: string, key: string, last = false): string | undefined {
  let found: string | undefined;
  let from = 0;
  for (;;) {
    const at = valueAt(json, key, from, QUOTE);
    if (at === -1) return found;
    let i = at + 1;
    while (i < json.length && json.charCodeAt(i) !== QUOTE) i += json.charCodeAt(i) === BACKSLASH ? 2 : 1;
    const quoted = json.slice(at, i + 1);
    // Bytes above ASCII are UTF-8: decoded before the JSON string is read.
    found = JSON.parse(
      /[\u0080-\u00ff]/.test(quoted) ? Buffer.from(quoted, 'latin1').toString('utf8') : quoted,
    );
    if (!last) return found;
    from = i + 1;
  }
}

/** The offset of the value of the next `key` from `from` whose first byte is `first` (-1: none). */
function valueAt(json: string, key: string, from: number, first: number): number {
  let at = json.indexOf(key, from);
  while (at !== -1) {
    let i = skipSpace(json, at + key.length);
    if (json.charCodeAt(i) === COLON) {
      i = skipSpace(json, i + 1);
      if (json.charCodeAt(i) === first) return i;
    }
    at = json.indexOf(key, at + key.length);
  }
  return -1;
}

function skipSpace(json: string, i: number): number {
  let j = i;
  for (;;) {
    const b = json.charCodeAt(j);
    if (b === SPACE || b === LF || b === CR || b === 0x09) j++;
    else return j;
  }
}
