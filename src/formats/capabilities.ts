/**
 * What each provider kind can carry of a canonical request. The router calls assertTranslatable
 * before sending a request to a provider of that kind; a refusal is a 400 naming the field (or, for
 * a router with fallbacks, a reason to skip that provider — see untranslatableFields).
 *
 * One table, one row per refusal. "Present" means the caller asked for something: fields left at
 * their no-op value (`logprobs: false`, a penalty of 0, `top_logprobs: 0`) are not refused.
 */
import { type ChatRequest, TranslationError } from './chat.js';

export type ProviderKind = 'openai' | 'anthropic' | 'google';

export interface CapabilityRule {
  /** The field, as the caller names it in a Chat Completions body. */
  field: string;
  refusedBy: readonly ProviderKind[];
  /** The offending field's path when the request uses it, else null. */
  check: (req: ChatRequest) => string | null;
  reason: string;
}

const isSet = (v: unknown): boolean => v !== undefined && v !== null;
const when = (field: string, cond: (req: ChatRequest) => boolean) => (req: ChatRequest) =>
  cond(req) ? field : null;

/** The path of the first content part matching `match` (in messages whose role passes `roles`). */
function findPart(
  req: ChatRequest,
  match: (url: string) => boolean,
  roles: (role: string) => boolean = () => true,
): string | null {
  for (const [i, m] of req.messages.entries()) {
    if (!roles(m.role) || !Array.isArray(m.content)) continue;
    for (const [j, p] of m.content.entries()) {
      if (p.type === 'image_url' && match(p.image_url.url))
        return `messages[${i}].content[${j}].image_url.url`;
    }
  }
  return null;
}

export const CAPABILITY_RULES: readonly CapabilityRule[] = [
  {
    field: 'logprobs',
    refusedBy: ['anthropic', 'google'],
    check: when('logprobs', (r) => r.logprobs === true),
    reason: 'token log probabilities are not available',
  },
  {
    field: 'top_logprobs',
    refusedBy: ['anthropic', 'google'],
    check: when('top_logprobs', (r) => (r.top_logprobs ?? 0) > 0),
    reason: 'token log probabilities are not available',
  },
  {
    field: 'response_format',
    refusedBy: ['anthropic'],
    check: when('response_format.type', (r) => r.response_format?.type === 'json_schema'),
    reason: "'json_schema' is not supported (no native JSON mode, and Gatehouse does not emulate one)",
  },
  {
    field: 'response_format',
    refusedBy: ['anthropic'],
    check: when('response_format.type', (r) => r.response_format?.type === 'json_object'),
    reason: "'json_object' is not supported (no native JSON mode, and Gatehouse does not emulate one)",
  },
  {
    field: 'seed',
    refusedBy: ['anthropic'],
    check: when('seed', (r) => isSet(r.seed)),
    reason: 'seeded sampling is not supported',
  },
  {
    field: 'presence_penalty',
    refusedBy: ['anthropic'],
    check: when('presence_penalty', (r) => isSet(r.presence_penalty) && r.presence_penalty !== 0),
    reason: 'penalties are not supported',
  },
  {
    field: 'frequency_penalty',
    refusedBy: ['anthropic'],
    check: when('frequency_penalty', (r) => isSet(r.frequency_penalty) && r.frequency_penalty !== 0),
    reason: 'penalties are not supported',
  },
  {
    field: 'temperature',
    refusedBy: ['anthropic'],
    check: when('temperature', (r) => (r.temperature ?? 0) > 1),
    reason: 'values above 1 are out of range (0–1)',
  },
  {
    field: 'image_url',
    refusedBy: ['google'],
    check: (r) => findPart(r, (url) => /^https?:\/\//i.test(url)),
    reason: 'http(s) image URLs are not supported (send the image inline as a data: URL)',
  },
  {
    field: 'image_url',
    refusedBy: ['openai', 'google'],
    check: (r) =>
      findPart(
        r,
        () => true,
        (role) => role === 'tool',
      ),
    reason: 'images in tool results are not supported',
  },
];

const KIND_NAMES: Record<ProviderKind, string> = {
  openai: 'OpenAI-format',
  anthropic: 'Anthropic',
  google: 'Google',
};

/** Every refusal `target` would make for `req` (empty when it can carry the whole request). */
export function untranslatableFields(
  req: ChatRequest,
  target: ProviderKind,
): { field: string; message: string }[] {
  const out: { field: string; message: string }[] = [];
  for (const rule of CAPABILITY_RULES) {
    if (!rule.refusedBy.includes(target)) continue;
    const path = rule.check(req);
    if (path)
      out.push({
        field: rule.field,
        message: `${path} cannot be sent to ${KIND_NAMES[target]} providers: ${rule.reason}`,
      });
  }
  return out;
}

/** Throws a TranslationError naming the first field `target` cannot carry. */
export function assertTranslatable(req: ChatRequest, target: ProviderKind): void {
  const [first] = untranslatableFields(req, target);
  if (first) throw new TranslationError(first.message);
}
