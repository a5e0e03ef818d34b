import { describe, expect, it } from 'vitest';
import { AnswerScan, HOLD_BACK } from './answer-filter.js';
import { compileFilters } from './content-filters.js';

const scanOf = (action: 'redact' | 'block' | 'flag' = 'redact') =>
  new AnswerScan(
    compileFilters([
      { guardrailId: 'g', custom: null, builtins: [{ slug: 'ssn', action, apply_to: 'response' }] },
    ]),
  );

describe('AnswerScan: filters on a streamed answer', () => {
  it('redacts a match however the text is cut into deltas, and lets out all the rest', () => {
    const text = `${'lorem ipsum '.repeat(60)}ssn 123-45-6789 and ${'dolor sit '.repeat(60)}`;
    const whole = scanOf().whole(text);
    expect(whole).toContain('ssn [REDACTED:SSN] and');
    for (const size of [1, 3, 7, 50, 1000]) {
      const ch = scanOf().channel();
      let out = '';
      for (let i = 0; i < text.length; i += size) out += ch.push(text.slice(i, i + size));
      out += ch.end();
      expect(out, `deltas of ${size}`).toBe(whole);
    }
  });

  it('holds back no more than the window (plus a match reaching into it)', () => {
    const ch = scanOf().channel();
    const out = ch.push('x'.repeat(1000));
    expect(out.length).toBe(1000 - HOLD_BACK);
    expect(ch.push('123-45-')).toBe('x'.repeat(7));
    expect(ch.end()).toBe(`${'x'.repeat(HOLD_BACK - 7)}123-45-`);
    // A match reaching into the window is held from its start.
    const ch2 = scanOf().channel();
    expect(ch2.push(`ssn 123-45-6789 ${'y'.repeat(HOLD_BACK - 5)}`)).toBe('ssn ');
    expect(ch2.end()).toBe(`[REDACTED:SSN] ${'y'.repeat(HOLD_BACK - 5)}`);
  });

  it('counts a blocking match of a whole answer once, and keeps its guardrail', () => {
    const scan = scanOf('block');
    scan.whole('yours is 123-45-6789.');
    expect(scan.blocked?.label).toBe('Social Security numbers');
    expect(scan.results()[0]).toMatchObject({ status: { type: 'blocked' }, matches: 1 });
    expect(scan.records()).toEqual([
      {
        stage: 'response',
        source: 'gateway',
        type: 'content_filter',
        label: 'Social Security numbers',
        slug: 'ssn',
        action: 'blocked',
        matches: 1,
        guardrail_id: 'g',
      },
    ]);
  });

  it('counts once per match across deltas and reports the stage', () => {
    const scan = scanOf('flag');
    const ch = scan.channel();
    expect(ch.push('a 123-45') + ch.push('-6789 b') + ch.end()).toBe('a 123-45-6789 b');
    expect(scan.results()).toEqual([
      expect.objectContaining({ status: { type: 'flagged' }, matches: 1, stage: 'response' }),
    ]);
    const blocking = scanOf('block');
    blocking.channel().push('123-45-6789');
    expect(blocking.blocked?.slug).toBe('ssn');
  });
});
