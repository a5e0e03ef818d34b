import { isIPv4, isIPv6 } from 'node:net';
import type { ChatMessage, ContentPart } from '../formats/chat.js';
import type { SafeguardResult, SafeguardStatus } from '../formats/safeguards.js';
import { compileCustomPattern, re2Spans } from './custom-patterns.js';
import {
  type ApplyTo,
  BUILTIN_LABELS,
  type BuiltinSlug,
  type ContentFilter,
  type FilterAction,
  type ScanScope,
  type StoredBuiltinFilter,
} from './fields.js';
import { findSpans, type PreparedText, prepareText, redactSpans, type Span, toOriginal } from './matching.js';

export type { SafeguardResult, SafeguardStatus } from '../formats/safeguards.js';

/**
 * Guardrail content filters: custom regular expressions and the built-in detectors, compiled once
 * per effective policy and applied to a request's messages before it leaves the gateway.
 *
 * The texts come as messages (the wires' walkers gather every text the provider receives: message
 * text and names, tool calls and results, tool schemas, output formats); a message's parts are
 * matched joined and one by one, on normalised text (matching.ts, normalize.ts). Filters with
 * `apply_to` `response` or `both` also read the model's answer (answer-filter.ts). Matching is
 * deterministic (no model calls).
 *
 * The built-in detectors are regular expressions with, where it matters, a check on the match
 * (Luhn for card numbers, digit counts for phone numbers, `node:net` for IP addresses). They are
 * tuned to avoid obvious false positives, not to be exhaustive:
 * - `phone` wants a `+` country code or a separated US form (`555-123-4567`, `(555) 123-4567`); a
 *   bare run of digits is never a phone number.
 * - `person-name` only sees names introduced by a cue ("my name is", "I am", "I'm", "call me",
 *   "name:", an honorific such as "Dr."), written as capitalised words. Names in running text,
 *   lower-case names and names without a cue are NOT detected.
 * - `address` sees a house number, one to four capitalised words and a common street suffix
 *   (`221 Baker Street`, `1600 Pennsylvania Ave`); it does not see PO boxes, cities or postcodes,
 *   nor addresses outside that English pattern.
 * - `regex-prompt-injection` is a list of known phrasings; paraphrases get through.
 *
 * Custom patterns are tenants' own and run on RE2 (see custom-patterns.ts): linear time, whatever
 * the pattern. The built-in patterns are ours and stay JavaScript regular expressions (they need
 * lookbehind, which RE2 lacks): each is written to run in linear time on any input (bounded
 * repetitions, token-start lookbehinds), which the "long inputs" test checks.
 */

/** One detector: the [start, end) spans it finds in a text. */
export interface Matcher {
  spans(text: string): Array<[number, number]>;
}

/** A built-in detector: a global JavaScript regular expression, and an optional check on each match. */
interface Builtin {
  re: RegExp;
  /** An extra check on each match; a match it rejects is neither counted nor redacted. */
  validate?: (match: string) => boolean;
}

function builtinMatcher({ re, validate }: Builtin): Matcher {
  return {
    spans(text) {
      const out: Array<[number, number]> = [];
      for (const m of text.matchAll(re)) {
        if (m[0].length === 0 || (validate && !validate(m[0]))) continue;
        out.push([m.index, m.index + m[0].length]);
      }
      return out;
    },
  };
}

export interface CompiledFilter {
  kind: 'builtin' | 'custom';
  /** Built-in filters only. */
  slug?: BuiltinSlug;
  /** Reported in results and refusals: a built-in's human label, or a custom filter's label. */
  label: string;
  /** Upper-case tag in the redaction text `[REDACTED:<TAG>]`. */
  tag: string;
  action: FilterAction;
  /** Which messages are scanned: every message, or the user's only. */
  scope: ScanScope;
  /** The caller's request, the model's answer, or both. */
  applyTo: ApplyTo;
  /** The guardrail that brought the filter (the first one, when several bring the same filter). */
  guardrailId: string;
  matchers: Matcher[];
  /**
   * A stored custom pattern this gateway cannot run (stored before patterns were checked against
   * RE2): the filter fails closed, refusing every call it applies to until the guardrail is fixed.
   */
  broken?: string;
}

/**
 * One check's outcome as the generation keeps it (GET /generation's `safeguards`): where it ran
 * (the request or the answer), whose it is (a guardrail's filter, or the provider's own verdict),
 * what it did and how often it matched. Names, actions and counts only: never the matched text.
 */
