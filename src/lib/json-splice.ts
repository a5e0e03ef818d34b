/**
 * The top-level members of a JSON object given as text or bytes, found without parsing it, and
 * setting some of them without parsing and re-serializing the rest. A relayed answer gets a few
 * members added (the provider, the cost in its usage, how it was routed) and keeps everything else
 * as the provider wrote it; re-serializing the whole parsed answer for that cost more than parsing
 * it did. (A request's bytes are scanned the same way: raw-json.ts.)
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

/** JSON text, or its UTF-8 bytes: the scan's indexes are characters of the one, bytes of the other. */
export type JsonText = string | Buffer;

const code = (src: JsonText, i: number): number | undefined =>
  typeof src === 'string' ? src.charCodeAt(i) : src[i];

const isSpace = (c: number | undefined) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

function skipSpace(src: JsonText, i: number): number {
  while (i < src.length && isSpace(code(src, i))) i++;
  return i;
}

/** The index just past the string starting at `i` (a quote), or -1 when it never ends. */
function skipString(src: JsonText, i: number): number {
  let at = src.indexOf('"', i + 1);
  while (at !== -1) {
    let slashes = 0;
    while (code(src, at - 1 - slashes) === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return at + 1;
    at = src.indexOf('"', at + 1);
  }
  return -1;
}

/** The index just past the value starting at `i`, or -1 when it is cut off. */
function skipValue(src: JsonText, i: number): number {
  const c = code(src, i);
  if (c === QUOTE) return skipString(src, i);
  if (c === OPEN_BRACE || c === OPEN_BRACKET) {
    let depth = 0;
    while (i < src.length) {
      const d = code(src, i);
      if (d === QUOTE) {
        i = skipString(src, i);
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
  while (i < src.length) {
    const d = code(src, i);
    if (d === COMMA || d === CLOSE_BRACE || isSpace(d)) return i;
    i++;
  }
  return -1;
}

/**
 * Walks the members of the JSON object `src`, calling `member` with each one's key and where its
 * value starts and ends (`member` returns false to stop). Returns the index of the closing brace,
 * or -1 when the scan cannot follow the object (not an object, cut off, a key written with escapes)
 * or `member` stopped it.
 */
export function scanMembers(
  src: JsonText,
  member: (key: string, start: number, end: number) => boolean,
): number {
  let i = skipSpace(src, 0);
  if (code(src, i) !== OPEN_BRACE) return -1;
  i = skipSpace(src, i + 1);
  if (code(src, i) === CLOSE_BRACE) return i;
  for (;;) {
    if (code(src, i) !== QUOTE) return -1;
    const keyEnd = skipString(src, i);
    if (keyEnd === -1) return -1;
    const key =
      typeof src === 'string' ? src.slice(i + 1, keyEnd - 1) : src.toString('utf8', i + 1, keyEnd - 1);
    if (key.includes('\\')) return -1;
    i = skipSpace(src, keyEnd);
    if (code(src, i) !== COLON) return -1;
    const start = skipSpace(src, i + 1);
    const end = skipValue(src, start);
    if (end === -1 || end === start || !member(key, start, end)) return -1;
    i = skipSpace(src, end);
    const c = code(src, i);
    if (c === CLOSE_BRACE) return i;
    if (c !== COMMA) return -1;
    i = skipSpace(src, i + 1);
  }
}

/**
 * `text` (a JSON object) with each member of `set` given its value (JSON text) where the object has
 * it, and appended in `set`'s order where it has not — what `{ ...JSON.parse(text), ...set }`
 * would serialize to, with the object's other members kept byte for byte. Null when `text` is not
 * one well-formed object the scan can follow (not an object, cut off, a member of `set` twice, a
 * key written with escapes): the caller then parses and serializes.
 */
export function setMembers(text: string, set: Record<string, string>): string | null {
  const found = new Map<string, [number, number]>();
  let members = 0;
  const close = scanMembers(text, (key, start, end) => {
    members++;
    if (!Object.hasOwn(set, key)) return true;
    if (found.has(key)) return false;
    found.set(key, [start, end]);
    return true;
  });
  if (close === -1 || skipSpace(text, close + 1) !== text.length) return null;
  // The replaced values in text order, then what is appended before the closing brace.
  const replaced = [...found].sort((a, b) => a[1][0] - b[1][0]);
  let out = '';
  let from = 0;
  for (const [key, [start, end]] of replaced) {
    out += text.slice(from, start) + set[key];
    from = end;
  }
  out += text.slice(from, close);
  for (const key in set) {
    if (found.has(key)) continue;
    out += `${members++ > 0 ? ',' : ''}${JSON.stringify(key)}:${set[key]}`;
  }
  return `${out}${text.slice(close)}`;
}
