/**
 * Azure OpenAI's content-filter results, as the gateway's safeguard results: `prompt_filter_results`
 * (the prompt, on an answer or a stream's first chunk) and each choice's `content_filter_results`
 * (the answer). One result per category Azure reports (`hate`, `jailbreak`, `protected_material_text`…).
 */
import type { SafeguardResult } from '../../guardrails/content-filters.js';
import { nonEmpty, obj } from '../errors.js';

/** One category's verdict: filtered → blocked, detected or a non-safe severity → flagged. */
function verdict(category: string, raw: unknown, stage: 'prompt' | 'response'): SafeguardResult {
  const r = obj(raw);
  const severity = nonEmpty(r.severity);
  const status =
    r.filtered === true
      ? 'blocked'
      : r.detected === true || (severity && severity !== 'safe')
        ? 'flagged'
        : 'passed';
  return {
    type: 'content_filter',
    status: { type: status },
    label: `Azure content filter: ${category}${severity ? ` (${severity})` : ''}`,
    slug: `azure-${category}`,
    matches: status === 'passed' ? 0 : 1,
    ...(stage === 'response' ? { stage } : {}),
  };
}

const verdicts = (results: unknown, stage: 'prompt' | 'response'): SafeguardResult[] =>
  Object.entries(obj(results))
    .filter(([, v]) => v && typeof v === 'object')
    .map(([category, v]) => verdict(category, v, stage));

/** The filter results an Azure answer or stream chunk carries; undefined when it carries none. */
export function azureSafeguards(raw: unknown): SafeguardResult[] | undefined {
  const r = obj(raw);
  const out: SafeguardResult[] = [];
  if (Array.isArray(r.prompt_filter_results))
    for (const p of r.prompt_filter_results) out.push(...verdicts(obj(p).content_filter_results, 'prompt'));
  if (Array.isArray(r.choices))
    for (const c of r.choices) out.push(...verdicts(obj(c).content_filter_results, 'response'));
  return out.length ? out : undefined;
}
