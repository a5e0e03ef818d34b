import { RE2JS } from 're2js';

/**
 * Custom content-filter patterns are written by tenants and run on every call of their keys, in
 * the one process every tenant shares: they run on RE2 (re2js), whose matching time is linear in
 * the text whatever the pattern. A backtracking engine would let `(a|a)+$` stall the process for
 * hours on a 40-character prompt.
 *
 * RE2's syntax is JavaScript's for everything but backreferences (`\1`, `\k<name>`) and lookaround
 * (`(?=`, `(?!`, `(?<=`, `(?<!`), which cannot be matched in linear time and are refused.
 */

const UNSUPPORTED =
  'patterns use RE2 syntax, which runs in linear time: backreferences and lookaround (lookahead, lookbehind) are not supported';

/** The compiled pattern, or the reason it cannot run (RE2's message and what RE2 does not support). */
export function compileCustomPattern(pattern: string): { re: RE2JS } | { error: string } {
  try {
    return { re: RE2JS.compile(pattern) };
  } catch (err) {
    return { error: `${(err as Error).message} (${UNSUPPORTED})` };
  }
}

/** The [start, end) spans of the non-empty matches of `re` in `text` (UTF-16 offsets). */
export function re2Spans(re: RE2JS, text: string): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  const m = re.matcher(text);
  while (m.find()) {
    const s = m.start();
    const e = m.end();
    if (e > s) out.push([s, e]);
  }
  return out;
}
