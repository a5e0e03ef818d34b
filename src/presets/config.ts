import { ApiError } from '../lib/errors.js';

/**
 * What a preset keeps of an inference body, and how it completes one. A preset is saved from a body
 * of any of the three inference formats and applied to a body of any of them, so its config names
 * fields once: the fields the formats share by name stay as they are; the output limit is kept as
 * `max_tokens` and the stop sequences as `stop`, and become each format's own name when applied.
 * A field a format does not have is not applied to it (a chat preset's `seed` on `/messages`).
 */

export type Skin = 'chat' | 'messages' | 'responses';

export type PresetConfig = Record<string, unknown>;

export interface Saved {
  config: PresetConfig;
  systemPrompt: string | null;
}

type Body = Record<string, unknown>;

/** Routing and sampling every format takes by the same name. */
const SHARED = ['model', 'models', 'provider', 'route', 'plugins', 'temperature', 'top_p', 'top_k'];

/** The fields each format takes from a preset by their own name (beside the output limit and stop). */
const FIELDS: Record<Skin, ReadonlySet<string>> = {
  chat: new Set([
    ...SHARED,
    'frequency_penalty',
    'presence_penalty',
    'repetition_penalty',
    'min_p',
    'top_a',
    'seed',
    'logit_bias',
    'reasoning',
    'parallel_tool_calls',
    'top_logprobs',
    'response_format',
    'verbosity',
  ]),
  responses: new Set([
    ...SHARED,
    'frequency_penalty',
    'presence_penalty',
    'reasoning',
    'parallel_tool_calls',
    'top_logprobs',
    'text',
    'max_tool_calls',
    'truncation',
  ]),
  messages: new Set([...SHARED, 'thinking']),
};

/** Each format's names of the output limit (the first is the one a preset sets) and of the stop sequences. */
const LIMIT: Record<Skin, readonly [string, ...string[]]> = {
  chat: ['max_tokens', 'max_completion_tokens'],
  responses: ['max_output_tokens'],
  messages: ['max_tokens'],
};
const STOP: Record<Skin, string | null> = { chat: 'stop', responses: null, messages: 'stop_sequences' };

const given = (v: unknown) => v !== undefined && v !== null;
const isObj = (v: unknown): v is Body => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The text of a string or of a list of content blocks (their `text` parts, joined by blank lines). */
function textOf(content: unknown): string | null {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return null;
  const parts = content
    .map((b) => (isObj(b) && typeof b.text === 'string' ? b.text : null))
    .filter((t): t is string => t !== null);
  return parts.length ? parts.join('\n\n') : null;
}

const isSystem = (m: unknown) => isObj(m) && (m.role === 'system' || m.role === 'developer');

/** The body's system prompt: chat's system/developer messages, Anthropic's `system`, `instructions`. */
function systemPromptOf(skin: Skin, body: Body): string | null {
  if (skin === 'messages') return textOf(body.system);
  if (skin === 'responses') return typeof body.instructions === 'string' ? body.instructions : null;
  const texts = (Array.isArray(body.messages) ? body.messages : [])
    .filter(isSystem)
    .map((m) => textOf((m as Body).content))
    .filter((t): t is string => t !== null);
  return texts.length ? texts.join('\n\n') : null;
}

/**
 * What a preset keeps of `body` sent in `skin`'s format: the configuration fields (null counts as
 * not sent) and the system prompt. Messages, input, stream and every other field are left out.
 */
export function savedFrom(skin: Skin, body: Body): Saved {
  const config: PresetConfig = {};
  for (const [k, v] of Object.entries(body)) if (FIELDS[skin].has(k) && given(v)) config[k] = v;
  const limit = LIMIT[skin].map((k) => body[k]).find(given);
  if (limit !== undefined) config.max_tokens = limit;
  const stop = STOP[skin];
  if (stop && given(body[stop])) config.stop = body[stop];
  return { config, systemPrompt: systemPromptOf(skin, body) };
}

/** The fields that choose what serves a call: all a counting or compacting body takes of a preset. */
const ROUTING: ReadonlySet<string> = new Set(['model', 'models', 'provider', 'route']);

