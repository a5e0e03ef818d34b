/**
 * Canonical chat ⇄ Gemini API (`generateContent`, `streamGenerateContent?alt=sse`,
 * `batchEmbedContents`).
 *
 * Request:
 * - `system`/`developer` messages → `systemInstruction`; roles user → `user`, assistant → `model`;
 *   consecutive same-role turns are merged (Gemini wants all function responses of a turn together).
 * - assistant `tool_calls` → `functionCall` parts (arguments parsed; invalid JSON → 400); `tool`
 *   messages → `functionResponse` parts in a user turn, named after the assistant tool call with the
 *   same id (the canonical tool message carries only the id); the result is the JSON object the
 *   tool returned, else `{result: <value or text>}`. A tool result's images and documents follow
 *   the turn's function responses as parts of the same user turn (`toolResultParts`).
 * - Assistant reasoning in history goes back through the message's `reasoning_details` of format
 *   `google-gemini-v1` (REASONING_FORMATS.google; fragments sharing an `index` merged first), on the
 *   model turn's parts as Gemini returned them: a signed `reasoning.text` → a leading
 *   `{text, thought: true, thoughtSignature}` part; a `reasoning.encrypted` whose `id` names one of
 *   the message's tool calls → `thoughtSignature` on that call's `functionCall` part (Gemini
 *   rejects a function-call continuation without it); a `reasoning.encrypted` without `id` →
 *   `thoughtSignature` on the turn's first text part (dropped when the turn has none). Unsigned
 *   thought text, entries of another format and a bare `reasoning` string are not sent (Gemini
 *   reads nothing from unsigned thoughts). Gemini 3 and later: a step of the current turn whose
 *   calls come back unsigned gets Google's stand-in signature (`SKIP_SIGNATURE`) on its first call.
 * - Images and documents: `data:` URLs → `inlineData`. The adapter fetches http(s) URLs first and
 *   sends their data inline (../remote-media.ts); a URL that still reaches this wire → `fileData`
 *   with a MIME type guessed from the extension (image/jpeg, or application/pdf for a document).
 * - tools → one `functionDeclarations` tool; JSON-Schema parameters are reduced to the OpenAPI
 *   subset Gemini accepts (`toGeminiSchema`); tool_choice → `toolConfig.functionCallingConfig`
 *   (auto → AUTO, required → ANY, none → NONE, named → ANY + allowedFunctionNames).
 * - generationConfig: max tokens → maxOutputTokens, temperature, top_p → topP, top_k → topK, stop →
 *   stopSequences, seed, penalties, response_format json_object/json_schema → responseMimeType
 *   `application/json` (+ responseSchema), reasoning → thinkingConfig {thinkingBudget,
 *   includeThoughts: !exclude} (budget table in `../reasoning.ts`).
 *
 * - `web_search` → a `googleSearch` tool (Grounding with Google Search; its settings have no field
 *   here and are dropped and listed). Beside function tools: with `serverSideTools` (Gemini 3 and
 *   later on the Gemini API) both go, with `toolConfig.includeServerSideToolInvocations`; elsewhere
 *   a search only offered as a Responses tool is left out and listed (Gemini 2 and Vertex AI refuse
 *   Google Search beside functions).
 * - Server-side tool parts (`toolCall`/`toolResponse`, the searches Gemini ran itself) an earlier
 *   answer carried in `reasoning_details` (see Response) go back on its model turn where they were:
 *   after as many characters of its text and function calls as preceded them. Without
 *   `serverSideTools` they are left out (Vertex AI and Gemini 2 know no such parts).
 *
 * Not sent (no per-request equivalent; reported as dropped, see HINT_RULES): cache breakpoints
 * (Gemini caches prompt prefixes implicitly; explicit caches are separate `cachedContents`
 * resources), OpenAI's cost hints, `user`, `parallel_tool_calls: false`.
 *
 * Response: candidates[0] parts: text → content, `thought: true` parts → reasoning,
 * functionCall → tool_calls (the part's `functionCall.id`, else a generated `call_…`). Thoughts and
 * thought signatures → `reasoning_details` (format `google-gemini-v1`, `index` 0, 1, … in part
 * order): a run of consecutive thought parts, closed by the one carrying a `thoughtSignature`,
 * → one `reasoning.text` {text, signature}; the `thoughtSignature` of a functionCall part →
 * `reasoning.encrypted` {data: signature, id: that tool call's id} (how the signature finds its
 * part again when the caller sends the message back); of a non-thought text part →
 * `reasoning.encrypted` {data: signature} without `id`. `reasoning.exclude` omits the thought text
 * (`reasoning` and the `reasoning.text` entries) but keeps the signatures: Gemini needs them back
 * to continue a tool loop. A server-side tool part (`toolCall`/`toolResponse`: a search Gemini
 * ran beside the caller's functions) is never a tool call: it → `reasoning.encrypted` whose data is
 * the JSON `{geminiServerPart, textBefore, callsBefore}` (the part as it came, signature included,
 * and how many characters of text and function calls preceded it): Gemini wants it back unchanged
 * in the next turn. Streams emit the same entries as fragments (a run's pieces share its `index`).
 * A grounded answer's `groundingMetadata` → `web_search_calls` (one per `webSearchQueries` entry,
 * the pages on the first) and `annotations` (one per cited chunk of each `groundingSupports` entry;
 * byte offsets converted), in a stream on a chunk before the finish; each query counts as one
 * `server_tool_use.web_search_requests`.
 * Finish: finishReason STOP → stop (tool_calls when the model called functions), MAX_TOKENS →
 * length, SAFETY/RECITATION/PROHIBITED_CONTENT/BLOCKLIST/SPII/IMAGE_SAFETY → content_filter,
 * MALFORMED_FUNCTION_CALL → error; a prompt blocked before any candidate → content_filter. Usage: prompt = promptTokenCount (+ toolUsePromptTokenCount;
 * it already includes cached tokens), completion = candidatesTokenCount + thoughtsTokenCount.
 */
