/**
 * `reasoning_details` (see ReasoningDetail in `chat.ts`): validating what callers send back, and
 * merging stream fragments into whole entries.
 *
 * Callers may send assistant messages with `reasoning_details` as Gatehouse (or another
 * OpenRouter-compatible gateway) returned them. Each entry must be an object with a string `type`;
 * the known types have their fields checked (a 400 naming the field otherwise), entries of unknown
 * types are dropped (nothing upstream could take them).
 */
import type { ReasoningDetail } from './chat.js';
import { arr, fail, given, num, obj, optStr, str } from './validate.js';

/** Caller `reasoning_details` → canonical entries (unknown types dropped). */
export function parseReasoningDetails(v: unknown, path: string): ReasoningDetail[] {
  const out: ReasoningDetail[] = [];
  for (const [i, raw] of arr(v, path).entries()) {
    const p = `${path}[${i}]`;
    const d = obj(raw, p);
    const type = str(d.type, `${p}.type`);
    const common: { format?: string; index?: number; id?: string } = {};
    const format = optStr(d.format, `${p}.format`);
    if (format !== undefined) common.format = format;
    if (given(d.index)) common.index = num(d.index, `${p}.index`, { integer: true, min: 0 });
    const id = optStr(d.id, `${p}.id`);
    if (id !== undefined) common.id = id;
    switch (type) {
      case 'reasoning.text': {
        const entry: ReasoningDetail = {
          type,
          text: given(d.text) ? str(d.text, `${p}.text`) : '',
          ...common,
        };
        if (d.signature === null) entry.signature = null;
        else if (given(d.signature)) entry.signature = str(d.signature, `${p}.signature`);
        out.push(entry);
        break;
      }
      case 'reasoning.encrypted':
        out.push({ type, data: str(d.data, `${p}.data`), ...common });
        break;
      case 'reasoning.summary':
        out.push({ type, summary: str(d.summary, `${p}.summary`), ...common });
        break;
      default:
        if (type === '') fail(`${p}.type`, 'must be a non-empty string');
      // another gateway's entry type: nothing Gatehouse can send upstream
    }
  }
  return out;
}

const keyOf = (d: ReasoningDetail): string | null =>
  d.index === undefined ? null : `${d.type}\u0000${d.format ?? ''}\u0000${d.index}`;

/**
 * Entries sharing `type`, `format` and `index` merged into one (stream fragments, or a caller that
 * concatenated the deltas it received): texts and summaries concatenate, a non-empty signature or
 * data completes the entry. Entries without an `index` are kept as they are. Order: first
 * appearance. The input is not modified.
 */
export function collapseReasoningDetails(details: readonly ReasoningDetail[]): ReasoningDetail[] {
  const out: ReasoningDetail[] = [];
  const byKey = new Map<string, ReasoningDetail>();
  for (const d of details) {
    const key = keyOf(d);
    const prev = key === null ? undefined : byKey.get(key);
    if (!prev) {
      const copy = { ...d };
      out.push(copy);
      if (key !== null) byKey.set(key, copy);
      continue;
    }
    mergeInto(prev, d);
  }
  return out;
}

/** Appends fragment `d` to entry `into` (same type). */
export function mergeInto(into: ReasoningDetail, d: ReasoningDetail): void {
  if (into.type === 'reasoning.text' && d.type === 'reasoning.text') {
    into.text += d.text;
    if (d.signature) into.signature = d.signature;
  } else if (into.type === 'reasoning.summary' && d.type === 'reasoning.summary') {
    into.summary += d.summary;
  } else if (into.type === 'reasoning.encrypted' && d.type === 'reasoning.encrypted') {
    if (d.data) into.data = d.data;
  }
  if (d.id !== undefined && into.id === undefined) into.id = d.id;
}

/** The entries of one format (collapsed), e.g. the ones an Anthropic upstream can take back. */
export function detailsOfFormat(
  details: readonly ReasoningDetail[] | undefined,
  format: string,
): ReasoningDetail[] {
  if (!details?.length) return [];
  return collapseReasoningDetails(details.filter((d) => d.format === format));
}
