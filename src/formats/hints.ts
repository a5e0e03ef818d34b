/**
 * The cost and latency hints caller formats share, validated into the canonical request: prompt
 * cache breakpoints (`cache_control`) and OpenAI's top-level hints. Where each one goes per provider
 * is the provider wires' business; what a provider kind drops is HINT_RULES in capabilities.ts.
 */
import type { CacheControl, ChatRequest, ContentPart } from './chat.js';
import { arr, fail, type Obj, obj, oneOf, optStr, str } from './validate.js';

/** A `cache_control` value ({type: 'ephemeral', ttl?: '5m' | '1h'}), or undefined when not given. */
export function optCacheControl(v: unknown, path: string): CacheControl | undefined {
  if (v === undefined || v === null) return undefined;
  const o = obj(v, path);
  oneOf(o.type, `${path}.type`, ['ephemeral'] as const);
  if (o.ttl === undefined || o.ttl === null) return { type: 'ephemeral' };
  return { type: 'ephemeral', ttl: oneOf(o.ttl, `${path}.ttl`, ['5m', '1h'] as const) };
}

/** `o` with `cache_control` set when `v` gives one. */
export function withCacheControl<T extends object>(o: T, v: unknown, path: string): T {
  const cc = optCacheControl(v, path);
  return cc ? { ...o, cache_control: cc } : o;
}

/**
 * OpenAI's explicit breakpoint on a content part (`prompt_cache_breakpoint: {mode: 'explicit',
 * ttl?}`) as a breakpoint there. Its `ttl` is a minimum lifetime (`30m`, `12h`): given, it asks for
 * the longest Anthropic keeps (`1h`); without one, Anthropic's default.
 */
export function optPromptCacheBreakpoint(v: unknown, path: string): CacheControl | undefined {
  if (v === undefined || v === null) return undefined;
  const o = obj(v, path);
  oneOf(o.mode, `${path}.mode`, ['explicit'] as const);
  if (o.ttl === undefined || o.ttl === null) return { type: 'ephemeral' };
  str(o.ttl, `${path}.ttl`);
  return { type: 'ephemeral', ttl: '1h' };
}

/** A content part with its breakpoint: its `cache_control`, else its `prompt_cache_breakpoint`. */
export function withPartBreakpoint<T extends object>(o: T, part: Obj, path: string): T {
  const cc =
    optCacheControl(part.cache_control, `${path}.cache_control`) ??
    optPromptCacheBreakpoint(part.prompt_cache_breakpoint, `${path}.prompt_cache_breakpoint`);
  return cc ? { ...o, cache_control: cc } : o;
}

/** OpenAI's cost and latency hints: sent to api.openai.com as they are, dropped elsewhere (see HINT_RULES). */
export const OPENAI_HINT_FIELDS = [
  'prompt_cache_key',
  'prompt_cache_retention',
  'prompt_cache_options',
  'service_tier',
  'verbosity',
  'store',
  'metadata',
  'safety_identifier',
] as const satisfies readonly (keyof ChatRequest)[];

/**
 * Text-only content (a system prompt, a tool result): `{type: 'text', text, cache_control?}` items as
 * text parts, breakpoints kept (OpenAI's `prompt_cache_breakpoint` too); `noun` names the items in
 * errors ('parts', 'blocks').
 */
export function cachedTextParts(v: unknown, path: string, noun: 'parts' | 'blocks'): ContentPart[] {
  return arr(v, path).map((raw, i): ContentPart => {
    const p = `${path}[${i}]`;
    const part = obj(raw, p);
    if (part.type !== 'text') fail(`${p}.type`, `only 'text' ${noun} are allowed here`);
    return withPartBreakpoint({ type: 'text', text: str(part.text, `${p}.text`) }, part, p);
  });
}

export type OpenAiHints = Pick<
  ChatRequest,
  | 'prompt_cache_key'
  | 'prompt_cache_retention'
  | 'prompt_cache_options'
  | 'service_tier'
  | 'verbosity'
  | 'metadata'
  | 'safety_identifier'
>;

function metadata(v: unknown): Record<string, string> | undefined {
  if (v === undefined || v === null) return undefined;
  const m = obj(v, 'metadata');
  for (const [k, val] of Object.entries(m)) optStr(val, `metadata.${k}`);
  return m as Record<string, string>;
}

function promptCacheOptions(v: unknown): ChatRequest['prompt_cache_options'] {
  if (v === undefined || v === null) return undefined;
  const o = obj(v, 'prompt_cache_options');
  const out: NonNullable<ChatRequest['prompt_cache_options']> = {};
  if (o.mode !== undefined && o.mode !== null) {
    out.mode = oneOf(o.mode, 'prompt_cache_options.mode', ['implicit', 'explicit'] as const);
  }
  const ttl = optStr(o.ttl, 'prompt_cache_options.ttl');
  if (ttl !== undefined) out.ttl = ttl;
  return out;
}

/**
 * OpenAI's hints as Chat Completions and Responses name them at the top level; `verbosity` is read
 * from `verbosityAt` (top-level in Chat Completions, `text.verbosity` in Responses).
 */
export function openAiHints(b: Obj, verbosity: { value: unknown; path: string }): OpenAiHints {
  const hints: OpenAiHints = {
    prompt_cache_key: optStr(b.prompt_cache_key, 'prompt_cache_key'),
    prompt_cache_retention: optStr(b.prompt_cache_retention, 'prompt_cache_retention'),
    prompt_cache_options: promptCacheOptions(b.prompt_cache_options),
    service_tier: optStr(b.service_tier, 'service_tier'),
    metadata: metadata(b.metadata),
    safety_identifier: optStr(b.safety_identifier, 'safety_identifier'),
  };
  if (verbosity.value !== undefined && verbosity.value !== null) {
    hints.verbosity = oneOf(verbosity.value, verbosity.path, ['low', 'medium', 'high'] as const);
  }
  return hints;
}