import { randomUUID } from 'node:crypto';
import { geminiDropsSearch } from '../../formats/capabilities.js';
import {
  type ChatChunk,
  type ChatMessage,
  type ChatRequest,
  type ChatResponse,
  type ContentPart,
  type EmbeddingsRequest,
  type EmbeddingsResponse,
  type FileInput,
  type FinishReason,
  REASONING_FORMATS,
  type ReasoningDetail,
  type ToolCall,
  TranslationError,
  type UrlCitation,
  type Usage,
  type WebSearchCall,
} from '../../formats/chat.js';
import { collapseReasoningDetails, detailsOfFormat } from '../../formats/reasoning-details.js';
import { fileSource, isHttpUrl, parseDataUrl, systemText, textOf, toolArgumentsObject } from '../content.js';
import { reasoningBudget } from '../reasoning.js';
import { attachedNote, attachmentIntro, splitToolResult } from '../tool-media.js';
import { UpstreamError } from '../types.js';
import { geminiStreamError } from './errors.js';

type Obj = Record<string, unknown>;
const obj = (x: unknown): Obj => (x && typeof x === 'object' ? (x as Obj) : {});
const num = (x: unknown): number => (typeof x === 'number' && Number.isFinite(x) ? x : 0);

type Part = Record<string, unknown>;
interface Content {
  role: 'user' | 'model';
  parts: Part[];
}

/** `models/gemini-x` or `gemini-x` → `gemini-x`. */
export const geminiModelId = (model: string): string => model.replace(/^models\//, '');

export const newToolCallId = (): string => `call_${randomUUID().replace(/-/g, '').slice(0, 24)}`;

const MIME_BY_EXT: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  heic: 'image/heic',
  heif: 'image/heif',
  pdf: 'application/pdf',
};