export interface SafeguardRecord {
  stage: 'request' | 'response';
  source: 'gateway' | 'provider';
  type: 'content_filter';
  label: string;
  slug?: string;
  action: SafeguardStatus;
  matches: number;
  /** The guardrail that brought the filter (gateway filters). */
  guardrail_id?: string;
}

/** The records of a filter list's results (`results[i]` is `filters[i]`'s outcome). */
export function safeguardRecords(
  results: readonly SafeguardResult[],
  filters: readonly Pick<CompiledFilter, 'guardrailId'>[],
  stage: SafeguardRecord['stage'],
): SafeguardRecord[] {
  return results.map((r, i) => {
    const guardrail = filters[i]?.guardrailId;
    return {
      stage,
      source: 'gateway',
      type: r.type,
      label: r.label,
      ...(r.slug !== undefined ? { slug: r.slug } : {}),
      action: r.status.type,
      matches: r.matches,
      ...(guardrail !== undefined ? { guardrail_id: guardrail } : {}),
    };
  });
}

/** The records of a provider's own filter verdicts (Azure's): no `stage` is the prompt's. */
export function providerSafeguardRecords(results: readonly SafeguardResult[]): SafeguardRecord[] {
  return results.map((r) => ({
    stage: r.stage === 'response' ? 'response' : 'request',
    source: 'provider',
    type: r.type,
    label: r.label,
    ...(r.slug !== undefined ? { slug: r.slug } : {}),
    action: r.status.type,
    matches: r.matches,
  }));
}

export interface ContentFilterOutcome {
  /** The messages to send on: redactions applied (unchanged messages keep their identity). */
  messages: ChatMessage[];
  /** The first blocking filter that matched; the call must be refused. */
  blocked: { label: string; slug?: string; broken?: true } | null;
  results: SafeguardResult[];
}

// ---------------------------------------------------------------------------------------------
// Built-in detectors

