/**
 * The text content filters match on: what a reader (or a model) takes the text to say, not how it
 * is encoded. Each character is normalised on its own:
 * - NFKC compatibility forms: fullwidth `＠１２３` → `@123`, ligatures, circled digits, …;
 * - Unicode format characters (category Cf: zero-width space and joiners, soft hyphen, bidi
 *   controls, BOM) are removed;
 * - every dash and hyphen (category Pd, minus signs) becomes `-`; every space separator becomes ` `;
 * - every decimal digit (category Nd: Arabic-Indic `٣`, Devanagari `३`, …) becomes its ASCII digit.
 *
 * `start[i]`/`end[i]` give the span of the original text that normalised code unit `i` came from,
 * so that a match found in the normalised text can be removed from the original one (removed
 * characters fall inside the span of the match that surrounds them).
 */
export interface Normalized {
  text: string;
  /** null: the text is its own normal form (plain ASCII), offsets map to themselves. */
  start: number[] | null;
  end: number[] | null;
}

const FORMAT = /^\p{Cf}$/u;
const DASHES = /[\p{Pd}\u2212\u2043\u02D7\uFE63\uFF0D]/gu;
const SPACES = /\p{Zs}/gu;
const DIGIT = /^\p{Nd}$/u;

/**
 * The value of a decimal digit: Unicode encodes each script's digits as a run of ten, 0 to 9, so
 * the distance to the start of the run of digits it belongs to gives it (adjacent runs included).
 */
function digitValue(ch: string): string {
  const cp = ch.codePointAt(0) as number;
  let start = cp;
  while (start > 0 && DIGIT.test(String.fromCodePoint(start - 1))) start--;
  return String((cp - start) % 10);
}

const cache = new Map<string, string>();

function normChar(ch: string): string {
  let out = cache.get(ch);
  if (out !== undefined) return out;
  out = FORMAT.test(ch)
    ? ''
    : DIGIT.test(ch)
      ? digitValue(ch)
      : ch.normalize('NFKC').replace(DASHES, '-').replace(SPACES, ' ');
  // Characters seen are bounded by what callers send; the cap keeps a hostile text from growing it.
  if (cache.size < 10_000) cache.set(ch, out);
  return out;
}

/** True when nothing would change: plain ASCII (the common case) is its own normal form. */
const ASCII = /^\p{ASCII}*$/u;

export function normalizeForMatching(text: string): Normalized {
  if (ASCII.test(text)) return { text, start: null, end: null };
  const start: number[] = [];
  const end: number[] = [];
  let out = '';
  let i = 0;
  for (const ch of text) {
    const n = ch.length === 1 && ch.charCodeAt(0) < 0x80 ? ch : normChar(ch);
    for (let k = 0; k < n.length; k++) {
      start.push(i);
      end.push(i + ch.length);
    }
    out += n;
    i += ch.length;
  }
  return { text: out, start, end };
}