/** A URL as Gemini's file data, its MIME type guessed from the extension (else `fallback`). */
function fileDataPart(url: string, fallback: string): Part {
  const ext = /\.([a-z0-9]+)(?:[?#]|$)/i.exec(new URL(url).pathname)?.[1]?.toLowerCase() ?? '';
  return { fileData: { mimeType: MIME_BY_EXT[ext] ?? fallback, fileUri: url } };
}

function imagePart(url: string): Part {
  const data = parseDataUrl(url);
  if (data) return { inlineData: { mimeType: data.mediaType, data: data.data } };
  if (isHttpUrl(url)) return fileDataPart(url, 'image/jpeg');
  throw new TranslationError('image_url must be a data: URL or an http(s) URL');
}

/** A file part as Gemini's inline data (PDFs and text files alike) or, at a URL, its file data. */
function filePart(file: FileInput): Part {
  const src = fileSource(file);
  if (src.kind === 'data') return { inlineData: { mimeType: src.mediaType, data: src.data } };
  if (src.kind === 'url') return fileDataPart(src.url, 'application/pdf');
  throw new TranslationError("file ids belong to the provider that issued them: send the file's data");
}

/** A video's media type by its URL's extension, as Gemini names them. */
const VIDEO_MIME_BY_EXT: Record<string, string> = {
  mp4: 'video/mp4',
  mpeg: 'video/mpeg',
  mpg: 'video/mpg',
  mov: 'video/mov',
  avi: 'video/avi',
  flv: 'video/x-flv',
  webm: 'video/webm',
  wmv: 'video/wmv',
  '3gp': 'video/3gpp',
  '3gpp': 'video/3gpp',
};

const YOUTUBE_HOST = /^(www\.|m\.)?(youtube\.com|youtu\.be)$/i;

/**
 * A video part as Gemini's inline data (a `data:` URL) or file data at its URL. A YouTube link goes
 * as it is (Gemini fetches it; no media type); any other file needs its media type, guessed from the
 * extension (MP4 otherwise).
 */
function videoPart(url: string): Part {
  const data = parseDataUrl(url);
  if (data) return { inlineData: { mimeType: data.mediaType, data: data.data } };
  if (!isHttpUrl(url)) throw new TranslationError('video_url must be a data: URL or an http(s) URL');
  const { hostname, pathname } = new URL(url);
  if (YOUTUBE_HOST.test(hostname)) return { fileData: { fileUri: url } };
  const ext = /\.([a-z0-9]+)$/i.exec(pathname)?.[1]?.toLowerCase() ?? '';
  return { fileData: { mimeType: VIDEO_MIME_BY_EXT[ext] ?? 'video/mp4', fileUri: url } };
}

/** An audio part's format (`wav`, `mp3`, …) as the media type Gemini reads. */
const audioMime = (format: string): string =>
  format.includes('/') ? format : `audio/${format.toLowerCase()}`;

function contentParts(content: ChatMessage['content']): Part[] {
  if (content == null) return [];
  if (typeof content === 'string') return content ? [{ text: content }] : [];
  return content.flatMap((p: ContentPart): Part[] => {
    if (p.type === 'text') return p.text ? [{ text: p.text }] : [];
    if (p.type === 'image_url') return [imagePart(p.image_url.url)];
    if (p.type === 'file') return [filePart(p.file)];
    if (p.type === 'input_audio')
      return [{ inlineData: { mimeType: audioMime(p.input_audio.format), data: p.input_audio.data } }];
    if (p.type === 'video_url') return [videoPart(p.video_url.url)];
    throw new TranslationError(`unsupported content part type: ${(p as { type: string }).type}`);
  });
}

function functionCallPart(tc: ToolCall): Part {
  const args = toolArgumentsObject(tc);
  return { functionCall: { name: tc.function.name, args } };
}

/** A functionResponse: the JSON object the tool returned, else `{result: <value or text>}`. */
function functionResponsePart(name: string, text: string): Part {
  let value: unknown = text;
  try {
    value = JSON.parse(text);
  } catch {}
  const response = value && typeof value === 'object' && !Array.isArray(value) ? value : { result: value };
  return { functionResponse: { name, response } };
}

/**
 * The parts Gatehouse adds to a user turn for a tool result's media (toolResultParts): they do not
 * make that turn a user message (signCurrentTurn).
 */
const toolResultMedia = new WeakSet<Part>();

/**
 * A tool message → its `functionResponse` part, and the parts for its media. A functionResponse
 * carries JSON only (its `parts` field, for media, exists on Gemini 3 alone), so the media go as
 * inlineData/fileData parts in the same user turn after the turn's function responses (Gemini
 * takes mixed parts in a user content on every model), introduced by a line naming the call; the
 * response says `(image attached below)` when the result had no text.
 */
function toolResultParts(m: ChatMessage, names: Map<string, string>): { response: Part; media: Part[] } {
  const name = (m.tool_call_id && names.get(m.tool_call_id)) || m.name;
  if (!name) {
    throw new TranslationError(`tool message ${m.tool_call_id ?? ''} answers no earlier assistant tool call`);
  }
  const value = textOf(m.content);
  const media = Array.isArray(m.content) ? splitToolResult(m.content).media : [];
  if (!media.length) return { response: functionResponsePart(name, value), media: [] };
  const parts = [{ text: attachmentIntro(m.tool_call_id, name) }, ...contentParts(media)];
  for (const p of parts) toolResultMedia.add(p);
  return {
    response: functionResponsePart(name, value.trim() ? value : attachedNote(media)),
    media: parts,
  };
}

const FORMAT = REASONING_FORMATS.google;

/**
 * A server-side tool part of an answer (SERVER_PART_KEY in a `reasoning.encrypted` entry's data):
 * the part as Gemini sent it, and where it stood — after `textBefore` characters of the answer's
 * text and `callsBefore` of its function calls.
 */
interface ServerPart {
  part: Part;
  textBefore: number;
  callsBefore: number;
}

const SERVER_PART_KEY = 'geminiServerPart';

/** Gemini's record of a tool it ran itself (Google Search beside functions, Gemini 3). */
const isServerPart = (p: Obj): boolean => p.toolCall !== undefined || p.toolResponse !== undefined;

const encodeServerPart = (sp: ServerPart): string =>
  JSON.stringify({ [SERVER_PART_KEY]: sp.part, textBefore: sp.textBefore, callsBefore: sp.callsBefore });

/**
 * A `reasoning.encrypted` entry's data as a server part; `signature` for a thought signature
 * (base64, never `{`); null for JSON that is not a server part (sent nowhere).
 */
function decodeServerPart(data: string): ServerPart | 'signature' | null {
  if (!data.startsWith('{')) return 'signature';
  try {
    const v = obj(JSON.parse(data));
    const part = obj(v[SERVER_PART_KEY]);
    return isServerPart(part)
      ? { part, textBefore: num(v.textBefore), callsBefore: num(v.callsBefore) }
      : null;
  } catch {
    return null;
  }
}

/**
 * The turn's text (and media) parts and function calls with its server parts put back where they
 * stood: a text part is split where a server part came between its characters.
 */
function withServerParts(body: Part[], calls: Part[], server: ServerPart[]): Part[] {
  const out: Part[] = [];
  let next = 0;
  let chars = 0;
  const placeDue = (due: (sp: ServerPart) => boolean) => {
    while (next < server.length && due(server[next] as ServerPart))
      out.push((server[next++] as ServerPart).part);
  };
  const beforeText = (sp: ServerPart) => sp.callsBefore === 0 && sp.textBefore <= chars;
  for (const part of body) {
    let piece = part;
    placeDue(beforeText);
    while (typeof piece.text === 'string') {
      const sp = server[next];
      const cut = sp && sp.callsBefore === 0 ? sp.textBefore - chars : Number.POSITIVE_INFINITY;
      if (cut >= piece.text.length) break;
      out.push({ ...piece, text: piece.text.slice(0, cut) });
      piece = { text: piece.text.slice(cut) }; // the signature stays on the first piece
      chars += cut;
      placeDue(beforeText);
    }
    out.push(piece);
    if (typeof piece.text === 'string') chars += piece.text.length;
  }
  calls.forEach((call, k) => {
    placeDue((sp) => sp.callsBefore <= k);
    out.push(call);
  });
  placeDue(() => true);
  return out;
}

/**
 * An assistant message's parts, with its Gemini reasoning_details put back where they came from;
 * server parts only where `serverSideTools` (elsewhere Gemini knows no such part).
 */
function modelParts(m: ChatMessage, serverSideTools: boolean): Part[] {
  const details = detailsOfFormat(m.reasoning_details, FORMAT);
  const thoughts: Part[] = [];
  const loose: string[] = [];
  const byCall = new Map<string, string>();
  const server: ServerPart[] = [];
  for (const d of details) {
    if (d.type === 'reasoning.text' && typeof d.signature === 'string' && d.signature) {
      thoughts.push({ text: d.text, thought: true, thoughtSignature: d.signature });
    } else if (d.type === 'reasoning.encrypted' && d.data) {
      const decoded = decodeServerPart(d.data);
      if (decoded !== 'signature') {
        if (decoded && serverSideTools) server.push(decoded);
      } else if (d.id === undefined) loose.push(d.data);
      else if (!byCall.has(d.id)) byCall.set(d.id, d.data);
    }
  }
  const text = contentParts(m.content);
  const firstText = text.find((p) => typeof p.text === 'string');
  if (firstText && loose[0] !== undefined) firstText.thoughtSignature = loose[0];
  const calls = (m.tool_calls ?? []).map((tc) => {
    const part = functionCallPart(tc);
    const signature = byCall.get(tc.id);
    if (signature !== undefined) part.thoughtSignature = signature;
    return part;
  });
  // nothing for the thoughts to precede
  if (text.length === 0 && calls.length === 0 && server.length === 0) return [];
  return [...thoughts, ...withServerParts(text, calls, server)];
}

/**
 * Canonical messages → Gemini `systemInstruction` + `contents`; `serverSideTools`: the model takes
 * server-side tool parts back (Gemini 3 and later on the Gemini API).
 */
export function toGeminiContents(
  messages: ChatMessage[],
  serverSideTools = false,
): {
  systemInstruction?: { parts: Part[] };
  contents: Content[];
} {
  const system: string[] = [];
  const contents: Content[] = [];
  const names = new Map<string, string>();
  const push = (role: Content['role'], parts: Part[]) => {
    if (!parts.length) return;
    const last = contents[contents.length - 1];
    if (last && last.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  // Tool results' media wait for the end of the run of tool messages (after every functionResponse).
  let media: Part[] = [];
  for (const m of messages) {
    if (m.role !== 'tool') {
      push('user', media);
      media = [];
    }
    switch (m.role) {
      case 'system':
      case 'developer': {
        const t = systemText(m);
        if (t) system.push(t);
        break;
      }
      case 'user':
        push('user', contentParts(m.content));
        break;
      case 'assistant':
        for (const tc of m.tool_calls ?? []) names.set(tc.id, tc.function.name);
        push('model', modelParts(m, serverSideTools));
        break;
      case 'tool': {
        const result = toolResultParts(m, names);
        push('user', [result.response]);
        media.push(...result.media);
        break;
      }
      default:
        throw new TranslationError(`unsupported message role: ${(m as { role: string }).role}`);
    }
  }
  push('user', media);
  return {
    ...(system.length ? { systemInstruction: { parts: [{ text: system.join('\n\n') }] } } : {}),
    contents,
  };
}

/**
 * Google's documented stand-in signature for function calls Gemini did not sign in this
 * conversation (history from another model, or from a client that does not carry signatures back:
 * a chat client that drops `reasoning_details`, a `/responses` client that drops the reasoning
 * items' `encrypted_content`).
 */
export const SKIP_SIGNATURE = 'skip_thought_signature_validator';

/** The Gemini generation of a model id (`gemini-3-pro-preview` → 3); 0 when it names none. */
export function geminiGeneration(model: string): number {
  const major = /(?:^|\/)gemini-(\d+)/i.exec(model)?.[1];
  return major === undefined ? 0 : Number(major);
}

/** Gemini 3 and later refuse (400) a function call of the current turn without its signature. */
const enforcesSignatures = (model: string): boolean => geminiGeneration(model) >= 3;

/**
 * The current turn (the model's steps since the last user message that is not only tool results):
 * a step whose function calls carry no signature gets the stand-in on its first call, where Gemini
 * puts its own. Earlier turns are not validated and are left as they are.
 */
function signCurrentTurn(contents: Content[]): void {
  const isUserMessage = (c: Content) =>
    c.role === 'user' && c.parts.some((p) => !p.functionResponse && !toolResultMedia.has(p));
  let start = 0;
  for (let i = contents.length - 1; i >= 0; i--) {
    if (isUserMessage(contents[i] as Content)) {
      start = i + 1;
      break;
    }
  }
  for (const c of contents.slice(start)) {
    if (c.role !== 'model') continue;
    const calls = c.parts.filter((p) => p.functionCall);
    if (calls.length > 0 && !calls.some((p) => p.thoughtSignature))
      (calls[0] as Part).thoughtSignature = SKIP_SIGNATURE;
  }
}

const SCHEMA_KEYS = new Set([
  'format',
  'title',
  'description',
  'nullable',
  'enum',
  'maxItems',
  'minItems',
  'required',
  'minProperties',
  'maxProperties',
  'minLength',
  'maxLength',
  'pattern',
  'example',
  'propertyOrdering',
  'default',
  'minimum',
  'maximum',
]);

/**
 * JSON Schema → the OpenAPI-3 subset Gemini's `Schema` accepts: known keys kept, `type` upper-cased,
 * `type: [x, 'null']` → `type: X, nullable: true`, `const` → `enum`, `oneOf` → `anyOf`; others
 * (`$schema`, `additionalProperties`, `exclusiveMinimum`, `propertyNames`, `$ref`…) dropped.
 * Gemini refuses what JSON Schema allows here too: an `enum` (or `const`) of anything but strings
 * (left out: the description still says what the values are), `required` names with no
 * property (left out), an array without `items` (given `items: {}`) and `items` on another type
 * (left out).
 */
export function toGeminiSchema(schema: unknown): Obj {
  const s = obj(schema);
  const out: Obj = {};
  for (const [k, v] of Object.entries(s)) if (SCHEMA_KEYS.has(k)) out[k] = v;
  let type = s.type;
  if (Array.isArray(type)) {
    const nonNull = type.filter((t) => t !== 'null');
    if (nonNull.length < type.length) out.nullable = true;
    type = nonNull[0];
  }
  if (typeof type === 'string') out.type = type.toUpperCase();
  if (s.const !== undefined) out.enum = [s.const];
  if (out.enum !== undefined && !(Array.isArray(out.enum) && out.enum.every((v) => typeof v === 'string')))
    delete out.enum;
  const properties = s.properties && typeof s.properties === 'object' ? (s.properties as Obj) : {};
  if (s.properties && typeof s.properties === 'object') {
    out.properties = Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, toGeminiSchema(v)]));
  }
  if (out.required !== undefined) {
    const required = Array.isArray(out.required)
      ? out.required.filter((r) => typeof r === 'string' && Object.hasOwn(properties, r))
      : [];
    if (required.length) out.required = required;
    else delete out.required;
  }
  if (s.items && typeof s.items === 'object' && !Array.isArray(s.items)) out.items = toGeminiSchema(s.items);
  // Gemini wants `items` on every array (`{}`: any element, as JSON Schema's bare array means) and
  // on nothing else, nor the array bounds.
  if (out.type === 'ARRAY') out.items ??= {};
  else if (out.type !== undefined) {
    delete out.items;
    delete out.minItems;
    delete out.maxItems;
  }
  const anyOf = s.anyOf ?? s.oneOf;
  if (Array.isArray(anyOf)) out.anyOf = anyOf.map(toGeminiSchema);
  return out;
}

function toolConfig(req: ChatRequest): Obj | undefined {
  const tc = req.tool_choice;
  if (tc === undefined) return undefined;
  if (tc === 'auto') return { functionCallingConfig: { mode: 'AUTO' } };
  if (tc === 'required') return { functionCallingConfig: { mode: 'ANY' } };
  if (tc === 'none') return { functionCallingConfig: { mode: 'NONE' } };
  return { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [tc.function.name] } };
}

