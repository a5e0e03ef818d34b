import { StringDecoder } from 'node:string_decoder';

/**
 * Removes vault secrets from what a destination answers before an intern sees it. A bound host
 * may reflect a secret in another form, so each value is looked for as written, JSON-escaped,
 * URL/form-encoded, base64/base64url (at each of the three byte alignments it can have inside a
 * longer base64 text), hex, and in any letter case. Reflected pieces count too: any run of at least
 * MIN_REFLECTED characters of a secret (or the matching stretch of one of its encoded forms) is
 * replaced, so a secret cannot be rebuilt a few characters per request from longer pieces.
 */

export const REDACTED = '[REDACTED]';
/**
 * The shortest piece of a secret that is redacted, in characters of the value (an encoded form
 * scales it: 12 hex digits, 8 base64 characters). Six keeps false positives rare — a random
 * six-character string of letters and digits is one of 2·10⁹ — while values need at least
 * VALUE_MIN (8) characters, so a reflected piece must leave out a quarter of a minimal secret.
 */
export const MIN_REFLECTED = 6;
/** Values shorter than this (legacy rows stored before the minimum length) are not looked for. */
const MIN_LOOKED_FOR = 4;

/** Lowercase, one code point at a time, keeping the length (so positions map back to the text). */
export function fold(text: string): string {
  const lower = text.toLowerCase();
  if (lower.length === text.length) return lower;
  let out = '';
  for (const ch of text) {
    const l = ch.toLowerCase();
    out += l.length === ch.length ? l : ch;
  }
  return out;
}

/** The part of base64(bytes) that stays the same whatever bytes come before and after them, when `lead` bytes (mod 3) precede. */
function base64Inner(bytes: Buffer, lead: number): string {
  const b64 = Buffer.concat([Buffer.alloc(lead), bytes]).toString('base64');
  return b64.slice(Math.ceil((8 * lead) / 6), Math.floor((8 * (lead + bytes.length)) / 6));
}

const toBase64Url = (b64: string) => b64.replaceAll('+', '-').replaceAll('/', '_');

/** JSON escaping as stricter serializers write it: `\/` and every non-ASCII character as `\uXXXX`. */
const jsonAscii = (json: string) =>
  json
    .replaceAll('/', '\\/')
    .replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** Every form of `value` a destination might send back (distinct, not yet case-folded). */
export function encodedForms(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const json = JSON.stringify(value).slice(1, -1);
  const url = encodeURIComponent(value);
  const forms = [
    value,
    json,
    jsonAscii(json),
    url,
    url.replaceAll('%20', '+'),
    new URLSearchParams([['k', value]]).toString().slice(2),
    bytes.toString('hex'),
    bytes.toString('base64'),
    bytes.toString('base64url'),
  ];
  for (const lead of [0, 1, 2]) {
    const inner = base64Inner(bytes, lead);
    forms.push(inner, toBase64Url(inner));
  }
  return [...new Set(forms)].filter((f) => f.length >= MIN_LOOKED_FOR);
}

/** A secret's forms cut into the pieces that are redacted wherever they appear, by piece length. */
function piecesOf(values: readonly string[]): Map<number, Set<string>> {
  const byLength = new Map<number, Set<string>>();
  for (const value of values) {
    if (value.length < MIN_LOOKED_FOR) continue;
    for (const form of encodedForms(value)) {
      // A piece of MIN_REFLECTED value characters is about this long in this form.
      const len = Math.min(
        form.length,
        Math.max(MIN_REFLECTED, Math.ceil((MIN_REFLECTED * form.length) / value.length)),
      );
      const folded = fold(form);
      const set = byLength.get(len) ?? new Set<string>();
      byLength.set(len, set);
      for (let i = 0; i + len <= folded.length; i++) set.add(folded.slice(i, i + len));
    }
  }
  return byLength;
}

/** Redacts the secrets given at construction from whole texts, or from a stream (see `stream`). */
export class Redactor {
  private readonly pieces: [number, Set<string>][];
  /** Characters a stream holds back: a piece ending in the next chunk may start in them. */
  readonly window: number;

  constructor(values: readonly string[]) {
    this.pieces = [...piecesOf(values)];
    this.window = Math.max(0, ...this.pieces.map(([len]) => len - 1));
  }

  /** Whether there is anything to redact at all. */
  get empty(): boolean {
    return this.pieces.length === 0;
  }

  /** `text` with every secret, encoded form and reflected piece replaced by [REDACTED]. */
  redact(text: string): string {
    if (this.empty) return text;
    return this.scan(text, 0, text.length).out;
  }

  /** A streaming redactor for one response body (UTF-8 bytes in, redacted text out). */
  stream(): RedactingStream {
    return new RedactingStream(this);
  }

  /**
   * Marks every piece in `text` (plus its first `carried` characters, covered by a piece that
   * began in text already emitted), renders text[0, upTo) with runs of marked characters replaced
   * by one marker, and reports how far pieces starting before `upTo` reach past it.
   */
  scan(text: string, carried: number, upTo: number, afterMarker = false) {
    const folded = fold(text);
    const depth = new Int32Array(text.length + 1);
    if (carried > 0) {
      depth[0] = (depth[0] ?? 0) + 1;
      depth[Math.min(carried, text.length)] = (depth[Math.min(carried, text.length)] ?? 0) - 1;
    }
    let reach = carried;
    for (const [len, set] of this.pieces) {
      for (let i = 0; i + len <= folded.length; i++) {
        if (!set.has(folded.slice(i, i + len))) continue;
        depth[i] = (depth[i] ?? 0) + 1;
        depth[i + len] = (depth[i + len] ?? 0) - 1;
        if (i < upTo) reach = Math.max(reach, i + len);
      }
    }
    let out = '';
    let level = 0;
    let inRun = afterMarker;
    let plainFrom = 0;
    for (let i = 0; i < upTo; i++) {
      level += depth[i] ?? 0;
      if (level > 0 && !inRun) {
        out += text.slice(plainFrom, i) + REDACTED;
        inRun = true;
      } else if (level === 0 && inRun) {
        inRun = false;
        plainFrom = i;
      }
    }
    if (!inRun) out += text.slice(plainFrom, upTo);
    return { out, carried: Math.max(0, reach - upTo), endsInRun: inRun };
  }
}

/**
 * Redacts a body arriving in chunks: a piece split across chunks is still found because the last
 * `window` characters are held back until more text (or the end) arrives, and a piece already
 * begun in emitted text carries its coverage into the held-back part.
 */
export class RedactingStream {
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';
  private carried = 0;
  private afterMarker = false;

  constructor(private readonly redactor: Redactor) {}

  /** Adds a chunk; returns the text that is now final. */
  push(chunk: Buffer): string {
    this.pending += this.decoder.write(chunk);
    if (this.redactor.empty) return this.take(this.pending.length);
    return this.emit(Math.max(0, this.pending.length - this.redactor.window));
  }

  /** Ends the body; returns the rest of the text. */
  end(): string {
    this.pending += this.decoder.end();
    return this.redactor.empty ? this.take(this.pending.length) : this.emit(this.pending.length);
  }

  private take(n: number): string {
    const out = this.pending.slice(0, n);
    this.pending = this.pending.slice(n);
    return out;
  }

  private emit(upTo: number): string {
    const r = this.redactor.scan(this.pending, this.carried, upTo, this.afterMarker);
    this.pending = this.pending.slice(upTo);
    this.carried = r.carried;
    this.afterMarker = r.endsInRun;
    return r.out;
  }
}
