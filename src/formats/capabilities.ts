/**
 * What each provider kind can carry of a canonical request, in two tables:
 *
 * - CAPABILITY_RULES: features that change the answer. The router calls assertTranslatable before
 *   sending a request to a provider of that kind; a refusal is a 400 naming the field (or, for a
 *   router with fallbacks, a reason to skip that provider — see untranslatableFields).
 * - HINT_RULES: fields that only steer cost or latency (prompt caching, service tier, …). A kind
 *   that has no equivalent drops them; droppedFields lists what was dropped, for the caller.
 *
 * One row per refusal or hint. "Present" means the caller asked for something: fields left at
 * their no-op value (`logprobs: false`, a penalty of 0, `top_logprobs: 0`) are not refused.
 */
import { type ChatRequest, type ContentPart, TranslationError } from './chat.js';

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

/**
 * A web search offered to the model as a Responses tool (Codex sends one on every call), which the
 * model may or may not use: a provider without a search drops it (listed) rather than refusing the
 * call. A search asked for outright (`web_search_options`, Anthropic's server tool) stays refused.
 */
export const offeredSearch = (r: ChatRequest): boolean => r.web_search?.origin !== undefined;

/**
 * Gemini refuses its Google Search beside function declarations (2.x: "Tool use with function
 * calling is unsupported"; 3.x unless its server-side tool invocations are exposed, which only the
 * Gemini API does: that provider keeps the search for those models, ProviderTraits.keeps): a search
 * merely offered beside functions is left out there.
 */
export const geminiDropsSearch = (r: ChatRequest): boolean => offeredSearch(r) && (r.tools?.length ?? 0) > 0;

/**
 * The rule a provider refuses (ProviderTraits.refuses) when its model cannot search beside function
 * tools (Gemini 2, and Vertex AI for every model): a search asked for outright there beside functions
 * is refused before the call rather than upstream; one merely offered is left out (geminiDropsSearch).
 */
export const SEARCH_BESIDE_FUNCTIONS = 'web_search+tools';
const when = (field: string, cond: (req: ChatRequest) => boolean) => (req: ChatRequest) =>
  cond(req) ? field : null;

/** The path of the first part of `type`. */
function findPartOfType(req: ChatRequest, type: ContentPart['type']): string | null {
  for (const [i, m] of req.messages.entries()) {
    if (!Array.isArray(m.content)) continue;
    const j = m.content.findIndex((p) => p.type === type);
    if (j >= 0) return `messages[${i}].content[${j}]`;
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
  // json_schema is carried to Anthropic (`output_config.format`); a bare JSON mode has no equivalent.
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
    field: 'top_k',
    refusedBy: ['openai'],
    check: when('top_k', (r) => isSet(r.top_k)),
    reason: 'top-k sampling is not supported',
  },
  {
    field: 'input_audio',
    refusedBy: ['anthropic'],
    check: (r) => findPartOfType(r, 'input_audio'),
    reason: 'audio input is not available',
  },
  // OpenAI-format providers get the part as sent (OpenRouter serves it for the models that watch).
  {
    field: 'video_url',
    refusedBy: ['anthropic'],
    check: (r) => findPartOfType(r, 'video_url'),
    reason: 'video input is not available',
  },
  // Images and documents in tool results are carried everywhere: where a tool result takes text
  // only (OpenAI's Chat Completions, Gemini), the provider wire moves them to the user turn after it.
  // Every kind has a web search; a provider without one (Bedrock's Converse) refuses it by name
  // (ProviderTraits.refuses) — unless it was only offered as a tool (see offeredSearch).
  {
    field: 'web_search',
    refusedBy: [],
    check: when('web_search', (r) => isSet(r.web_search) && !offeredSearch(r)),
    reason: 'the provider has no web search of its own',
  },
  {
    field: SEARCH_BESIDE_FUNCTIONS,
    refusedBy: [],
    check: when('web_search', (r) => isSet(r.web_search) && !offeredSearch(r) && (r.tools?.length ?? 0) > 0),
    reason: 'this model does not search the web beside function tools',
  },
];