export interface GeminiRequestOptions {
  /**
   * The provider runs Google Search beside function declarations for this model, its server-side
   * tool invocations exposed (Gemini 3 and later on the Gemini API; not Vertex AI).
   */
  serverSideTools?: boolean;
}

/** The Gemini GenerateContentRequest body for a canonical request. */
export function toGeminiRequest(req: ChatRequest, opts: GeminiRequestOptions = {}): Record<string, unknown> {
  const serverSideTools = opts.serverSideTools === true;
  const body: Record<string, unknown> = { ...toGeminiContents(req.messages, serverSideTools) };
  if (enforcesSignatures(req.model)) signCurrentTurn(body.contents as Content[]);
  if (req.tools?.length) {
    body.tools = [
      {
        functionDeclarations: req.tools.map((t) => ({
          name: t.function.name,
          ...(t.function.description !== undefined ? { description: t.function.description } : {}),
          ...(t.function.parameters ? { parameters: toGeminiSchema(t.function.parameters) } : {}),
        })),
      },
    ];
  }
  // Gemini's own search; none of the canonical search settings has a field here (HINT_RULES). One
  // only offered beside functions is left out unless the model runs the two together.
  const search = Boolean(req.web_search) && (serverSideTools || !geminiDropsSearch(req));
  if (search) body.tools = [...((body.tools as Obj[]) ?? []), { googleSearch: {} }];
  const tc = toolConfig(req);
  if (tc) body.toolConfig = tc;
  // Gemini 3 takes the two together only when its searches come back as parts of the answer.
  if (search && serverSideTools && req.tools?.length)
    body.toolConfig = { ...tc, includeServerSideToolInvocations: true };

  const gen: Obj = {};
  const max = req.max_completion_tokens ?? req.max_tokens;
  if (max !== undefined) gen.maxOutputTokens = max;
  if (req.temperature !== undefined) gen.temperature = req.temperature;
  if (req.top_p !== undefined) gen.topP = req.top_p;
  if (req.top_k !== undefined) gen.topK = req.top_k;
  if (req.stop !== undefined) gen.stopSequences = Array.isArray(req.stop) ? req.stop : [req.stop];
  if (req.seed !== undefined) gen.seed = req.seed;
  if (req.presence_penalty !== undefined) gen.presencePenalty = req.presence_penalty;
  if (req.frequency_penalty !== undefined) gen.frequencyPenalty = req.frequency_penalty;
  const rf = req.response_format;
  if (rf?.type === 'json_object' || rf?.type === 'json_schema') gen.responseMimeType = 'application/json';
  if (rf?.type === 'json_schema' && rf.json_schema.schema)
    gen.responseSchema = toGeminiSchema(rf.json_schema.schema);
  const budget = reasoningBudget(req.reasoning);
  if (budget !== undefined) {
    gen.thinkingConfig = { thinkingBudget: budget, includeThoughts: req.reasoning?.exclude !== true };
  }
  if (Object.keys(gen).length) body.generationConfig = gen;
  return body;
}