/**
 * `body` completed from a preset: every preset field the format takes that the body does not set
 * (a field sent as null counts as not sent), and the preset's system prompt when the body has none.
 * The body's own fields always win. `body` is not changed. `routingOnly`: only the model, provider
 * preferences and system prompt — for token counts and compaction, whose bodies take no settings.
 */
export function applied(skin: Skin, body: Body, preset: Saved, routingOnly = false): Body {
  const out: Body = { ...body };
  const takes = routingOnly ? ROUTING : FIELDS[skin];
  for (const [k, v] of Object.entries(preset.config)) if (takes.has(k) && !given(out[k])) out[k] = v;
  if (!routingOnly) {
    const limit = preset.config.max_tokens;
    if (given(limit) && !LIMIT[skin].some((k) => given(out[k]))) out[LIMIT[skin][0]] = limit;
    const stop = STOP[skin];
    if (stop && given(preset.config.stop) && !given(out[stop])) out[stop] = preset.config.stop;
  }
  const prompt = preset.systemPrompt;
  if (prompt && systemPromptOf(skin, body) === null) {
    if (skin === 'messages') out.system = prompt;
    else if (skin === 'responses') out.instructions = prompt;
    else
      out.messages = [
        { role: 'system', content: prompt },
        ...(Array.isArray(body.messages) ? body.messages : []),
      ];
  }
  return out;
}

/** URL-safe: letters, digits, `-`, `_` and `.`, starting with a letter or digit, at most 64. */
export const SLUG = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

const PREFIX = '@preset/';

/** The preset a body names, and the model it names beside it: `@preset/x`, `model@preset/x`, `preset`. */
export interface PresetRef {
  slug: string;
  /** The model named before `@preset/` (it wins over the preset's); absent for `@preset/x` alone. */
  model?: string;
}

/**
 * A preset named in the `models` fallback list is a 400 naming the entry: a call completes from one
 * preset, chosen before routing, so a fallback cannot switch to another one's settings — and left
 * alone it would only fail later as a model id no catalog has.
 */
function checkFallbacks(models: unknown): void {
  if (!Array.isArray(models)) return;
  const at = models.findIndex((m) => typeof m === 'string' && m.includes(PREFIX));
  if (at >= 0)
    throw new ApiError(
      400,
      `\`models[${at}]\`: a preset cannot be a fallback model; use \`preset\` or \`model\``,
    );
}

/**
 * The preset `body` names, or null for none: in its `model` (`@preset/<slug>` or
 * `<model>@preset/<slug>`) or its `preset` field (OpenRouter's three ways). Naming two different
 * presets, a slug that is not one, or a preset in `models` is a 400.
 */
export function presetRefOf(body: Body): PresetRef | null {
  const { model, preset } = body;
  checkFallbacks(body.models);
  let ref: PresetRef | null = null;
  if (typeof model === 'string') {
    const at = model.indexOf(PREFIX);
    if (at >= 0) {
      const slug = model.slice(at + PREFIX.length);
      ref = at > 0 ? { slug, model: model.slice(0, at) } : { slug };
    }
  }
  if (preset !== undefined && preset !== null) {
    if (typeof preset !== 'string') throw new ApiError(400, '`preset` must be a preset slug (a string)');
    if (ref && ref.slug !== preset)
      throw new ApiError(400, `\`model\` names preset ${ref.slug} and \`preset\` names ${preset}: name one`);
    ref ??= { slug: preset, ...(typeof model === 'string' && model ? { model } : {}) };
  }
  if (ref && !SLUG.test(ref.slug))
    throw new ApiError(
      400,
      `Invalid preset slug ${JSON.stringify(ref.slug.slice(0, 80))}: letters, digits, '-', '_' and '.', at most 64`,
    );
  return ref;
}

/**
 * `body` with the preset reference taken out: the `preset` field removed, and `model` the model
 * named beside the preset (removed when the preset alone was named, so the preset's model applies).
 */
export function withoutRef(body: Body, ref: PresetRef): Body {
  const { preset: _preset, model: _model, ...rest } = body;
  return ref.model ? { ...rest, model: ref.model } : rest;
}
