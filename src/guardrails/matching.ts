import { type Normalized, normalizeForMatching } from './normalize.js';

/**
 * Matching one message's texts: its parts (a message's text parts, a tool result's blocks) are
 * what the provider reads as one text, so a detector sees them joined — an SSN sent as "123-45"
 * then "-6789" is found — and each on its own too (joining can hide a match behind the previous
 * part's last word). Matching runs on the normalised text (normalize.ts); redaction removes the
 * original characters each match came from, in every part it spans.
 */

export type Span = [start: number, end: number];

/** Anything that finds spans in a text (a filter's detectors). */
export type FindSpans = (text: string) => Span[];

export interface PreparedText {
  parts: readonly string[];
  /** The parts' normalised texts, joined without separator. */
  norm: string;
  /** [offset, length] of each part in `norm`. */
  offsets: Span[];
  normalized: Normalized[];
}

export function prepareText(parts: readonly string[]): PreparedText {
  const normalized = parts.map(normalizeForMatching);
  const offsets: Span[] = [];
  let at = 0;
  for (const n of normalized) {
    offsets.push([at, n.text.length]);
    at += n.text.length;
  }
  return { parts, norm: normalized.map((n) => n.text).join(''), offsets, normalized };
}

/** The part code unit `i` of `norm` came from, and the original [start, end) in that part. */
function origin(t: PreparedText, i: number): [part: number, start: number, end: number] {
  let k = t.offsets.length - 1;
  while (k > 0 && (t.offsets[k] as Span)[0] > i) k--;
  const j = i - (t.offsets[k] as Span)[0];
  const n = t.normalized[k] as Normalized;
  return n.start && n.end ? [k, n.start[j] as number, n.end[j] as number] : [k, j, j + 1];
}

/** A span of `norm` as the original [start, end) in its first part (one-part texts: the whole span). */
export function toOriginal(t: PreparedText, [s, e]: Span): Span {
  const [first, from] = origin(t, s);
  const [last, , to] = origin(t, e - 1);
  return [from, last === first ? to : (t.parts[first] as string).length];
}

/** Sorted, overlapping spans merged: one match however many detectors or passes saw it. */
function merged(spans: Span[]): Span[] {
  spans.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  const out: Span[] = [];
  for (const [s, e] of spans) {
    const last = out[out.length - 1];
    if (last && s < last[1]) last[1] = Math.max(last[1], e);
    else out.push([s, e]);
  }
  return out;
}

/** The matches of `find` in the joined text and in each part alone, in `norm` coordinates. */
export function findSpans(t: PreparedText, finders: readonly FindSpans[]): Span[] {
  const all: Span[] = [];
  for (const find of finders) {
    all.push(...find(t.norm));
    if (t.parts.length > 1)
      for (const [o, len] of t.offsets)
        for (const [s, e] of find(t.norm.slice(o, o + len))) all.push([s + o, e + o]);
  }
  return merged(all);
}

/**
 * The parts with each span's original characters removed and `replacement` put where the span
 * starts (a span across parts leaves the replacement in its first part and removes the rest).
 */
export function redactSpans(t: PreparedText, spans: readonly Span[], replacement: string): string[] {
  const edits: Array<Array<[number, number, string]>> = t.parts.map(() => []);
  for (const [s, e] of spans) {
    const [first, from0] = origin(t, s);
    const [last, , to0] = origin(t, e - 1);
    for (let k = first; k <= last; k++) {
      const from = k === first ? from0 : 0;
      const to = k === last ? to0 : (t.parts[k] as string).length;
      edits[k]?.push([from, to, k === first ? replacement : '']);
    }
  }
  return t.parts.map((p, k) => {
    const list = merged3(edits[k] ?? []);
    let out = p;
    for (let i = list.length - 1; i >= 0; i--) {
      const [from, to, r] = list[i] as [number, number, string];
      out = out.slice(0, from) + r + out.slice(to);
    }
    return out;
  });
}

/** Edits sorted and merged where two reach into one original character (`ﬁ` → `fi`). */
function merged3(edits: Array<[number, number, string]>): Array<[number, number, string]> {
  edits.sort((a, b) => a[0] - b[0]);
  const out: Array<[number, number, string]> = [];
  for (const e of edits) {
    const last = out[out.length - 1];
    if (last && e[0] < last[1]) last[1] = Math.max(last[1], e[1]);
    else out.push([...e]);
  }
  return out;
}