// ---------------------------------------------------------------------------------------------
// Responses

const FINISH: Record<string, FinishReason> = {
  STOP: 'stop',
  MAX_TOKENS: 'length',
  SAFETY: 'content_filter',
  RECITATION: 'content_filter',
  PROHIBITED_CONTENT: 'content_filter',
  BLOCKLIST: 'content_filter',
  SPII: 'content_filter',
  IMAGE_SAFETY: 'content_filter',
  MALFORMED_FUNCTION_CALL: 'error',
};

export function mapGeminiFinish(reason: string, calledFunctions: boolean): FinishReason {
  const f = FINISH[reason] ?? 'stop';
  return f === 'stop' && calledFunctions ? 'tool_calls' : f;
}

/** usageMetadata → canonical usage. */
export function mapGeminiUsage(raw: unknown): Usage {
  const u = obj(raw);
  const prompt = num(u.promptTokenCount) + num(u.toolUsePromptTokenCount);
  const thoughts = num(u.thoughtsTokenCount);
  const completion = num(u.candidatesTokenCount) + thoughts;
  const usage: Usage = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
  };
  if (u.cachedContentTokenCount !== undefined) {
    usage.prompt_tokens_details = { cached_tokens: num(u.cachedContentTokenCount) };
  }
  if (u.thoughtsTokenCount !== undefined) usage.completion_tokens_details = { reasoning_tokens: thoughts };
  return usage;
}

