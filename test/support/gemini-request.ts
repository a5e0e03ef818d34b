/**
 * What Gemini's `generateContent` refuses (400 INVALID_ARGUMENT) in a request, as Google's API
 * does: the mock upstream answers anything, so tests ask this whether a request would have got
 * through. Rules (Google's `Schema` reference and the errors the API returns):
 *
 * - a function's `parameters` is a `Schema`, a closed set of 22 fields (an OpenAPI 3.0 subset): any
 *   other key (`$schema`, `additionalProperties`, `exclusiveMinimum`, `propertyNames`, `const`,
 *   `oneOf`, `$ref`, …) → `Unknown name "…" … Cannot find field`;
 * - `type` one of Gemini's Type names; an ARRAY without `items` → `items: missing field`, `items` on
 *   another type → refused;
 * - `enum` values are strings; `required` names only declared properties;
 * - function names start with a letter or underscore, then letters, digits, `_ . : -`, at most 64
 *   characters;
 * - Google Search beside function declarations: refused (Gemini 2: "Tool use with function calling
 *   is unsupported"; Gemini 3 unless `toolConfig.includeServerSideToolInvocations`);
 * - `contents` alternate nothing but `user` and `model` roles, every part is one known kind, and a
 *   model turn's function calls are answered by as many function responses in the next user turn;
 * - `fileData` names its `fileUri`, and its `mimeType` unless the URI is a YouTube video (Gemini
 *   fetches those itself); `inlineData` has both `mimeType` and `data`.
 */

const SCHEMA_FIELDS = new Set([
  'type',
  'format',
  'title',
  'description',
  'nullable',
  'enum',
  'maxItems',
  'minItems',
  'properties',
  'required',
  'minProperties',
  'maxProperties',
  'minLength',
  'maxLength',
  'pattern',
  'example',
  'anyOf',
  'propertyOrdering',
  'default',
  'items',
  'minimum',
  'maximum',
]);

const TYPES = new Set(['STRING', 'NUMBER', 'INTEGER', 'BOOLEAN', 'ARRAY', 'OBJECT', 'NULL']);

const FUNCTION_NAME = /^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$/;

const PART_KINDS = [
  'text',
  'inlineData',
  'fileData',
  'functionCall',
  'functionResponse',
  'executableCode',
  'codeExecutionResult',
  // Gemini 3's server-side tool invocations (a search it ran), sent back as they came.
  'toolCall',
  'toolResponse',
];

/** Problems Gemini would report in one function's parameter schema, by path. */
export function geminiSchemaProblems(schema: unknown, at: string): string[] {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return [`${at}: not an object`];
  const s = schema as Record<string, unknown>;
  const out: string[] = [];
  for (const k of Object.keys(s)) if (!SCHEMA_FIELDS.has(k)) out.push(`${at}: unknown field ${k}`);
  if (s.type !== undefined && !TYPES.has(String(s.type))) out.push(`${at}.type: ${String(s.type)}`);
  if (s.type === 'ARRAY' && s.items === undefined) out.push(`${at}.items: missing field`);
  if (s.type !== undefined && s.type !== 'ARRAY' && s.items !== undefined)
    out.push(`${at}.items: field predicate failed: $type == Type.ARRAY`);
  if (s.enum !== undefined && !(Array.isArray(s.enum) && s.enum.every((v) => typeof v === 'string')))
    out.push(`${at}.enum: not a list of strings`);
  const props = (s.properties ?? {}) as Record<string, unknown>;
  for (const r of Array.isArray(s.required) ? s.required : [])
    if (!(String(r) in props)) out.push(`${at}.required: ${String(r)} is not a property`);
  for (const [k, v] of Object.entries(props)) out.push(...geminiSchemaProblems(v, `${at}.properties[${k}]`));
  if (s.items !== undefined) out.push(...geminiSchemaProblems(s.items, `${at}.items`));
  if (s.anyOf !== undefined) {
    if (!Array.isArray(s.anyOf)) out.push(`${at}.anyOf: not a list`);
    else for (const [i, x] of s.anyOf.entries()) out.push(...geminiSchemaProblems(x, `${at}.anyOf[${i}]`));
  }
  return out;
}

/** Problems Gemini would report in a GenerateContentRequest body (empty: it would be taken). */
export function geminiRequestProblems(body: any): string[] {
  const out: string[] = [];
  const contents: any[] = Array.isArray(body?.contents) ? body.contents : [];
  if (contents.length === 0) out.push('contents: empty');
  contents.forEach((c, i) => {
    if (c.role !== 'user' && c.role !== 'model') out.push(`contents[${i}].role: ${c.role}`);
    if (!Array.isArray(c.parts) || c.parts.length === 0) out.push(`contents[${i}].parts: empty`);
    for (const [j, p] of (c.parts ?? []).entries()) {
      const kinds = PART_KINDS.filter((k) => p[k] !== undefined);
      if (kinds.length !== 1) out.push(`contents[${i}].parts[${j}]: ${kinds.length} kinds of data`);
      const at = `contents[${i}].parts[${j}]`;
      if (p.fileData) {
        const uri = String(p.fileData.fileUri ?? '');
        if (!uri) out.push(`${at}.fileData.fileUri: missing`);
        const youtube = /^https:\/\/(www\.|m\.)?(youtube\.com|youtu\.be)\//.test(uri);
        if (!p.fileData.mimeType && !youtube) out.push(`${at}.fileData.mimeType: missing`);
      }
      if (p.inlineData && (!p.inlineData.mimeType || !p.inlineData.data))
        out.push(`${at}.inlineData: mimeType and data required`);
    }
    const calls = (c.parts ?? []).filter((p: any) => p.functionCall).length;
    if (c.role === 'model' && calls > 0) {
      const answers = (contents[i + 1]?.parts ?? []).filter((p: any) => p.functionResponse).length;
      if (answers !== calls) out.push(`contents[${i + 1}]: ${answers} function responses for ${calls} calls`);
    }
  });
  const tools: any[] = body?.tools ?? [];
  if (
    tools.some((t) => t.googleSearch !== undefined) &&
    tools.some((t) => t.functionDeclarations?.length) &&
    body?.toolConfig?.includeServerSideToolInvocations !== true
  )
    out.push('tools: Google Search beside function declarations');
  for (const [i, tool] of tools.entries()) {
    for (const [j, f] of (tool.functionDeclarations ?? []).entries()) {
      const at = `tools[${i}].functionDeclarations[${j}]`;
      if (!FUNCTION_NAME.test(String(f.name))) out.push(`${at}.name: invalid function name ${f.name}`);
      if (f.parameters !== undefined) out.push(...geminiSchemaProblems(f.parameters, `${at}.parameters`));
    }
  }
  return out;
}
