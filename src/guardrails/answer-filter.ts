import {
  type CompiledFilter,
  originalSpans,
  type SafeguardRecord,
  type SafeguardResult,
  STATUS,
  safeguardRecords,
} from './content-filters.js';

/**
 * Content filters on the model's answer (filters with `apply_to` `response` or `both`): `flag`
 * counts, `redact` rewrites the answer's text, `block` refuses it.
 *
 * A streamed text is filtered as it goes, per channel (one choice's content, one content block):
 * the last HOLD_BACK characters are held until more text comes or the text ends, so that a match
 * split across deltas is redacted whole. Text before the hold-back window goes out redacted; a
 * match reaching into the window holds everything from its start. The trade-off: the caller sees
 * the answer up to HOLD_BACK characters later than the provider sends it, and a match longer than
 * HOLD_BACK that began in text already sent is only redacted from where it is seen.
 */
export const HOLD_BACK = 256;

/** One answer: the filters' counts over all its texts, and the first blocking filter that matched. */
export class AnswerScan {
  private readonly counts: number[];
  blocked: CompiledFilter | null = null;

  /** `filters`: those that apply to the response (the answer is the assistant's text). */
  constructor(readonly filters: readonly CompiledFilter[]) {
    this.counts = filters.map(() => 0);
  }

  /** A streamed text of the answer. */
  channel(): AnswerChannel {
    return new AnswerChannel(this);
  }

  /**
   * A whole text of the answer, filtered at once (one pass: a pushed text's held-back matches
   * would otherwise be counted again at its end by a blocking filter, which counts unsettled ones).
   */
  whole(text: string): string {
    return this.channel().end(text);
  }

  /** @internal Counts the matches a channel settled. */
  count(i: number, n: number): void {
    this.counts[i] = (this.counts[i] ?? 0) + n;
    const f = this.filters[i] as CompiledFilter;
    if (n > 0 && f.action === 'block' && this.blocked === null) this.blocked = f;
  }

  results(): SafeguardResult[] {
    return this.filters.map((f, i) => ({
      type: 'content_filter',
      status: { type: (this.counts[i] ?? 0) > 0 ? STATUS[f.action] : 'passed' },
      label: f.label,
      ...(f.slug !== undefined ? { slug: f.slug } : {}),
      matches: this.counts[i] ?? 0,
      stage: 'response',
    }));
  }

  /** The results as the generation keeps them (with the guardrail of each filter). */
  records(): SafeguardRecord[] {
    return safeguardRecords(this.results(), this.filters, 'response');
  }
}

export class AnswerChannel {
  private pending = '';
  constructor(private readonly scan: AnswerScan) {}

  /** Takes the next piece of the text; returns what can go out now (redacted). */
  push(text: string): string {
    this.pending += text;
    return this.settle(false);
  }

  /** The text ended (with `last`, if given): returns the rest (redacted). */
  end(last = ''): string {
    this.pending += last;
    return this.settle(true);
  }

  private settle(final: boolean): string {
    const text = this.pending;
    const { filters } = this.scan;
    const found = filters.map((f) => originalSpans(f, text));
    let cut = final ? text.length : Math.max(0, text.length - HOLD_BACK);
    // A match reaching across the cut is held whole (moving the cut may reach another one).
    for (let moved = true; moved; ) {
      moved = false;
      for (const spans of found)
        for (const [s, e] of spans)
          if (s < cut && e > cut) {
            cut = s;
            moved = true;
          }
    }
    const edits: Array<[number, number, string]> = [];
    for (const [i, f] of filters.entries()) {
      // A blocking filter acts on any match it sees, settled or not (nothing of it goes out).
      const settled = f.action === 'block' ? (found[i] ?? []) : (found[i] ?? []).filter(([, e]) => e <= cut);
      this.scan.count(i, settled.length);
      if (f.action === 'redact') for (const [s, e] of settled) edits.push([s, e, `[REDACTED:${f.tag}]`]);
    }
    // Where two filters' redactions overlap, the one that starts first is kept.
    edits.sort((a, b) => a[0] - b[0]);
    let out = '';
    let at = 0;
    for (const [s, e, r] of edits) {
      if (s < at) continue;
      out += text.slice(at, s) + r;
      at = e;
    }
    out += text.slice(at, cut);
    this.pending = text.slice(cut);
    return out;
  }
}