/**
 * Numbers a response's reasoning_details (one per response, or per stream: runs continue across
 * stream events). A run of thought parts shares one entry until a part with a signature closes it.
 */
class GeminiReasoning {
  private next = 0;
  private run: number | null = null;
  /** The answer so far: characters of its text and function calls (where a server part stood). */
  textChars = 0;
  calls = 0;

  /** `excludeThoughts` (`reasoning.exclude`): thought parts give no entries. */
  constructor(private readonly excludeThoughts = false) {}

  thought(text: string, signature: string | undefined): ReasoningDetail | undefined {
    if (this.excludeThoughts) return undefined;
    if (this.run === null) this.run = this.next++;
    const d: ReasoningDetail = { type: 'reasoning.text', text, format: FORMAT, index: this.run };
    if (signature) {
      d.signature = signature;
      this.run = null;
    }
    return d;
  }

  /** A non-thought part: ends the current run; its signature (if any) is an entry of its own. */
  part(signature: string | undefined, id?: string): ReasoningDetail | undefined {
    this.run = null;
    if (!signature) return undefined;
    const d: ReasoningDetail = {
      type: 'reasoning.encrypted',
      data: signature,
      format: FORMAT,
      index: this.next++,
    };
    if (id !== undefined) d.id = id;
    return d;
  }

  /** A server-side tool part: ends the current run; the whole part is an entry of its own. */
  server(part: Part): ReasoningDetail {
    this.run = null;
    const data = encodeServerPart({ part, textBefore: this.textChars, callsBefore: this.calls });
    return { type: 'reasoning.encrypted', data, format: FORMAT, index: this.next++ };
  }
}

interface PartsOut {
  text: string[];
  thoughts: string[];
  calls: { call: ToolCall; detail?: ReasoningDetail }[];
  /** reasoning.text fragments of the thought parts */
  thoughtDetails: ReasoningDetail[];
  /** signatures of non-thought text parts */
  textDetails: ReasoningDetail[];
  /** server-side tool parts (never tool calls of the caller's) */
  serverDetails: ReasoningDetail[];
}

const signatureOf = (p: Obj): string | undefined =>
  typeof p.thoughtSignature === 'string' && p.thoughtSignature ? p.thoughtSignature : undefined;

function readParts(candidate: Obj, reasoning: GeminiReasoning): PartsOut {
  const out: PartsOut = {
    text: [],
    thoughts: [],
    calls: [],
    thoughtDetails: [],
    textDetails: [],
    serverDetails: [],
  };
  const parts = Array.isArray(obj(candidate.content).parts)
    ? (obj(candidate.content).parts as unknown[])
    : [];
  for (const raw of parts) {
    const p = obj(raw);
    if (p.thought === true) {
      const text = typeof p.text === 'string' ? p.text : '';
      if (text) out.thoughts.push(text);
      const detail = reasoning.thought(text, signatureOf(p));
      if (detail) out.thoughtDetails.push(detail);
    } else if (p.functionCall) {
      const fc = obj(p.functionCall);
      const call: ToolCall = {
        id: typeof fc.id === 'string' && fc.id ? fc.id : newToolCallId(),
        type: 'function',
        function: { name: String(fc.name ?? ''), arguments: JSON.stringify(fc.args ?? {}) },
      };
      const detail = reasoning.part(signatureOf(p), call.id);
      out.calls.push(detail ? { call, detail } : { call });
      reasoning.calls++;
    } else if (isServerPart(p)) {
      out.serverDetails.push(reasoning.server(p));
    } else {
      if (typeof p.text === 'string') {
        out.text.push(p.text);
        reasoning.textChars += p.text.length;
      }
      const detail = reasoning.part(signatureOf(p));
      if (detail) out.textDetails.push(detail);
    }
  }
  return out;
}

/** UTF-8 byte offset `bytes` of `text` as a string index (Gemini's grounding offsets are bytes). */
function charIndex(text: string, bytes: number): number {
  let seen = 0;
  let i = 0;
  while (i < text.length && seen < bytes) {
    const cp = text.codePointAt(i) as number;
    seen += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    i += cp >= 0x10000 ? 2 : 1;
  }
  return i;
}

/**
 * A candidate's `groundingMetadata` (Grounding with Google Search): `webSearchQueries` → one search
 * each (the pages, `groundingChunks[].web` {uri, title}, on the first), each `groundingSupports`
 * entry → an annotation per chunk it cites, spanning its `segment` (UTF-8 byte offsets into the
 * answer's text, converted to string offsets of `text`).
 */
