/**
 * The request body a preset is saved from, as the editor shows it. A preset is saved by sending an
 * inference body to the save route of its format (the preset keeps its configuration fields and
 * system prompt); its stored configuration names the output limit `max_tokens` and the stop
 * sequences `stop` whatever format it came from (src/presets/config.ts).
 */
import { call, dataApi, type JsonOk } from '../../api/client';

export type Preset = JsonOk<'/presets/{slug}', 'get'>['data'];
export type Version = NonNullable<Preset['designated_version']>;

export const FORMATS = [
  { value: 'chat/completions', label: 'Chat Completions' },
  { value: 'messages', label: 'Anthropic Messages' },
  { value: 'responses', label: 'Responses' },
] as const;
export type Format = (typeof FORMATS)[number]['value'];

type Body = Record<string, unknown>;

/** The editor's text as a request body, or an error saying what is wrong with it. */
export function parseBody(text: string): Body {
  if (!text.trim())
    throw new Error('Write the request body as JSON, e.g. {"model": "…", "temperature": 0.2}.');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new Error(`The request body is not valid JSON: ${(err as Error).message}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new Error('The request body must be a JSON object ({"model": …}).');
  return parsed as Body;
}

/** Saves `body` as the preset's new version (creating the preset when the slug is new). */
export function savePreset(slug: string, format: Format, body: Body) {
  const params = { path: { slug } };
  if (format === 'messages') return call(dataApi.POST('/presets/{slug}/messages', { params, body }));
  if (format === 'responses') return call(dataApi.POST('/presets/{slug}/responses', { params, body }));
  return call(dataApi.POST('/presets/{slug}/chat/completions', { params, body }));
}

/**
 * A version as the body it would be saved from again, in a format that keeps all its fields: a
 * field only one format takes (`thinking`, `text` …) would be dropped by saving it as another.
 */
export function bodyOf(v: Version): { format: Format; text: string } {
  const { max_tokens, stop, ...rest } = v.config as Body;
  const prompt = v.system_prompt;
  const has = (...keys: string[]) => keys.some((k) => k in rest);
  let format: Format = 'chat/completions';
  let body: Body;
  if (has('thinking')) {
    format = 'messages';
    body = { ...rest, max_tokens, stop_sequences: stop, system: prompt ?? undefined };
  } else if (has('text', 'max_tool_calls', 'truncation')) {
    format = 'responses';
    body = { ...rest, max_output_tokens: max_tokens, instructions: prompt ?? undefined };
  } else {
    body = {
      ...(v.config as Body),
      messages: prompt === null ? undefined : [{ role: 'system', content: prompt }],
    };
  }
  // JSON.stringify leaves out the fields set to undefined above.
  return { format, text: JSON.stringify(body, null, 2) };
}