const KIND_NAMES: Record<ProviderKind, string> = {
  openai: 'OpenAI-format',
  anthropic: 'Anthropic',
  google: 'Google',
};

/**
 * Every refusal `target` would make for `req` (empty when it can carry the whole request); `refuses`
 * names rules the provider refuses beyond its kind's (ProviderTraits.refuses).
 */
export function untranslatableFields(
  req: ChatRequest,
  target: ProviderKind,
  refuses: readonly string[] = [],
): { field: string; message: string }[] {
  const out: { field: string; message: string }[] = [];
  for (const rule of CAPABILITY_RULES) {
    if (!rule.refusedBy.includes(target) && !refuses.includes(rule.field)) continue;
    const path = rule.check(req);
    const whom = rule.refusedBy.includes(target) ? `${KIND_NAMES[target]} providers` : 'this provider';
    if (path) out.push({ field: rule.field, message: `${path} cannot be sent to ${whom}: ${rule.reason}` });
  }
  return out;
}

/** Throws a TranslationError naming the first field `target` cannot carry. */
export function assertTranslatable(
  req: ChatRequest,
  target: TargetKind,
  refuses: readonly string[] = [],
): void {
  if (target === 'dev') return;
  // An OpenAI-compatible server refuses what OpenAI refuses (it may take hints OpenAI takes not).
  const [first] = untranslatableFields(req, target === 'openai-compatible' ? 'openai' : target, refuses);
  if (first) throw new TranslationError(first.message);
}

// ---------------------------------------------------------------------------------------------
// Hints: dropped, never refused

/** Every kind a provider can be (the hint table names the ones that keep a hint). */
export type TargetKind = ProviderKind | 'openai-compatible' | 'dev';

export interface HintRule {
  /** The field as reported in `x-gatehouse-dropped-fields` (Chat Completions names). */
  field: string;
  /** Whether a provider of kind `target` drops the hint `req` sets (false when it is not set). */
  dropped: (req: ChatRequest, target: TargetKind) => boolean;
}

/** A hint that the `keptBy` kinds carry and every other kind drops, when `present`. */
const keptBy =
  (kinds: readonly TargetKind[], present: (req: ChatRequest) => boolean) =>
  (req: ChatRequest, target: TargetKind) =>
    !kinds.includes(target) && present(req);

/** Anthropic takes at most this many cache breakpoints; the wire keeps the last ones. */
export const ANTHROPIC_MAX_BREAKPOINTS = 4;

/** How many cache breakpoints the request sets (top-level, tools, messages, parts). */
export function breakpointCount(req: ChatRequest): number {
  let n = req.cache_control ? 1 : 0;
  for (const t of req.tools ?? []) if (t.cache_control) n++;
  for (const m of req.messages) {
    if (m.cache_control) n++;
    if (Array.isArray(m.content)) for (const p of m.content) if (p.cache_control) n++;
  }
  return n;
}

/** Anthropic's equivalent of an OpenAI service tier: `auto` → `auto`, `default` → `standard_only`. */
export function anthropicServiceTier(tier: string | undefined): 'auto' | 'standard_only' | undefined {
  if (tier === 'auto') return 'auto';
  if (tier === 'default') return 'standard_only';
  return undefined;
}