export function mapGrounding(
  raw: unknown,
  text: string,
): { calls: WebSearchCall[]; annotations: UrlCitation[] } | null {
  const g = obj(raw);
  const queries = Array.isArray(g.webSearchQueries)
    ? g.webSearchQueries.filter((q): q is string => typeof q === 'string')
    : [];
  const chunks = (Array.isArray(g.groundingChunks) ? g.groundingChunks : []).map((c) => obj(obj(c).web));
  if (queries.length === 0 && chunks.length === 0) return null;
  const sources = chunks.flatMap((w) =>
    typeof w.uri === 'string'
      ? [{ url: w.uri, ...(typeof w.title === 'string' ? { title: w.title } : {}) }]
      : [],
  );
  const calls: WebSearchCall[] = (queries.length ? queries : [undefined]).map((query, i) => ({
    id: `ws_${i}`,
    ...(query !== undefined ? { query } : {}),
    sources: i === 0 ? sources : [],
  }));
  const annotations: UrlCitation[] = [];
  for (const raw of Array.isArray(g.groundingSupports) ? g.groundingSupports : []) {
    const support = obj(raw);
    const seg = obj(support.segment);
    const start = charIndex(text, num(seg.startIndex));
    const end = charIndex(text, num(seg.endIndex));
    for (const ci of Array.isArray(support.groundingChunkIndices) ? support.groundingChunkIndices : []) {
      const w = chunks[num(ci)];
      if (!w || typeof w.uri !== 'string') continue;
      annotations.push({
        type: 'url_citation',
        url_citation: {
          url: w.uri,
          title: typeof w.title === 'string' ? w.title : w.uri,
          ...(typeof seg.text === 'string' ? { content: seg.text } : {}),
          start_index: start,
          end_index: end,
        },
      });
    }
  }
  return { calls, annotations };
}

/** The searches a grounded answer ran, billed per query (as Anthropic's per search). */
function withSearches(usage: Usage, grounding: { calls: WebSearchCall[] } | null): Usage {
  const n = grounding?.calls.filter((c) => c.query !== undefined).length ?? 0;
  return n ? { ...usage, server_tool_use: { web_search_requests: n } } : usage;
}

export interface GeminiMapOptions {
  excludeReasoning?: boolean;
}

