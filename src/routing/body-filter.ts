import type { SafeguardResult } from '../guardrails/content-filters.js';
import { forbidden } from '../lib/errors.js';
import type { Body, CallChecks, InferenceCall } from './call.js';
import type { Prepared } from './fallback.js';

/**
 * Content filters over the caller's own body (its texts, through the wire's walker): a block is a
 * 403; redactions are made on a copy, which every attempt — lane or translated — then sends.
 */
export function filterBody(
  call: InferenceCall,
  checks: CallChecks,
): { body: Body; safeguards: SafeguardResult[] } {
  if (!checks.filtering) return { body: call.body, safeguards: [] };
  const body = structuredClone(call.body);
  const slots = call.wire.texts(body);
  const messages = slots.map((s) => ({ role: s.role, content: s.text }));
  const out = checks.filter(messages);
  if (out.blocked) throw forbidden(`Blocked by content filter: ${out.blocked}`);
  for (const [i, m] of out.messages.entries()) {
    if (m !== messages[i] && typeof m.content === 'string') slots[i]?.set(m.content);
  }
  return { body, safeguards: out.results };
}

/** Characters of the prompt as the caller sent it (an estimate's input). */
export function promptChars(call: InferenceCall, prep: Prepared): number {
  let n = 0;
  for (const s of call.wire.texts(prep.body)) n += s.text.length + 1;
  return n;
}
