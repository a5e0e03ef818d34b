/**
 * A caller's JSON schema (an OpenAI `json_schema` response format) → the subset Anthropic's
 * structured outputs (`output_config.format`) take, as Anthropic's own SDK rewrites it before
 * sending (`transformJSONSchema` in @anthropic-ai/sdk):
 *
 * - kept: `type`, `properties`, `required`, `items`, `enum` / `const` (primitive values), `anyOf`
 *   (`oneOf` becomes `anyOf`), `allOf`, `$ref` with `$defs` (and draft-07 `definitions`),
 *   `description`, `title`, the string formats Anthropic knows, `minItems` 0 or 1;
 * - every object gets `additionalProperties: false` (the only value Anthropic takes);
 * - `$schema` is left out (it names the dialect and constrains nothing);
 * - any other keyword (`minimum`, `maxLength`, `pattern`, `default`, other formats, …) is not
 *   enforced by Anthropic: it is appended to the description, so the model still reads it.
 *
 * Pure: the caller's schema is not modified.
 */
type Schema = Record<string, unknown>;

const STRING_FORMATS = new Set([
  'date-time',
  'time',
  'date',
  'duration',
  'email',
  'hostname',
  'uri',
  'ipv4',
  'ipv6',
  'uuid',
]);

const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);
const isPrimitive = (v: unknown) => v === null || typeof v !== 'object';

export function anthropicOutputSchema(schema: Schema): Schema {
  return rewrite(schema);
}

function rewrite(input: Schema): Schema {
  const rest: Schema = { ...input };
  const take = (key: string) => {
    const v = rest[key];
    delete rest[key];
    return v;
  };
  const out: Schema = {};
  for (const key of ['$defs', 'definitions']) {
    const defs = take(key);
    if (isSchema(defs)) out[key] = mapValues(defs);
  }
  const ref = take('$ref');
  if (ref !== undefined) return { ...out, $ref: ref };

  if (Array.isArray(rest.enum) && rest.enum.length > 0 && rest.enum.every(isPrimitive))
    out.enum = take('enum');
  if (rest.const !== undefined && isPrimitive(rest.const)) out.const = take('const');
  const literal = 'enum' in out || 'const' in out;
  const type = take('type');
  take('$schema');
  const anyOf = take('anyOf');
  const oneOf = take('oneOf');
  const union = anyOf ?? oneOf;
  const allOf = take('allOf');
  if (Array.isArray(union)) out.anyOf = union.map(sub);
  else if (Array.isArray(allOf)) out.allOf = allOf.map(sub);
  if (!literal && type !== undefined) out.type = type;
  for (const key of ['description', 'title']) if (rest[key] !== undefined) out[key] = take(key);

  if (out.type === 'object') {
    const properties = take('properties');
    out.properties = isSchema(properties) ? mapValues(properties) : {};
    take('additionalProperties');
    out.additionalProperties = false;
    if (rest.required !== undefined) out.required = take('required');
  } else if (out.type === 'string') {
    if (typeof rest.format === 'string' && STRING_FORMATS.has(rest.format)) out.format = take('format');
  } else if (out.type === 'array') {
    const items = take('items');
    if (items !== undefined) out.items = sub(items);
    if (rest.minItems === 0 || rest.minItems === 1) out.minItems = take('minItems');
  }

  const unenforced = Object.entries(rest);
  if (unenforced.length > 0) {
    const note = `{${unenforced.map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join(', ')}}`;
    out.description = out.description ? `${out.description}\n\n${note}` : note;
  }
  return out;
}

/** A nested schema (a boolean schema, or anything not an object, is left as it is). */
const sub = (v: unknown): unknown => (isSchema(v) ? rewrite(v) : v);

const mapValues = (o: Schema): Schema => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, sub(v)]));