/** GenerateContentResponse → canonical ChatResponse. */
export function fromGeminiResponse(
  raw: unknown,
  requestedModel: string,
  opts: GeminiMapOptions = {},
): ChatResponse {
  const r = obj(raw);
  const candidate = obj(Array.isArray(r.candidates) ? r.candidates[0] : undefined);
  const parts = readParts(candidate, new GeminiReasoning(opts.excludeReasoning));
  const { text, thoughts } = parts;
  const calls = parts.calls.map((c) => c.call);
  const blocked = obj(r.promptFeedback).blockReason;
  const finishRaw = typeof candidate.finishReason === 'string' ? candidate.finishReason : null;
  const native = finishRaw ?? (typeof blocked === 'string' ? blocked : null);
  const finish: FinishReason | null =
    finishRaw !== null
      ? mapGeminiFinish(finishRaw, calls.length > 0)
      : native !== null
        ? 'content_filter'
        : null;
  const message: ChatResponse['choices'][number]['message'] = {
    role: 'assistant',
    content: text.length ? text.join('') : calls.length ? null : '',
  };
  if (thoughts.length && !opts.excludeReasoning) message.reasoning = thoughts.join('');
  const details = collapseReasoningDetails([
    ...parts.thoughtDetails,
    ...parts.textDetails,
    ...parts.serverDetails,
    ...parts.calls.flatMap((c) => (c.detail ? [c.detail] : [])),
  ]).sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
  if (details.length) message.reasoning_details = details;
  if (calls.length) message.tool_calls = calls;
  const grounding = mapGrounding(candidate.groundingMetadata, text.join(''));
  if (grounding) {
    message.web_search_calls = grounding.calls;
    if (grounding.annotations.length) message.annotations = grounding.annotations;
  }
  return {
    id: typeof r.responseId === 'string' ? r.responseId : `gen-${randomUUID()}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: typeof r.modelVersion === 'string' && r.modelVersion ? r.modelVersion : requestedModel,
    choices: [{ index: 0, message, finish_reason: finish, native_finish_reason: native, logprobs: null }],
    usage: withSearches(mapGeminiUsage(r.usageMetadata), grounding),
  };
}

/**
 * Streamed GenerateContentResponses → canonical chunks. Each event's parts become deltas (a
 * functionCall arrives whole: one chunk with id, name and the full arguments). Gemini has no end
 * marker, so `finish()` emits the finish chunk and the usage chunk (from the last usageMetadata)
 * once the body ended, and throws UpstreamError(502) if no finishReason ever came (cut off).
 */
export class GeminiStreamMapper {
  private id = '';
  private model: string;
  private readonly created = Math.floor(Date.now() / 1000);
  private usage: unknown;
  private finishReason: string | null = null;
  private blockReason: string | null = null;
  private tools = 0;
  private started = false;
  /** The answer's text so far and its latest groundingMetadata (mapped once, at the end). */
  private text = '';
  private grounding: unknown;
  private readonly reasoning: GeminiReasoning;

  constructor(
    requestedModel: string,
    private readonly opts: GeminiMapOptions = {},
    private readonly secrets: (string | null)[] = [],
  ) {
    this.model = requestedModel;
    this.reasoning = new GeminiReasoning(opts.excludeReasoning);
  }

  private chunk(delta: ChatChunk['choices'][number]['delta']): ChatChunk {
    return {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      choices: [{ index: 0, delta, finish_reason: null }],
    };
  }

  push(raw: unknown): ChatChunk[] {
    const r = obj(raw);
    if (r.error) throw geminiStreamError(raw, this.secrets);
    if (!this.id) this.id = typeof r.responseId === 'string' ? r.responseId : `gen-${randomUUID()}`;
    if (typeof r.modelVersion === 'string' && r.modelVersion) this.model = r.modelVersion;
    if (r.usageMetadata) this.usage = r.usageMetadata;
    const blocked = obj(r.promptFeedback).blockReason;
    if (typeof blocked === 'string') this.blockReason = blocked;
    const out: ChatChunk[] = [];
    if (!this.started) {
      this.started = true;
      const start = this.chunk({ role: 'assistant', content: '' });
      // Gemini counts the prompt in its first event already: known before any output.
      if (typeof obj(r.usageMetadata).promptTokenCount === 'number') {
        const { prompt_tokens, prompt_tokens_details } = mapGeminiUsage(r.usageMetadata);
        start.prompt_usage = { prompt_tokens, prompt_tokens_details };
      }
      out.push(start);
    }
    const candidate = obj(Array.isArray(r.candidates) ? r.candidates[0] : undefined);
    const { text, thoughts, calls, thoughtDetails, textDetails, serverDetails } = readParts(
      candidate,
      this.reasoning,
    );
    if (thoughtDetails.length && !this.opts.excludeReasoning) {
      const reasoning = thoughts.join('');
      out.push(
        this.chunk(
          reasoning
            ? { reasoning, reasoning_details: thoughtDetails }
            : { reasoning_details: thoughtDetails },
        ),
      );
    }
    // Searches Gemini ran: state to send back (their results show in the grounding at the end).
    if (serverDetails.length) out.push(this.chunk({ reasoning_details: serverDetails }));
    const content = text.join('');
    this.text += content;
    if (candidate.groundingMetadata) this.grounding = candidate.groundingMetadata;
    if (content || textDetails.length) {
      const delta: ChatChunk['choices'][number]['delta'] = {};
      if (content) delta.content = content;
      if (textDetails.length) delta.reasoning_details = textDetails;
      out.push(this.chunk(delta));
    }
    for (const { call: c, detail } of calls) {
      out.push(
        this.chunk({
          tool_calls: [{ index: this.tools++, id: c.id, type: 'function', function: { ...c.function } }],
          ...(detail ? { reasoning_details: [detail] } : {}),
        }),
      );
    }
    if (typeof candidate.finishReason === 'string') this.finishReason = candidate.finishReason;
    return out;
  }

  finish(): ChatChunk[] {
    const native = this.finishReason ?? this.blockReason;
    if (native === null) {
      throw new UpstreamError(502, 'upstream stream ended without a finish reason', { retryable: true });
    }
    const finish =
      this.finishReason === null ? ('content_filter' as const) : mapGeminiFinish(native, this.tools > 0);
    const out: ChatChunk[] = [];
    if (!this.started) out.push(this.chunk({ role: 'assistant', content: '' }));
    const grounding = mapGrounding(this.grounding, this.text);
    if (grounding) {
      const { calls, annotations } = grounding;
      out.push(this.chunk({ web_search_calls: calls, ...(annotations.length ? { annotations } : {}) }));
    }
    out.push({
      ...this.chunk({}),
      choices: [{ index: 0, delta: {}, finish_reason: finish, native_finish_reason: native }],
    });
    out.push({
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      choices: [],
      usage: withSearches(mapGeminiUsage(this.usage), grounding),
    });
    return out;
  }
}

// ---------------------------------------------------------------------------------------------
// Embeddings

/**
 * Canonical embeddings → `batchEmbedContents`. Token-id inputs cannot be expressed (400).
 */
export function toGeminiEmbeddingsRequest(req: EmbeddingsRequest): { requests: Obj[]; texts: string[] } {
  const inputs = typeof req.input === 'string' ? [req.input] : req.input;
  if (inputs.some((x) => typeof x !== 'string')) {
    throw new TranslationError('Gemini embeddings take text input, not token ids');
  }
  const texts = inputs as string[];
  const model = `models/${geminiModelId(req.model)}`;
  return {
    texts,
    requests: texts.map((text) => ({
      model,
      content: { parts: [{ text }] },
      ...(req.dimensions !== undefined ? { outputDimensionality: req.dimensions } : {}),
    })),
  };
}

/** Float vector → OpenAI's base64 encoding (little-endian float32). */
export function floatsToBase64(values: number[]): string {
  return Buffer.from(new Float32Array(values).buffer).toString('base64');
}

/**
 * `{embeddings:[{values}]}` → canonical. Gemini reports no token counts for embeddings:
 * prompt_tokens is estimated as ceil(characters / 4).
 */
export function fromGeminiEmbeddings(
  raw: unknown,
  req: EmbeddingsRequest,
  texts: string[],
): EmbeddingsResponse {
  const list = Array.isArray(obj(raw).embeddings) ? (obj(raw).embeddings as unknown[]) : [];
  const tokens = texts.reduce((n, t) => n + Math.ceil(t.length / 4), 0);
  return {
    object: 'list',
    data: list.map((e, index) => {
      const values = (Array.isArray(obj(e).values) ? obj(e).values : []) as number[];
      return {
        object: 'embedding',
        index,
        embedding: req.encoding_format === 'base64' ? floatsToBase64(values) : values,
      };
    }),
    model: req.model,
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  };
}
