import type { ChatMessage } from '../formats/chat.js';
import type { SafeguardRecord, SafeguardResult } from '../guardrails/content-filters.js';
import { forbidden } from '../lib/errors.js';
import type { Body, CallChecks, InferenceCall, TextSlot } from './call.js';
import type { Prepared } from './fallback.js';

/**
 * Content filters over the caller's own body (its texts, through the wire's walker): a block is a
 * 403; redactions are made on a copy, which every attempt — lane or translated — then sends.
 */
export function filterBody(
  call: InferenceCall,
  checks: CallChecks,
): { body: Body; safeguards: SafeguardResult[]; records: SafeguardRecord[] } {
  if (!checks.filtering) return { body: call.body, safeguards: [], records: [] };
  const body = structuredClone(call.body);
  const groups = grouped(call.wire.texts(body));
  const messages: ChatMessage[] = groups.map((g) => ({
    role: g[0]?.role ?? 'user',
    content: g.map((s) => ({ type: 'text', text: s.text })),
  }));
  const out = checks.filter(messages);
  if (out.blocked) throw forbidden(`Blocked by content filter: ${out.blocked}`);
  for (const [i, m] of out.messages.entries()) {
    if (m === messages[i] || !Array.isArray(m.content)) continue;
    for (const [k, part] of m.content.entries()) {
      const slot = groups[i]?.[k];
      if (slot && part.type === 'text' && part.text !== slot.text) slot.set(part.text);
    }
  }
  return { body, safeguards: out.results, records: out.records };
}

/** Slots as the messages filters see: consecutive slots of one group together (see TextSlot). */
function grouped(slots: readonly TextSlot[]): TextSlot[][] {
  const out: TextSlot[][] = [];
  for (const s of slots) {
    const last = out[out.length - 1];
    if (last && s.group !== undefined && last[0]?.group === s.group) last.push(s);
    else out.push([s]);
  }
  return out;
}

/** Characters of the prompt as the caller sent it (an estimate's input). */
export function promptChars(call: InferenceCall, prep: Pick<Prepared, 'body'>): number {
  let n = 0;
  for (const s of call.wire.texts(prep.body)) n += s.text.length + 1;
  return n;
}
