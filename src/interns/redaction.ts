import { StringDecoder } from 'node:string_decoder';

/**
 * Removes vault secrets from what a destination answers before an intern sees it. A bound host
 * may reflect a secret in another form, so each value is looked for as written, JSON-escaped,
 * URL/form-encoded (also twice), HTML-escaped, base64/base64url (at each of the three byte alignments it can have inside a
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

/** The value in an HTML page: `& < > "` as entities, `'` as given. */
const htmlEscaped = (value: string, apostrophe: string) =>
  value
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", apostrophe);

/** A lone surrogate (half of a pair, alone), which encodeURIComponent refuses. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** encodeURIComponent, a lone surrogate encoded as U+FFFD (as URLSearchParams and UTF-8 do). */
const uriEncoded = (value: string) => encodeURIComponent(value.replace(LONE_SURROGATE, '\ufffd'));

/** Every form of `value` a destination might send back (distinct, not yet case-folded). */
export function encodedForms(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const json = JSON.stringify(value).slice(1, -1);
  const url = uriEncoded(value);
  const forms = [
    value,
    json,
    jsonAscii(json),
    JSON.stringify(json).slice(1, -1), // JSON inside a JSON string
    url,
    url.replaceAll('%20', '+'),
    new URLSearchParams([['k', value]]).toString().slice(2),
    encodeURIComponent(url), // a URL inside a URL
    htmlEscaped(value, '&#39;'),
    htmlEscaped(value, '&#x27;'),
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

/**
 * Pieces indexed per form at most (about): a form longer than this is indexed at a stride, so
 * that a vault of long values (certificates, keys of kilobytes) costs bounded memory and time.
 */
export const PIECES_PER_FORM = 1024;
/** Packs (form number, offset) into one number: offsets stay below 2^20 (a 65,536-character value's longest form is 393,216). */
const SPAN = 2 ** 20;

/**
 * The secrets' forms (case-folded) and the pieces of them that are looked for. Up to
 * PIECES_PER_FORM characters a form is indexed at every position; a longer one every `stride`
 * characters, so any reflected run of `length + stride - 1` characters holds a whole indexed piece.
 * A piece found is then extended both ways as long as the text goes on matching its form, so the
 * whole reflected run is redacted, not only the indexed piece.
 */
class PieceIndex {
  readonly forms: string[] = [];
  /** Piece length → piece → form number · SPAN + offset in the form. */
  readonly byLength = new Map<number, Map<string, number>>();
  /** Characters a stream must hold back: the longest run that may not yet hold a whole piece. */
  window = 0;

  constructor(values: readonly string[]) {
    for (const value of values) {
      if (value.length < MIN_LOOKED_FOR) continue;
      for (const form of encodedForms(value)) this.add(fold(form), value.length);
    }
  }

  private add(form: string, valueLength: number): void {
    const n = this.forms.push(form) - 1;
    const stride = Math.ceil(form.length / PIECES_PER_FORM);
    // A piece of MIN_REFLECTED value characters is about this long in this form.
    const scaled = Math.ceil((MIN_REFLECTED * form.length) / valueLength);
    const len = Math.min(form.length, Math.max(MIN_REFLECTED, scaled));
    const pieces = this.byLength.get(len) ?? new Map<string, number>();
    this.byLength.set(len, pieces);
    const index = (at: number) => {
      const piece = form.slice(at, at + len);
      if (!pieces.has(piece)) pieces.set(piece, n * SPAN + at);
    };
    for (let at = 0; at + len <= form.length; at += stride) index(at);
    index(form.length - len);
    this.window = Math.max(this.window, len + stride - 1);
  }
}

/** Redacts the secrets given at construction from whole texts, or from a stream (see `stream`). */
export class Redactor {
  private readonly index: PieceIndex;

  constructor(values: readonly string[]) {
    this.index = new PieceIndex(values);
  }

  /** Characters a stream holds back: a piece ending in the next chunk may start in them. */
  get window(): number {
    return this.index.window;
  }

  /** Whether there is anything to redact at all. */
  get empty(): boolean {
    return this.index.forms.length === 0;
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
   * Marks every run of a secret's form in `text` (plus its first `carried` characters, covered by
   * a run that began in text already emitted), renders text[0, upTo) with each marked run replaced
   * by one marker, and reports how far runs starting before `upTo` reach past it.
   */
  scan(text: string, carried: number, upTo: number, afterMarker = false) {
    const folded = fold(text);
    const n = folded.length;
    const depth = new Int32Array(n + 1);
    const mark = (from: number, to: number) => {
      depth[from] = (depth[from] ?? 0) + 1;
      depth[to] = (depth[to] ?? 0) - 1;
    };
    if (carried > 0) mark(0, Math.min(carried, n));
    let reach = carried;
    for (const [len, pieces] of this.index.byLength) {
      for (let i = 0; i + len <= n; i++) {
        const ref = pieces.get(folded.slice(i, i + len));
        if (ref === undefined) continue;
        const form = this.index.forms[Math.floor(ref / SPAN)] as string;
        let from = i;
        let f = ref % SPAN;
        while (from > 0 && f > 0 && folded[from - 1] === form[f - 1]) {
          from--;
          f--;
        }
        let to = i + len;
        let g = (ref % SPAN) + len;
        while (to < n && g < form.length && folded[to] === form[g]) {
          to++;
          g++;
        }
        mark(from, to);
        if (from < upTo) reach = Math.max(reach, to);
        // The run is marked: look on from its last piece (one overlapping its end may go further).
        i = Math.max(i, to - len);
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