/** Luhn checksum over the digits of `s` (other characters ignored). */
export function luhnValid(s: string): boolean {
  const digits = s.replace(/\D/g, '');
  if (digits.length < 13 || digits.length > 19) return false;
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

const digitCount = (s: string) => s.replace(/\D/g, '').length;

const STREET_SUFFIXES = [
  'Street',
  'St',
  'Avenue',
  'Ave',
  'Road',
  'Rd',
  'Boulevard',
  'Blvd',
  'Lane',
  'Ln',
  'Drive',
  'Dr',
  'Court',
  'Ct',
  'Place',
  'Pl',
  'Square',
  'Sq',
  'Terrace',
  'Way',
  'Circle',
  'Cir',
  'Parkway',
  'Pkwy',
  'Highway',
  'Hwy',
  'Crescent',
  'Close',
  'Row',
];
const suffixAlternation = STREET_SUFFIXES.map((s) => `[${s[0]}${s[0]?.toLowerCase()}]${s.slice(1)}`).join(
  '|',
);

/** Capitalised words after "I am" that are not names ("I am Sorry", "I'm Not sure"). */
const NOT_NAMES = new Set(
  `a an the not so very just here there sorry happy glad sure going trying looking writing working
  afraid able unable interested new back done fine good okay ok still also really currently always
  never in on at from with`
    .split(/\s+/)
    .filter(Boolean),
);

const NAME_WORD = String.raw`\p{Lu}\p{Ll}+(?:[-'’]\p{Lu}\p{Ll}+)?`;

const BUILTIN_PATTERNS: Record<BuiltinSlug, Builtin[]> = {
  email: [
    {
      // The look-behind starts matches only at the beginning of a token, which keeps long runs of
      // word characters without an "@" linear.
      re: /(?<![\w.%+-])[\w.%+-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.[A-Za-z]{2,24}(?![\w-])/g,
    },
  ],
  phone: [
    {
      // International: +CC then groups separated by spaces, dots or dashes, 8 to 15 digits in all.
      re: /(?<![\w+])\+\d{1,3}(?:[\s.-]?\(?\d{1,4}\)?){2,6}(?!\w)/g,
      validate: (m) => {
        const n = digitCount(m);
        return n >= 8 && n <= 15;
      },
    },
    {
      // US: (555) 123-4567, 555-123-4567, 555.123.4567, 555 123 4567, optionally with 1- in front.
      re: /(?<![\w+-])(?:1[\s.-])?(?:\(\d{3}\)\s?|\d{3}[\s.-])\d{3}[\s.-]\d{4}(?![\w-])/g,
    },
  ],
  // 123-45-6789, also with dots or spaces (one separator throughout).
  ssn: [{ re: /(?<![\w-])(?!000|666|9\d\d)\d{3}([-. ])(?!00)\d{2}\1(?!0000)\d{4}(?![\w-])/g }],
  // 13 to 19 digits, run together or separated by spaces, dashes or dots.
  'credit-card': [{ re: /(?<![\w-])\d(?:[ .-]?\d){12,18}(?![\w-])/g, validate: luhnValid }],
  'ip-address': [
    {
      re: /(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?!\.?\d)(?!\w)/g,
      validate: isIPv4,
    },
    {
      // Candidates are checked by node:net; a digit is required so that `A::B` (C++, Rust) is
      // not an address.
      re: /(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:]|\.\d)/g,
      validate: (m) => isIPv6(m) && /\d/.test(m),
    },
  ],
  secrets: [
    // OpenAI, Anthropic, Gatehouse and similar `sk-` keys.
    { re: /(?<![\w-])sk-[A-Za-z0-9_-]{20,}/g },
    // Stripe.
    { re: /(?<![\w-])(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}/g },
    // AWS access key ids.
    { re: /(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])/g },
    // GitHub tokens.
    { re: /(?<![\w-])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})/g },
    // Slack tokens.
    { re: /(?<![\w-])xox[abposre]-[A-Za-z0-9-]{10,}/g },
    // Google API keys.
    { re: /(?<![\w-])AIza[0-9A-Za-z_-]{35}/g },
    // PEM private keys: the whole block, or to the end of the text when the END line is missing.
    {
      re: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|[\s\S]*)/g,
    },
    // JWTs: base64url header and payload that both start with `{"`.
    { re: /(?<![\w-])eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g },
  ],
  'person-name': [
    {
      // The cue stays; the name (one to three capitalised words) is the match.
      re: new RegExp(
        String.raw`(?<=(?:\b[Mm]y\s+(?:full\s+)?[Nn]ame\s+is|\b[Cc]all\s+me|\bI\s+am|\bI['’]m|\b[Nn]ame\s*:)\s+)${NAME_WORD}(?:\s+${NAME_WORD}){0,2}`,
        'gu',
      ),
      validate: (m) => !NOT_NAMES.has((m.split(/\s+/)[0] ?? '').toLowerCase()),
    },
    {
      re: new RegExp(
        String.raw`(?<![\p{L}])(?:Mr|Mrs|Ms|Miss|Dr|Prof)\.?\s+${NAME_WORD}(?:\s+${NAME_WORD})?`,
        'gu',
      ),
    },
  ],
  address: [
    {
      re: new RegExp(
        String.raw`(?<![\w-])\d{1,6}[A-Za-z]?\s+(?:[A-Z0-9][\w'.-]*\s+){1,4}(?:${suffixAlternation})\b\.?(?:,?\s*(?:Apt|Apartment|Suite|Ste|Unit|#)\.?\s*[\w-]+)?`,
        'g',
      ),
    },
  ],
  'regex-prompt-injection': [
    {
      re: new RegExp(
        [
          String.raw`\bignore\s+(?:all\s+|any\s+|every\s+)?(?:of\s+)?(?:(?:the|your|my|these)\s+)?(?:(?:previous|prior|above|earlier|preceding|system|original)\s+)+(?:instructions?|prompts?|directions?|rules|messages?|context)`,
          String.raw`\bignore\s+(?:all\s+)?your\s+(?:instructions|rules|guidelines|programming)`,
          String.raw`\bdisregard\s+(?:all\s+|any\s+)?(?:of\s+)?(?:(?:the|your|my)\s+)?(?:(?:previous|prior|above|earlier|system|original)\s+)+(?:prompts?|instructions?|rules|guidelines|messages?)`,
          String.raw`\bdisregard\s+(?:all\s+)?your\s+(?:instructions|rules|guidelines|programming)`,
          String.raw`\bforget\s+(?:all\s+|everything\s+)?(?:about\s+)?(?:your|(?:the\s+)?(?:previous|prior|above|earlier))\s+(?:instructions|rules|guidelines|system\s+prompt|programming)`,
          String.raw`\byou\s+are\s+now\s+(?:DAN|in\s+(?:developer|god|jailbreak)\s+mode|jailbroken|unrestricted|unfiltered|free\s+of\s+(?:all\s+)?restrictions)`,
          String.raw`\bdo\s+anything\s+now\b`,
          String.raw`\b(?:enable|enter|activate)\s+(?:developer|god|jailbreak|DAN)\s+mode\b`,
          String.raw`\b(?:reveal|show|print|repeat|output|leak|display|tell\s+me)\s+(?:me\s+)?(?:your|the)\s+(?:(?:system|initial|hidden|original|secret)\s+)+(?:prompt|instructions|message)`,
          String.raw`\bwhat\s+(?:is|are|was|were)\s+your\s+(?:system\s+prompt|initial\s+instructions|original\s+instructions)`,
          String.raw`\bpretend\s+(?:that\s+)?(?:you\s+are|you're|to\s+be)\b[^.\n]{0,80}?\b(?:no|without)\s+(?:restrictions|filters|rules|guidelines|limits)`,
          String.raw`\boverride\s+(?:your|the|all)\s+(?:(?:safety|system|previous)\s+)*(?:instructions|rules|guidelines|filters|settings)`,
        ].join('|'),
        'gi',
      ),
    },
  ],
};

