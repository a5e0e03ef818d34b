/**
 * Setting top-level members of a JSON object given as text, without parsing and re-serializing
 * the rest of it. A relayed answer gets a few members added (the provider, the cost in its usage,
 * how it was routed) and keeps everything else as the provider wrote it; re-serializing the whole
 * parsed answer for that cost more than parsing it did.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

function skipSpace(text: string, i: number): number {
  while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  return i;
}

/** The index just past the string starting at `i` (a quote), or -1 when it never ends. */
function skipString(text: string, i: number): number {
  let at = text.indexOf('"', i + 1);
  while (at !== -1) {
    let slashes = 0;
    while (text.charCodeAt(at - 1 - slashes) === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return at + 1;
    at = text.indexOf('"', at + 1);
  }
  return -1;
}

/** The index just past the value starting at `i`, or -1 when it is cut off. */
function skipValue(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c === QUOTE) return skipString(text, i);
  if (c === OPEN_BRACE || c === OPEN_BRACKET) {
    let depth = 0;
    while (i < text.length) {
      const d = text.charCodeAt(i);
      if (d === QUOTE) {
        i = skipString(text, i);
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
  while (i < text.length) {
    const d = text.charCodeAt(i);
    if (d === COMMA || d === CLOSE_BRACE || isSpace(d)) return i;
    i++;
  }
  return -1;
}

/**
 * `text` (a JSON object) with each member of `set` given its value (JSON text) where the object has
 * it, and appended in `set`'s order where it has not — what `{ ...JSON.parse(text), ...set }`
 * would serialize to, with the object's other members kept byte for byte. Null when `text` is not
 * one well-formed object the scan can follow (not an object, cut off, a member of `set` twice, a
 * key written with escapes): the caller then parses and serializes.
 */
export function setMembers(text: string, set: Record<string, string>): string | null {
  let i = skipSpace(text, 0);
  if (text.charCodeAt(i) !== OPEN_BRACE) return null;
  i = skipSpace(text, i + 1);
  const found = new Map<string, [number, number]>();
  let members = 0;
  if (text.charCodeAt(i) !== CLOSE_BRACE) {
    for (;;) {
      if (text.charCodeAt(i) !== QUOTE) return null;
      const keyEnd = skipString(text, i);
      if (keyEnd === -1) return null;
      const key = text.slice(i + 1, keyEnd - 1);
      if (key.includes('\\')) return null;
      i = skipSpace(text, keyEnd);
      if (text.charCodeAt(i) !== COLON) return null;
      const start = skipSpace(text, i + 1);
      const end = skipValue(text, start);
      if (end === -1 || end === start) return null;
      if (Object.hasOwn(set, key)) {
        if (found.has(key)) return null;
        found.set(key, [start, end]);
      }
      members++;
      i = skipSpace(text, end);
      const c = text.charCodeAt(i);
      if (c === CLOSE_BRACE) break;
      if (c !== COMMA) return null;
      i = skipSpace(text, i + 1);
    }
  }
  if (skipSpace(text, i + 1) !== text.length) return null;
  const close = i;
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
