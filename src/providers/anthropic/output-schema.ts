/**
 * A caller's JSON schema (an OpenAI `json_schema` response format) → the subset Anthropic's
 * structured outputs (`output_config.format`) take, rewritten by Anthropic's own SDK function (what
 * its `messages.parse` sends): every object closed (`additionalProperties: false`), `oneOf` as
 * `anyOf`, `$schema` left out, and keywords Anthropic does not enforce (`minimum`, `pattern`, other
 * string formats, …) appended to the description, where the model still reads them.
 */
import { transformJSONSchema } from '@anthropic-ai/sdk/lib/transform-json-schema';

export const anthropicOutputSchema = (schema: Record<string, unknown>): Record<string, unknown> =>
  transformJSONSchema(schema) as Record<string, unknown>;