const BUILTIN_MATCHERS = Object.fromEntries(
  Object.entries(BUILTIN_PATTERNS).map(([slug, list]) => [slug, list.map(builtinMatcher)]),
) as Record<BuiltinSlug, Matcher[]>;

const tagOf = (s: string) =>
  s
    .toUpperCase()
    .replace(/[^A-Z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '') || 'CUSTOM';

const BUILTIN_TAGS: Record<BuiltinSlug, string> = {
  email: 'EMAIL',
  phone: 'PHONE',
  ssn: 'SSN',
  'credit-card': 'CREDIT_CARD',
  'ip-address': 'IP_ADDRESS',
  secrets: 'SECRET',
  'person-name': 'PERSON_NAME',
  address: 'ADDRESS',
  'regex-prompt-injection': 'PROMPT_INJECTION',
};

// ---------------------------------------------------------------------------------------------
// Compilation

/** The filters of one guardrail, as stored (custom list and built-in list, either may be null). */
export interface GuardrailFilters {
  guardrailId: string;
  custom: readonly ContentFilter[] | null;
  builtins: readonly StoredBuiltinFilter[] | null;
}

/**
 * Compiles the filters of every applicable guardrail, in guardrail order, custom filters first.
 * The same filter brought by several guardrails (same built-in slug, action and scope; same custom
 * pattern, action and label) is kept once. Unknown built-in slugs are skipped; a custom pattern RE2
 * cannot compile (stored before writes were checked) is kept as a `broken` filter, which fails closed.
 */
export function compileFilters(guardrails: readonly GuardrailFilters[]): CompiledFilter[] {
  const out: CompiledFilter[] = [];
  const seen = new Set<string>();
  for (const g of guardrails) {
    for (const f of g.custom ?? []) {
      const applyTo = f.apply_to ?? 'request';
      const key = JSON.stringify(['custom', f.pattern, f.action, f.label ?? null, applyTo]);
      if (seen.has(key)) continue;
      const compiled = compileCustomPattern(f.pattern);
      seen.add(key);
      const label = f.label?.trim() || 'Custom filter';
      out.push({
        kind: 'custom',
        label,
        tag: f.label?.trim() ? tagOf(f.label) : 'CUSTOM',
        action: f.action,
        scope: 'all_messages',
        applyTo,
        guardrailId: g.guardrailId,
        matchers: 're' in compiled ? [{ spans: (text) => re2Spans(compiled.re, text) }] : [],
        ...('error' in compiled ? { broken: compiled.error } : {}),
      });
    }
    for (const b of g.builtins ?? []) {
      const matchers = BUILTIN_MATCHERS[b.slug];
      if (!matchers) continue;
      const scope: ScanScope =
        b.slug === 'regex-prompt-injection' ? (b.scan_scope ?? 'all_messages') : 'all_messages';
      const applyTo = b.apply_to ?? 'request';
      const key = JSON.stringify(['builtin', b.slug, b.action, scope, applyTo]);
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({
        kind: 'builtin',
        slug: b.slug,
        label: BUILTIN_LABELS[b.slug],
        tag: BUILTIN_TAGS[b.slug],
        action: b.action,
        scope,
        applyTo,
        guardrailId: g.guardrailId,
        matchers,
      });
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Application

const inScope = (f: CompiledFilter, m: ChatMessage) => f.scope === 'all_messages' || m.role === 'user';

/** Every text segment of a message (string content, or the text parts). */
function textsOf(m: ChatMessage): string[] {
  if (typeof m.content === 'string') return [m.content];
  if (Array.isArray(m.content)) {
    return m.content.flatMap((p) => (p.type === 'text' && typeof p.text === 'string' ? [p.text] : []));
  }
  return [];
}

/** The message with its text segments replaced by `texts` (in order), or itself when none changed. */
function withTexts(m: ChatMessage, before: readonly string[], texts: readonly string[]): ChatMessage {
  if (texts.every((t, i) => t === before[i])) return m;
  if (typeof m.content === 'string') return { ...m, content: texts[0] ?? '' };
  let k = 0;
  const content = (m.content ?? []).map((p): ContentPart => {
    if (p.type !== 'text' || typeof p.text !== 'string') return p;
    const text = texts[k++] as string;
    return text === p.text ? p : { ...p, text };
  });
  return { ...m, content };
}

const findersOf = (f: CompiledFilter) => f.matchers.map((m) => (text: string) => m.spans(text));

/** The matches of `f` in one text, as spans of the original text (the model's answer: see answer-filter.ts). */
export function originalSpans(f: CompiledFilter, text: string): Span[] {
  if (text.length === 0) return [];
  const t = prepareText([text]);
  return findSpans(t, findersOf(f)).map((span) => toOriginal(t, span));
}

/** Each message's texts, normalised once for all the filters (a redaction makes a new message). */
type Prepared = WeakMap<ChatMessage, PreparedText | null>;

function prepared(cache: Prepared, m: ChatMessage): PreparedText | null {
  let t = cache.get(m);
  if (t === undefined) {
    const texts = textsOf(m);
    t = texts.length > 0 ? prepareText(texts) : null;
    cache.set(m, t);
  }
  return t;
}

function countFilter(f: CompiledFilter, messages: readonly ChatMessage[], cache: Prepared): number {
  let n = 0;
  for (const m of messages) {
    const t = inScope(f, m) ? prepared(cache, m) : null;
    if (t) n += findSpans(t, findersOf(f)).length;
  }
  return n;
}

/** Applies one redacting filter to the message list, copying only the messages it changes. */
function redactFilter(f: CompiledFilter, messages: ChatMessage[], cache: Prepared): number {
  let total = 0;
  const replacement = `[REDACTED:${f.tag}]`;
  for (const [i, m] of messages.entries()) {
    const t = inScope(f, m) ? prepared(cache, m) : null;
    if (!t) continue;
    const spans = findSpans(t, findersOf(f));
    if (spans.length === 0) continue;
    total += spans.length;
    messages[i] = withTexts(m, t.parts, redactSpans(t, spans, replacement));
  }
  return total;
}

export const STATUS: Record<FilterAction, SafeguardStatus> = {
  block: 'blocked',
  redact: 'redacted',
  flag: 'flagged',
};

/**
 * Runs the filters over the messages. Blocking and flagging filters are evaluated on the original
 * text; redacting filters then run in order, each on the previous one's output. When a blocking
 * filter matches, `blocked` names the first one and the messages come back unchanged (every
 * filter is still reported, with the status its action would give). Every filter appears in
 * `results`, with `passed` when it found nothing. The input is never mutated.
 */
export function applyContentFilters(
  filters: readonly CompiledFilter[],
  messages: ChatMessage[],
): ContentFilterOutcome {
  if (filters.length === 0) return { messages, blocked: null, results: [] };
  const counts = new Array<number>(filters.length).fill(0);
  const cache: Prepared = new WeakMap();
  // A filter that cannot run fails closed: the call is refused rather than sent unfiltered.
  let blocked: CompiledFilter | null = filters.find((f) => f.broken !== undefined) ?? null;
  for (const [i, f] of filters.entries()) {
    if (f.action === 'redact' || f.broken !== undefined) continue;
    const n = countFilter(f, messages, cache);
    counts[i] = n;
    if (f.action === 'block' && n > 0 && blocked === null) blocked = f;
  }

  let out = messages;
  if (blocked !== null) {
    for (const [i, f] of filters.entries()) {
      if (f.action === 'redact') counts[i] = countFilter(f, messages, cache);
    }
  } else {
    out = [...messages];
    for (const [i, f] of filters.entries()) {
      if (f.action === 'redact') counts[i] = redactFilter(f, out, cache);
    }
    if (out.every((m, i) => m === messages[i])) out = messages;
  }

  const results = filters.map(
    (f, i): SafeguardResult => ({
      type: 'content_filter',
      status: {
        type: f.broken !== undefined ? 'blocked' : (counts[i] ?? 0) > 0 ? STATUS[f.action] : 'passed',
      },
      label: f.label,
      ...(f.slug !== undefined ? { slug: f.slug } : {}),
      matches: counts[i] ?? 0,
    }),
  );
  return {
    messages: out,
    blocked:
      blocked === null
        ? null
        : {
            label: blocked.label,
            ...(blocked.slug !== undefined ? { slug: blocked.slug } : {}),
            ...(blocked.broken !== undefined ? { broken: true } : {}),
          },
    results,
  };
}