export const HINT_RULES: readonly HintRule[] = [
  // Every kind searches; only a provider without a search (ProviderTraits.drops) drops an offered
  // one, and Gemini one beside functions (unless the provider keeps it: ProviderTraits.keeps).
  {
    field: 'web_search',
    dropped: (r, t) => (t === 'dev' && offeredSearch(r)) || (t === 'google' && geminiDropsSearch(r)),
  },
  // A header, not a body field: Anthropic's adapter sends it as one.
  { field: 'anthropic-beta', dropped: keptBy(['anthropic'], (r) => isSet(r.anthropic_beta)) },
  {
    field: 'cache_control',
    // Anthropic keeps up to its limit (the wire drops the earliest breakpoints past it).
    dropped: (r, t) => {
      const n = breakpointCount(r);
      return t === 'anthropic' ? n > ANTHROPIC_MAX_BREAKPOINTS : n > 0;
    },
  },
  // Anthropic streams such a tool's input unchecked; elsewhere it streams as it always does.
  {
    field: 'tools.eager_input_streaming',
    dropped: keptBy(['anthropic'], (r) => r.tools?.some((t) => t.eager_input_streaming) ?? false),
  },
  { field: 'prompt_cache_key', dropped: keptBy(['openai'], (r) => isSet(r.prompt_cache_key)) },
  { field: 'prompt_cache_retention', dropped: keptBy(['openai'], (r) => isSet(r.prompt_cache_retention)) },
  { field: 'prompt_cache_options', dropped: keptBy(['openai'], (r) => isSet(r.prompt_cache_options)) },
  {
    field: 'service_tier',
    dropped: (r, t) =>
      isSet(r.service_tier) && t !== 'openai' && !(t === 'anthropic' && anthropicServiceTier(r.service_tier)),
  },
  { field: 'verbosity', dropped: keptBy(['openai'], (r) => isSet(r.verbosity)) },
  // store: false is what every other provider does anyway.
  { field: 'store', dropped: keptBy(['openai'], (r) => r.store === true) },
  {
    field: 'metadata',
    dropped: keptBy(['openai'], (r) => isSet(r.metadata) && Object.keys(r.metadata as object).length > 0),
  },
  {
    field: 'safety_identifier',
    // Anthropic: becomes metadata.user_id, unless `user` already fills it.
    dropped: (r, t) => isSet(r.safety_identifier) && t !== 'openai' && !(t === 'anthropic' && !isSet(r.user)),
  },
  { field: 'user', dropped: keptBy(['openai', 'openai-compatible', 'anthropic'], (r) => isSet(r.user)) },
  // Web search settings each provider's search has no field for (the search itself is kept).
  {
    field: 'web_search.max_uses',
    dropped: keptBy(['anthropic'], (r) => isSet(r.web_search?.max_uses)),
  },
  {
    field: 'web_search.allowed_domains',
    dropped: keptBy(['anthropic'], (r) => (r.web_search?.allowed_domains?.length ?? 0) > 0),
  },
  {
    // Anthropic takes one of the two lists: the allowed domains win.
    field: 'web_search.blocked_domains',
    dropped: (r, t) =>
      (r.web_search?.blocked_domains?.length ?? 0) > 0 &&
      (t !== 'anthropic' || (r.web_search?.allowed_domains?.length ?? 0) > 0),
  },
  {
    field: 'web_search.user_location',
    dropped: keptBy(['anthropic', 'openai', 'openai-compatible'], (r) => isSet(r.web_search?.user_location)),
  },
  {
    field: 'web_search.search_context_size',
    dropped: keptBy(['openai', 'openai-compatible'], (r) => isSet(r.web_search?.search_context_size)),
  },
  {
    field: 'parallel_tool_calls',
    dropped: keptBy(
      ['openai', 'openai-compatible', 'anthropic'],
      (r) => r.parallel_tool_calls === false && (r.tools?.length ?? 0) > 0,
    ),
  },
];

/**
 * The fields dropped when `req` is sent to a provider of kind `target`: the caller-side parser's
 * own list (`req.dropped`, fields the canonical request cannot carry) followed by the hints that
 * kind has no equivalent for, and those of `alsoDrops` (hints the kind carries but the provider
 * does not, for this model) that the request sets; not those of `keeps` (hints the kind drops but
 * the provider carries, for this model). Empty when nothing was lost.
 */
export function droppedFields(
  req: ChatRequest,
  target: TargetKind,
  alsoDrops: readonly string[] = [],
  keeps: readonly string[] = [],
): string[] {
  const out = [...(req.dropped ?? [])];
  // The development kind keeps no hint: a rule drops for it exactly when the request sets it.
  for (const rule of HINT_RULES) {
    if (keeps.includes(rule.field)) continue;
    if (rule.dropped(req, target) || (alsoDrops.includes(rule.field) && rule.dropped(req, 'dev')))
      out.push(rule.field);
  }
  return [...new Set(out)];
}
