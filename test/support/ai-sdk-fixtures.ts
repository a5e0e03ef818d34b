import type { JSONSchema7 } from 'ai';

/**
 * What the Vercel AI SDK client tests (each `ai` line, each provider package) share: the mock
 * upstream's replies and tool steps, the structured answer, an image, and the models they call.
 */

/** Every priced model here costs $1 per million prompt tokens and $2 per million completion tokens. */
export const costOf = (prompt: number, completion: number) => (prompt * 1 + completion * 2) / 1e6;

export const USAGE = { prompt_tokens: 40, completion_tokens: 7, cached_tokens: 16 };
export const REPLY = { text: 'Hello through the gateway.', usage: USAGE };
/** A tool loop: the model calls `weather` for Oslo, then answers with the tool's result. */
export const STEP_1 = {
  text: 'Let me look that up.',
  tool_calls: [{ id: 'call_w1', name: 'weather', arguments: { city: 'Oslo' } }],
  usage: { prompt_tokens: 30, completion_tokens: 9 },
};
export const STEP_2 = { text: 'It is sunny in Oslo.', usage: { prompt_tokens: 50, completion_tokens: 6 } };

/** The structured answer, and its JSON Schema (each test wraps it in its `ai` line's `jsonSchema`). */
export const CITY = { name: 'Oslo', population: 709037 };
export const CITY_SCHEMA: JSONSchema7 = {
  type: 'object',
  properties: { name: { type: 'string' }, population: { type: 'number' } },
  required: ['name', 'population'],
  additionalProperties: false,
};
/** The `weather` tool's input schema. */
export const WEATHER_INPUT_SCHEMA: JSONSchema7 = {
  type: 'object',
  properties: { city: { type: 'string' } },
  required: ['city'],
  additionalProperties: false,
};

/** A 1×1 PNG. */
export const PNG_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
export const PNG = Buffer.from(PNG_BASE64, 'base64');

/** Where each model lands upstream (test/support/upstreams.ts): its chat wire, its id there, its provider. */
export const UPSTREAM = {
  'test/claude': { format: 'anthropic-messages', model: 'claude-x', provider: 'anthropic' },
  'test/gpt': { format: 'openai-chat', model: 'gpt-x', provider: 'openai' },
} as const;
export type Model = keyof typeof UPSTREAM;
export const MODELS: Model[] = ['test/claude', 'test/gpt'];
