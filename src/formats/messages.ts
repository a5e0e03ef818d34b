/**
 * Anthropic Messages (`POST /messages`) at the edge: caller request → canonical chat, canonical
 * response / stream → Anthropic `Message` / SSE events. Pure: data in, data out.
 *
 * Request mapping (anything not listed as mapped or ignored is refused with a TranslationError
 * naming the field, never dropped):
 *
 * | Anthropic                                   | canonical                                                  |
 * | ------------------------------------------- | ---------------------------------------------------------- |
 * | `system` (string or text blocks)            | a leading `system` message (blocks → text parts)           |
 * | `cache_control` on system / text / image    | the part's `cache_control`                                 |
 * | `cache_control` on tool_result / tool_use   | the message's `cache_control` (its last block on the wire) |
 * | `cache_control` on a tool, at the top level | the tool's, the request's `cache_control`                  |
 * | `messages[].role: 'system'`                 | a `system` message in place                                |
 * | user `text` / `image` blocks                | user content parts; base64 source → `data:` URL, url → URL |
 * | user `tool_result`                          | a `tool` message (text → string; with images → parts)      |
 * | `tool_result.is_error: true`                | content prefixed with `Error: ` (canonical has no flag)    |
 * | assistant `text` blocks                     | `content`, concatenated                                    |
 * | assistant `thinking` blocks                 | `reasoning` (joined with a blank line) and, when signed,   |
 * |                                             | `reasoning_details` `reasoning.text` {text, signature}     |
 * | assistant `redacted_thinking` blocks        | `reasoning_details` `reasoning.encrypted` {data}           |
 * | … whose data is Gatehouse's sealed state    | the `reasoning_details` it holds (sealedState)             |
 * | assistant `tool_use`                        | `tool_calls` (`arguments` = JSON.stringify(input))          |
 * | `max_tokens` (required, ≥ 1)                | `max_tokens`                                               |
 * | `temperature`, `top_p`, `top_k`             | same                                                       |
 * | `stop_sequences`                            | `stop`                                                     |
 * | `tools` (custom)                            | function tools (`input_schema` → `parameters`)             |
 * | `tool_choice` auto/any/tool/none            | auto/required/{function}/none                              |
 * | `tool_choice.disable_parallel_tool_use`     | `parallel_tool_calls: false`                               |
 * | `thinking` enabled / adaptive / disabled    | `reasoning.max_tokens` = budget / `reasoning: {}` / none   |
 * | `thinking.display: 'omitted'`               | `reasoning.exclude: true`                                  |
 * | `output_config.effort` low…xhigh, max       | `reasoning.effort`                                         |
 * | `output_config.format` (json_schema)        | `response_format` json_schema (name `output`, strict)      |
 * | `metadata.user_id`                          | `user`                                                     |
 * | `service_tier` auto / standard_only         | `service_tier` auto / default                              |
 * | `stream`                                    | `stream` + `stream_options.include_usage`                  |
 *
 * Thinking in history: `reasoning_details` entries get format `anthropic-claude-v1` and `index`
 * 0, 1, … in block order, so an Anthropic upstream receives the blocks back exactly as they were
 * (see `providers/anthropic/wire.ts`); a thinking block signed with THINKING_SIGNATURE (Gatehouse's
 * placeholder, i.e. the thinking came from another provider) or unsigned gives only `reasoning`.
 *
 * Dropped and reported in `dropped` (they only steer cost, latency or context housekeeping, and
 * the canonical request has no place for them): `context_management` (server-side context
 * editing), `compaction` (server-side summarising), `speed: 'fast'`, `diagnostics`, `fallbacks`
 * (Anthropic's own fallback models), `output_config.task_budget`, a tool's `eager_input_streaming`,
 * a tool with `defer_loading` (left out: the model is not offered it up front).
 *
 * The `anthropic-beta` header (when the route passes headers) rides along as `anthropic_beta`: an
 * Anthropic-format provider sends it on, any other drops it and lists it (formats/capabilities.ts).
 *
 * Ignored: `citations` on history text blocks, header params the SDK may leave in the body
 * (`user_profile_id`, `workspace_id`, `betas`), Gatehouse's own fields (`provider`, `models`,
 * `route`, …), unknown fields.
 *
 * Documents (`document` blocks, in user turns and tool results): a PDF (base64 or URL), a text
 * document or custom text content → the canonical `file` part (formats/files.ts), `title` as its
 * file name, `context` as text before it; `citations.enabled` is refused (only Anthropic cites).
 *
 * Web search: the `web_search_*` server tool → the request's `web_search` (web-search.ts; the
 * serving provider runs its own search); a `tool_choice` forcing it (or `any` with no other tool)
 * is dropped and listed (no provider can be made to search). In history, `server_tool_use` and
 * `web_search_tool_result` blocks (the provider's own records) are dropped and listed.
 *
 * Refused: `container`, `mcp_servers`, `inference_geo`, `thread` (formats/threads.ts: with the
 * rejection Anthropic's clients fall back on),
 * search-result blocks, file image and document sources, other server tools (a tool `type` other
 * than `custom` and web search), `thinking.type: 'between_tools'`, tool
 * `input_examples` / non-direct `allowed_callers`.
 *
 * Response mapping: `stop`→`end_turn` (`stop_sequence` when the provider says so natively),
 * `length`→`max_tokens`, `tool_calls` (or any tool call present)→`tool_use`,
 * `content_filter`→`refusal`. Thinking: when the canonical response has `reasoning_details` of
 * format `anthropic-claude-v1` (an Anthropic upstream), one block per entry in order —
 * `reasoning.text` → a thinking block with the entry's real signature, `reasoning.encrypted` → a
 * `redacted_thinking` block with its data — so a caller served by Anthropic round-trips real
 * signatures; otherwise (another provider's reasoning) one thinking block from `reasoning`, signed
 * with THINKING_SIGNATURE (a placeholder: there is no Anthropic signature to give), and Gemini's
 * thought signatures sealed in a last `redacted_thinking` block (sealedState). Tool-call
 * arguments that are not a JSON object become `input: {}` in a non-streamed message; streams
 * forward the upstream's argument text verbatim as `input_json_delta`. Usage: `input_tokens` =
 * prompt − cache reads − cache writes (Anthropic counts those separately). Web searches
 * (`web_search_calls`) → a `server_tool_use` block and a `web_search_tool_result` block each, before
 * the text; `annotations` → the text split at the cited spans, each carrying its
 * `web_search_result_location` citations (streams: a `citations_delta` on the open text block).
 */
import {
  type CacheControl,
  type ChatChunk,
  type ChatMessage,
  type ChatRequest,
  type ChatResponse,
  type ContentPart,
  type FinishReason,
  REASONING_FORMATS,
  type ReasoningConfig,
  type ReasoningDetail,
  type ToolCall,
  type ToolChoice,
  type ToolDefinition,
  type UrlCitation,
  type Usage,
  type WebSearchCall,
} from './chat.js';
import { documentParts } from './files.js';
import { cachedTextParts, optCacheControl, withCacheControl } from './hints.js';
import { decodeReasoningState, encodeReasoningState, isGatehouseReasoningState } from './reasoning-state.js';
import { type Block, responseBlocks, segmentChatStream } from './segments.js';
import { refuseThread } from './threads.js';
import {
  argumentsObject,
  arr,
  compact,
  fail,
  given,
  idBase,
  isObj,
  nonEmptyStr,
  num,
  type Obj,
  obj,
  oneOf,
  optBool,
  optNum,
  optStr,
  str,
  strArray,
} from './validate.js';
import {
  anthropicWebSearch,
  isAnthropicWebSearch,
  mergeWebSearch,
  openRouterWebSearch,
  WEB_SEARCH_TOOL,
} from './web-search.js';

/**
 * Placeholder `signature` on thinking blocks whose reasoning has no Anthropic signature (another
 * provider's): Anthropic clients require one. Never sent upstream (see the request mapping).
 */
export const THINKING_SIGNATURE = 'gatehouse-unsigned';

const FORMAT = REASONING_FORMATS.anthropic;

// ---------------------------------------------------------------------------------------------
// Wire types (what Gatehouse emits; a structural subset of the official SDK's types)
// ---------------------------------------------------------------------------------------------

/** No `citations` key unless there are citations (clients reject null). */
export interface AnthropicTextBlock {
  type: 'text';
  text: string;
  citations?: AnthropicCitation[];
}
export interface AnthropicCitation {
  type: 'web_search_result_location';
  url: string;
  title: string;
  cited_text: string;
  encrypted_index: string;
}
export interface AnthropicServerToolUseBlock {
  type: 'server_tool_use';
  id: string;
  name: 'web_search';
  input: { query?: string };
}
export interface AnthropicWebSearchResultBlock {
  type: 'web_search_tool_result';
  tool_use_id: string;
  content: {
    type: 'web_search_result';
    url: string;
    title: string;
    encrypted_content: string;
    page_age: null;
  }[];
}
export interface AnthropicThinkingBlock {
  type: 'thinking';
  thinking: string;
  signature: string;
}
export interface AnthropicRedactedThinkingBlock {
  type: 'redacted_thinking';
  data: string;
}
export interface AnthropicToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: Obj;
  caller: { type: 'direct' };
}
export type AnthropicContentBlock =
  | AnthropicTextBlock
  | AnthropicThinkingBlock
  | AnthropicRedactedThinkingBlock
  | AnthropicToolUseBlock
  | AnthropicServerToolUseBlock
  | AnthropicWebSearchResultBlock;

export type AnthropicStopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'refusal';

export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation: null;
  server_tool_use: AnthropicServerToolUsage | null;
  service_tier: null;
  inference_geo: null;
  speed: null;
  output_tokens_details: { thinking_tokens: number } | null;
}

export interface AnthropicMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: AnthropicContentBlock[];
  stop_reason: AnthropicStopReason | null;
  stop_sequence: string | null;
  stop_details: { type: 'refusal'; category: null; explanation: null } | null;
  usage: AnthropicUsage;
  container: null;
  diagnostics: null;
}

export type AnthropicStreamEvent =
  | { type: 'message_start'; message: AnthropicMessage }
  | { type: 'content_block_start'; index: number; content_block: AnthropicContentBlock }
  | {
      type: 'content_block_delta';
      index: number;
      delta:
        | { type: 'text_delta'; text: string }
        | { type: 'thinking_delta'; thinking: string }
        | { type: 'signature_delta'; signature: string }
        | { type: 'input_json_delta'; partial_json: string }
        | { type: 'citations_delta'; citation: AnthropicCitation };
    }
  | { type: 'content_block_stop'; index: number }
  | {
      type: 'message_delta';
      delta: {
        stop_reason: AnthropicStopReason | null;
        stop_sequence: string | null;
        stop_details: AnthropicMessage['stop_details'];
        container: null;
      };
      usage: {
        input_tokens: number;
        output_tokens: number;
        cache_creation_input_tokens: number;
        cache_read_input_tokens: number;
        server_tool_use: AnthropicServerToolUsage | null;
        output_tokens_details: { thinking_tokens: number } | null;
      };
    }
  | { type: 'message_stop' }
  | { type: 'error'; error: { type: 'api_error'; message: string } };

/** One SSE frame: `event` is the event name (equal to `data.type`). */
export interface AnthropicSseEvent {
  event: AnthropicStreamEvent['type'];
  data: AnthropicStreamEvent;
}

// ---------------------------------------------------------------------------------------------
// Request: Anthropic → canonical
// ---------------------------------------------------------------------------------------------

const REFUSED_FIELDS: Record<string, string> = {
  container: 'code-execution containers are not supported',
  mcp_servers: 'MCP servers are not supported',
  inference_geo: 'inference geography cannot be guaranteed through Gatehouse',
};

/** The caller's fields that only steer cost, latency or context housekeeping: dropped, reported. */
function droppedHints(b: Obj): string[] {
  const dropped: string[] = [];
  if (given(b.context_management)) dropped.push('context_management');
  if (b.speed === 'fast') dropped.push('speed');
  if (given(b.diagnostics)) dropped.push('diagnostics');
  // Server-side summarising of a long context; Anthropic's own fallback models when the asked one
  // is overloaded; a token budget the model paces an agentic task by.
  if (given(b.compaction)) dropped.push('compaction');
  if (given(b.fallbacks)) dropped.push('fallbacks');
  if (isObj(b.output_config) && given(b.output_config.task_budget)) dropped.push('output_config.task_budget');
  if (Array.isArray(b.tools)) {
    for (const [i, t] of b.tools.entries())
      if (isObj(t) && t.eager_input_streaming === true) dropped.push(`tools[${i}].eager_input_streaming`);
  }
  return dropped;
}

const IMAGE_MEDIA_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] as const;

function imagePart(block: Obj, path: string): ContentPart {
  const source = obj(block.source, `${path}.source`);
  const type = source.type;
  if (type === 'base64') {
    const mediaType = oneOf(source.media_type, `${path}.source.media_type`, IMAGE_MEDIA_TYPES);
    const data = nonEmptyStr(source.data, `${path}.source.data`);
    return { type: 'image_url', image_url: { url: `data:${mediaType};base64,${data}` } };
  }
  if (type === 'url')
    return { type: 'image_url', image_url: { url: nonEmptyStr(source.url, `${path}.source.url`) } };
  if (type === 'file') fail(`${path}.source.type`, "'file' image sources (Files API) are not supported");
  return fail(`${path}.source.type`, "must be 'base64' or 'url'");
}

/** A string, or text blocks kept as text parts (their boundaries and breakpoints matter upstream). */
function textOfBlocks(v: unknown, path: string): string | ContentPart[] {
  return typeof v === 'string' ? v : cachedTextParts(v, path, 'blocks');
}

function toolResultMessage(block: Obj, path: string): ChatMessage {
  const toolCallId = nonEmptyStr(block.tool_use_id, `${path}.tool_use_id`);
  const isError = optBool(block.is_error, `${path}.is_error`) === true;
  let parts: ContentPart[] = [];
  if (typeof block.content === 'string') parts = [{ type: 'text', text: block.content }];
  else if (given(block.content)) {
    parts = arr(block.content, `${path}.content`).flatMap((b, i): ContentPart[] => {
      const p = `${path}.content[${i}]`;
      const inner = obj(b, p);
      if (inner.type === 'text') return [{ type: 'text', text: str(inner.text, `${p}.text`) }];
      if (inner.type === 'image') return [imagePart(inner, p)];
      if (inner.type === 'document') return documentParts(inner, p);
      return fail(`${p}.type`, `'${String(inner.type)}' blocks are not supported in tool results`);
    });
  }
  if (isError) {
    const first = parts[0];
    if (first?.type === 'text') parts[0] = { type: 'text', text: `Error: ${first.text}` };
    else parts.unshift({ type: 'text', text: 'Error' });
  }
  const allText = parts.every((p) => p.type === 'text');
  const content = allText ? parts.map((p) => (p as { text: string }).text).join('\n') : parts;
  return withCacheControl(
    { role: 'tool', tool_call_id: toolCallId, content },
    block.cache_control,
    `${path}.cache_control`,
  );
}

function userMessages(content: unknown, path: string): ChatMessage[] {
  if (typeof content === 'string') return [{ role: 'user', content }];
  const blocks = arr(content, path);
  if (blocks.length === 0) fail(path, 'must not be empty');
  const out: ChatMessage[] = [];
  let parts: ContentPart[] = [];
  const flush = () => {
    if (parts.length) out.push({ role: 'user', content: parts });
    parts = [];
  };
  for (const [i, b] of blocks.entries()) {
    const p = `${path}[${i}]`;
    const block = obj(b, p);
    switch (block.type) {
      case 'text':
        parts.push(
          withCacheControl(
            { type: 'text', text: str(block.text, `${p}.text`) },
            block.cache_control,
            `${p}.cache_control`,
          ),
        );
        break;
      case 'image':
        parts.push(withCacheControl(imagePart(block, p), block.cache_control, `${p}.cache_control`));
        break;
      case 'tool_result':
        flush();
        out.push(toolResultMessage(block, p));
        break;
      case 'document': {
        const doc = documentParts(block, p);
        const last = doc.length - 1;
        doc[last] = withCacheControl(doc[last] as ContentPart, block.cache_control, `${p}.cache_control`);
        parts.push(...doc);
        break;
      }
      default:
        fail(`${p}.type`, `'${String(block.type)}' blocks are not supported in user messages`);
    }
  }
  flush();
  return out;
}

function assistantMessage(content: unknown, path: string, dropped: string[]): ChatMessage | null {
  if (typeof content === 'string') return { role: 'assistant', content };
  const blocks = arr(content, path);
  let text: string | null = null;
  const reasoning: string[] = [];
  const details: ReasoningDetail[] = [];
  const toolCalls: ToolCall[] = [];
  // Text blocks are joined and tool calls carried apart, so a breakpoint marks the whole turn.
  let cacheControl: CacheControl | undefined;
  for (const [i, b] of blocks.entries()) {
    const p = `${path}[${i}]`;
    const block = obj(b, p);
    cacheControl = optCacheControl(block.cache_control, `${p}.cache_control`) ?? cacheControl;
    switch (block.type) {
      case 'text':
        text = (text ?? '') + str(block.text, `${p}.text`);
        break;
      case 'thinking': {
        const thinking = str(block.thinking, `${p}.thinking`);
        reasoning.push(thinking);
        const signature = optStr(block.signature, `${p}.signature`);
        if (signature && signature !== THINKING_SIGNATURE) {
          details.push({
            type: 'reasoning.text',
            text: thinking,
            signature,
            format: FORMAT,
            index: details.length,
          });
        }
        break;
      }
      case 'redacted_thinking':
        // Another provider's reasoning state Gatehouse sealed into the block (sealedState).
        if (isGatehouseReasoningState(block.data)) details.push(...decodeReasoningState(block.data));
        else if (typeof block.data === 'string' && block.data) {
          details.push({
            type: 'reasoning.encrypted',
            data: block.data,
            format: FORMAT,
            index: details.length,
          });
        }
        break;
      case 'tool_use': {
        if (isObj(block.caller) && block.caller.type !== 'direct') {
          fail(`${p}.caller.type`, 'only direct tool calls are supported');
        }
        const input = given(block.input) ? obj(block.input, `${p}.input`) : {};
        toolCalls.push({
          id: nonEmptyStr(block.id, `${p}.id`),
          type: 'function',
          function: { name: nonEmptyStr(block.name, `${p}.name`), arguments: JSON.stringify(input) },
        });
        break;
      }
      case 'server_tool_use':
      case 'web_search_tool_result':
        // The provider's own record of a search it ran: nothing another provider can be shown.
        dropped.push(p);
        break;
      default:
        fail(`${p}.type`, `'${String(block.type)}' blocks are not supported in assistant messages`);
    }
  }
  if (text === null && toolCalls.length === 0 && reasoning.length === 0 && details.length === 0) return null;
  const m: ChatMessage = { role: 'assistant', content: text };
  if (reasoning.length) m.reasoning = reasoning.join('\n\n');
  if (details.length) m.reasoning_details = details;
  if (toolCalls.length) m.tool_calls = toolCalls;
  if (cacheControl) m.cache_control = cacheControl;
  return m;
}

/**
 * The tools, as functions; a deferred one (`defer_loading`) is offered up front, the flag listed.
 * The web search server tool becomes the request's `web_search` (set on `req`).
 */
function tools(v: unknown, dropped: string[], req: ChatRequest): ToolDefinition[] {
  return arr(v, 'tools').flatMap((t, i): ToolDefinition[] => {
    const p = `tools[${i}]`;
    const tool = obj(t, p);
    if (isAnthropicWebSearch(tool.type)) {
      req.web_search = mergeWebSearch(req.web_search, anthropicWebSearch(tool, p));
      if (given(tool.cache_control)) dropped.push(`${p}.cache_control`);
      return [];
    }
    // OpenRouter's spelling of it (its SDK's Messages tools take it too).
    if (tool.type === WEB_SEARCH_TOOL) {
      req.web_search = mergeWebSearch(req.web_search, openRouterWebSearch(tool, p, dropped));
      return [];
    }
    if (given(tool.type) && tool.type !== 'custom') {
      fail(`${p}.type`, `server tool '${String(tool.type)}' is not supported (only custom tools)`);
    }
    if (Array.isArray(tool.input_examples) && tool.input_examples.length) {
      fail(`${p}.input_examples`, 'tool input examples are not supported');
    }
    if (tool.defer_loading === true) dropped.push(`${p}.defer_loading`);
    if (
      given(tool.allowed_callers) &&
      strArray(tool.allowed_callers, `${p}.allowed_callers`).some((c) => c !== 'direct')
    ) {
      fail(`${p}.allowed_callers`, "only 'direct' callers are supported");
    }
    const fn: ToolDefinition['function'] = {
      name: nonEmptyStr(tool.name, `${p}.name`),
      parameters: obj(tool.input_schema, `${p}.input_schema`),
    };
    const description = optStr(tool.description, `${p}.description`);
    if (description !== undefined) fn.description = description;
    const strict = optBool(tool.strict, `${p}.strict`);
    if (strict !== undefined) fn.strict = strict;
    return [withCacheControl({ type: 'function', function: fn }, tool.cache_control, `${p}.cache_control`)];
  });
}

function toolChoice(v: unknown): { choice: ToolChoice; parallel?: false } {
  const tc = obj(v, 'tool_choice');
  const parallel = optBool(tc.disable_parallel_tool_use, 'tool_choice.disable_parallel_tool_use')
    ? false
    : undefined;
  switch (tc.type) {
    case 'auto':
      return { choice: 'auto', parallel };
    case 'any':
      return { choice: 'required', parallel };
    case 'none':
      return { choice: 'none' };
    case 'tool':
      return {
        choice: { type: 'function', function: { name: nonEmptyStr(tc.name, 'tool_choice.name') } },
        parallel,
      };
    default:
      return fail('tool_choice.type', "must be one of 'auto', 'any', 'tool', 'none'");
  }
}

function reasoningConfig(b: Obj): ReasoningConfig | undefined {
  let reasoning: ReasoningConfig | undefined;
  if (given(b.thinking)) {
    const t = obj(b.thinking, 'thinking');
    switch (t.type) {
      case 'enabled':
        reasoning = { max_tokens: num(t.budget_tokens, 'thinking.budget_tokens', { integer: true, min: 1 }) };
        break;
      case 'adaptive':
        reasoning = {};
        break;
      case 'disabled':
        break;
      case 'between_tools':
        fail('thinking.type', "'between_tools' thinking is not supported");
        break;
      default:
        fail('thinking.type', "must be one of 'enabled', 'adaptive', 'disabled'");
    }
    if (reasoning && t.display === 'omitted') reasoning.exclude = true;
  }
  if (isObj(b.output_config) && given(b.output_config.effort)) {
    reasoning = {
      ...reasoning,
      effort: oneOf(b.output_config.effort, 'output_config.effort', [
        'low',
        'medium',
        'high',
        'xhigh',
        'max',
      ] as const),
    };
  }
  return reasoning;
}

/** Request headers, lower-cased as Node gives them; the translation reads `anthropic-beta`. */
export type MessagesHeaders = Record<string, string | string[] | undefined>;

/**
 * The caller's `anthropic-beta` header as one comma-separated value (repeated headers joined),
 * undefined when none: carried on the canonical request for an Anthropic-format provider.
 */
export function anthropicBeta(headers: MessagesHeaders = {}): string | undefined {
  const raw = headers['anthropic-beta'];
  const value = (Array.isArray(raw) ? raw.join(',') : (raw ?? ''))
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean)
    .join(',');
  return value || undefined;
}

/**
 * Validates an Anthropic Messages request body and translates it to a canonical chat request.
 * `headers` (optional): the caller's `anthropic-beta` header is carried (see `anthropicBeta`).
 */
export function messagesRequestToChat(body: unknown, headers: MessagesHeaders = {}): ChatRequest {
  const b = obj(body, 'body');
  for (const [field, why] of Object.entries(REFUSED_FIELDS)) if (given(b[field])) fail(field, why);
  refuseThread(b, 'a provider of another format');

  const model = nonEmptyStr(b.model, 'model');
  if (!given(b.max_tokens)) fail('max_tokens', 'is required');
  const maxTokens = num(b.max_tokens, 'max_tokens', { integer: true, min: 1 });

  const messages: ChatMessage[] = [];
  if (given(b.system)) {
    const system = textOfBlocks(b.system, 'system');
    if (system !== '') messages.push({ role: 'system', content: system });
  }
  const input = arr(b.messages, 'messages');
  if (input.length === 0) fail('messages', 'must not be empty');
  const historyDropped: string[] = [];
  for (const [i, raw] of input.entries()) {
    const p = `messages[${i}]`;
    const m = obj(raw, p);
    const role = oneOf(m.role, `${p}.role`, ['user', 'assistant', 'system'] as const);
    if (role === 'system')
      messages.push({ role: 'system', content: textOfBlocks(m.content, `${p}.content`) });
    else if (role === 'user') messages.push(...userMessages(m.content, `${p}.content`));
    else {
      const a = assistantMessage(m.content, `${p}.content`, historyDropped);
      if (a) messages.push(a);
    }
  }

  const req: ChatRequest = { model, messages, max_tokens: maxTokens };
  req.temperature = optNum(b.temperature, 'temperature', { min: 0, max: 1 });
  req.top_p = optNum(b.top_p, 'top_p', { min: 0, max: 1 });
  req.top_k = optNum(b.top_k, 'top_k', { integer: true, min: 0 });
  req.cache_control = optCacheControl(b.cache_control, 'cache_control');
  if (given(b.service_tier)) {
    const tier = oneOf(b.service_tier, 'service_tier', ['auto', 'standard_only'] as const);
    req.service_tier = tier === 'standard_only' ? 'default' : 'auto';
  }

  if (given(b.stop_sequences)) {
    const stop = strArray(b.stop_sequences, 'stop_sequences');
    if (stop.length) req.stop = stop;
  }
  const dropped = [...droppedHints(b), ...historyDropped];
  const beta = anthropicBeta(headers);
  if (beta) req.anthropic_beta = beta;
  if (given(b.tools)) {
    const t = tools(b.tools, dropped, req);
    if (t.length) req.tools = t;
  }
  if (given(b.tool_choice)) {
    const { choice, parallel } = toolChoice(b.tool_choice);
    req.tool_choice = choice;
    req.parallel_tool_calls = parallel;
    // A choice forcing the web search (or any tool, when it is the only one): no provider can be
    // made to search, the model decides (listed).
    const forced = choice === 'required' || typeof choice === 'object';
    const named = typeof choice === 'object' ? choice.function.name : null;
    if (
      req.web_search &&
      forced &&
      !(req.tools ?? []).some((t) => named === null || t.function.name === named)
    ) {
      delete req.tool_choice;
      dropped.push('tool_choice');
    }
  }
  req.reasoning = reasoningConfig(b);
  if (isObj(b.output_config) && given(b.output_config.format)) {
    const f = obj(b.output_config.format, 'output_config.format');
    if (f.type !== 'json_schema') fail('output_config.format.type', "must be 'json_schema'");
    req.response_format = {
      type: 'json_schema',
      json_schema: { name: 'output', schema: obj(f.schema, 'output_config.format.schema'), strict: true },
    };
  } else if (given(b.output_config)) obj(b.output_config, 'output_config');
  if (given(b.metadata)) {
    const meta = obj(b.metadata, 'metadata');
    req.user = optStr(meta.user_id, 'metadata.user_id');
  }
  if (optBool(b.stream, 'stream')) {
    req.stream = true;
    req.stream_options = { include_usage: true };
  }
  if (dropped.length) req.dropped = dropped;
  return compact(req);
}

// ---------------------------------------------------------------------------------------------
// Response: canonical → Anthropic
// ---------------------------------------------------------------------------------------------

export const messageId = (chatId: string): string => `msg_${idBase(chatId)}`;

function stopReason(
  finish: FinishReason | null,
  nativeFinish: string | null,
  hasToolUse: boolean,
): AnthropicStopReason {
  if (finish === 'length') return 'max_tokens';
  if (finish === 'content_filter') return 'refusal';
  if (finish === 'tool_calls' || hasToolUse) return 'tool_use';
  if (nativeFinish === 'stop_sequence') return 'stop_sequence';
  return 'end_turn';
}

const stopDetails = (reason: AnthropicStopReason): AnthropicMessage['stop_details'] =>
  reason === 'refusal' ? { type: 'refusal', category: null, explanation: null } : null;

function tokenCounts(u: Usage | null | undefined) {
  const cacheRead = u?.prompt_tokens_details?.cached_tokens ?? 0;
  const cacheWrite = u?.prompt_tokens_details?.cache_write_tokens ?? 0;
  const thinking = u?.completion_tokens_details?.reasoning_tokens;
  return {
    input_tokens: Math.max(0, (u?.prompt_tokens ?? 0) - cacheRead - cacheWrite),
    output_tokens: u?.completion_tokens ?? 0,
    cache_creation_input_tokens: cacheWrite,
    cache_read_input_tokens: cacheRead,
    output_tokens_details: thinking === undefined ? null : { thinking_tokens: thinking },
  };
}

export interface AnthropicServerToolUsage {
  web_search_requests: number;
  web_fetch_requests: number;
}

/** The web searches the provider ran, as Anthropic counts them (null when none). */
function serverToolUsage(u: Usage | null | undefined): AnthropicServerToolUsage | null {
  const searches = u?.server_tool_use?.web_search_requests ?? 0;
  return searches ? { web_search_requests: searches, web_fetch_requests: 0 } : null;
}

/** Canonical usage → Anthropic usage. */
export function anthropicUsage(u: Usage | null | undefined): AnthropicUsage {
  const c = tokenCounts(u);
  return {
    input_tokens: c.input_tokens,
    output_tokens: c.output_tokens,
    cache_creation_input_tokens: c.cache_creation_input_tokens,
    cache_read_input_tokens: c.cache_read_input_tokens,
    cache_creation: null,
    server_tool_use: serverToolUsage(u),
    service_tier: null,
    inference_geo: null,
    speed: null,
    output_tokens_details: c.output_tokens_details,
  };
}

/** A search's server_tool_use id (`srvtoolu_…`, as Anthropic names them). */
const serverToolId = (id: string): string =>
  id.startsWith('srvtoolu_') ? id : `srvtoolu_${id.replace(/[^A-Za-z0-9_]/g, '')}`;

/** A web search as Anthropic's pair of blocks: the search (its query when known), then its results. */
function searchBlocks(call: WebSearchCall): [AnthropicServerToolUseBlock, AnthropicWebSearchResultBlock] {
  const id = serverToolId(call.id);
  return [
    {
      type: 'server_tool_use',
      id,
      name: 'web_search',
      input: call.query !== undefined ? { query: call.query } : {},
    },
    {
      type: 'web_search_tool_result',
      tool_use_id: id,
      content: call.sources.map((s) => ({
        type: 'web_search_result',
        url: s.url,
        title: s.title ?? s.url,
        encrypted_content: '',
        page_age: null,
      })),
    },
  ];
}

const citation = ({ url_citation: c }: UrlCitation, text: string): AnthropicCitation => ({
  type: 'web_search_result_location',
  url: c.url,
  title: c.title,
  cited_text: c.content ?? text.slice(c.start_index, c.end_index),
  encrypted_index: '',
});

/**
 * A text block with citations as Anthropic answers one: text blocks split at the cited spans, each
 * cited span carrying its citations (several citations of one span on one block).
 */
function citedTextBlocks(text: string, annotations: UrlCitation[]): AnthropicTextBlock[] {
  const cuts = new Set([0, text.length]);
  for (const { url_citation: c } of annotations) {
    cuts.add(Math.max(0, Math.min(text.length, c.start_index)));
    cuts.add(Math.max(0, Math.min(text.length, c.end_index)));
  }
  const points = [...cuts].sort((a, b) => a - b);
  const out: AnthropicTextBlock[] = [];
  for (let i = 0; i + 1 < points.length; i++) {
    const [from, to] = [points[i] as number, points[i + 1] as number];
    const piece = text.slice(from, to);
    const cites = annotations
      .filter(
        ({ url_citation: c }) => c.start_index <= from && c.end_index >= to && c.end_index > c.start_index,
      )
      .map((a) => citation(a, text));
    out.push(cites.length ? { type: 'text', text: piece, citations: cites } : { type: 'text', text: piece });
  }
  return out;
}

function contentBlocks(block: Block): AnthropicContentBlock[] {
  if (block.kind === 'search') return searchBlocks(block.call);
  if (block.kind === 'text' && block.annotations?.length)
    return citedTextBlocks(block.text, block.annotations);
  return [contentBlock(block)];
}

function contentBlock(block: Exclude<Block, { kind: 'search' }>): AnthropicContentBlock {
  switch (block.kind) {
    case 'reasoning':
      if (block.data !== undefined) return { type: 'redacted_thinking', data: block.data };
      return { type: 'thinking', thinking: block.text, signature: block.signature || THINKING_SIGNATURE };
    case 'text':
    case 'refusal':
      return { type: 'text', text: block.text };
    case 'tool':
      return {
        type: 'tool_use',
        id: block.id,
        name: block.name,
        input: argumentsObject(block.arguments) ?? {},
        caller: { type: 'direct' },
      };
  }
}

/** The reasoning state of another provider that a later turn must send back (Gemini's thought signatures). */
const SEALED_FORMATS = new Set<string>([REASONING_FORMATS.google]);

/**
 * Gemini's thought signatures, which Gemini 3 wants back with the function calls they came with:
 * Anthropic's format has no place for them, so they ride in a `redacted_thinking` block whose data
 * is Gatehouse's reasoning state (reasoning-state.ts), after the answer's blocks. A client sends it
 * back like any redacted thinking; the request side opens it, and a pass-through call to Anthropic
 * leaves it out (inference/wires/messages.ts).
 */
function sealedState(details: readonly ReasoningDetail[]): AnthropicContentBlock | null {
  const data = encodeReasoningState(
    details.filter((d) => d.format !== undefined && SEALED_FORMATS.has(d.format)),
  );
  return data ? { type: 'redacted_thinking', data } : null;
}

/** A canonical chat response as an Anthropic `Message`; `model` is the model the caller asked for. */
export function chatResponseToMessages(res: ChatResponse, model: string): AnthropicMessage {
  const { blocks, finish, nativeFinish } = responseBlocks(res, { reasoningFormat: FORMAT });
  const reason = stopReason(
    finish,
    nativeFinish,
    blocks.some((b) => b.kind === 'tool'),
  );
  return {
    id: messageId(res.id),
    type: 'message',
    role: 'assistant',
    model,
    content: [
      ...blocks.flatMap(contentBlocks),
      ...[sealedState(res.choices[0]?.message.reasoning_details ?? [])].filter((b) => b !== null),
    ],
    stop_reason: reason,
    stop_sequence: null,
    stop_details: stopDetails(reason),
    usage: anthropicUsage(res.usage),
    container: null,
    diagnostics: null,
  };
}

function startBlock(block: Exclude<Block, { kind: 'search' }>): AnthropicContentBlock {
  switch (block.kind) {
    case 'reasoning':
      if (block.data !== undefined) return { type: 'redacted_thinking', data: block.data };
      return { type: 'thinking', thinking: '', signature: '' };
    case 'tool':
      return { type: 'tool_use', id: block.id, name: block.name, input: {}, caller: { type: 'direct' } };
    default:
      return { type: 'text', text: '' };
  }
}

const sse = (data: AnthropicStreamEvent): AnthropicSseEvent => ({ event: data.type, data });

/**
 * A canonical chunk stream as Anthropic SSE events: message_start → per block
 * content_block_start / content_block_delta… / content_block_stop → message_delta → message_stop.
 * Thinking blocks end with a `signature_delta` carrying the upstream's real signature (an Anthropic
 * upstream's, from its `reasoning_details`), else THINKING_SIGNATURE; `redacted_thinking` blocks
 * come whole in their content_block_start. Usage as Anthropic reports it: message_start carries the
 * input counts when the first canonical chunk has them (`prompt_usage`, see ChatChunk; else 0), and
 * message_delta the final ones (from the last canonical chunk), cumulative, input and cache counts
 * included — the totals clients keep. If the input fails, an `error` event is the last thing
 * emitted (the iterator's error is not rethrown).
 */
export async function* chatStreamToMessages(
  chunks: AsyncIterable<ChatChunk>,
  model: string,
): AsyncGenerator<AnthropicSseEvent> {
  // A search is two Anthropic blocks: block indexes run ahead of the segments' by one per search.
  let shift = 0;
  let open: number | null = null;
  // The open text block's text: a citation without its passage quotes the span it covers.
  let text = '';
  // Reasoning state of another provider, sealed into a block at the end (sealedState).
  const foreign: ReasoningDetail[] = [];
  const tapped = (async function* () {
    for await (const chunk of chunks) {
      for (const c of chunk.choices)
        if (c.index === 0)
          for (const d of c.delta?.reasoning_details ?? [])
            if (d.format !== undefined && SEALED_FORMATS.has(d.format)) foreign.push(d);
      yield chunk;
    }
  })();
  for await (const s of segmentChatStream(tapped, { reasoningFormat: FORMAT })) {
    const index = 'index' in s ? s.index + shift : 0;
    switch (s.type) {
      case 'begin': {
        // The prompt's counts when the upstream told them up front, as Anthropic's message_start
        // has them; message_delta repeats every count, cumulative, at the end.
        const prompt: Usage | null = s.prompt && {
          ...s.prompt,
          completion_tokens: 0,
          total_tokens: s.prompt.prompt_tokens,
        };
        yield sse({
          type: 'message_start',
          message: {
            id: messageId(s.id),
            type: 'message',
            role: 'assistant',
            model,
            content: [],
            stop_reason: null,
            stop_sequence: null,
            stop_details: null,
            usage: { ...anthropicUsage(prompt), output_tokens: 0, output_tokens_details: null },
            container: null,
            diagnostics: null,
          },
        });
        break;
      }
      case 'open':
        if (s.block.kind === 'search') {
          const [use, result] = searchBlocks(s.block.call);
          const { input, ...rest } = use;
          yield sse({ type: 'content_block_start', index, content_block: { ...rest, input: {} } });
          if (input.query !== undefined) {
            const partial_json = JSON.stringify(input);
            yield sse({
              type: 'content_block_delta',
              index,
              delta: { type: 'input_json_delta', partial_json },
            });
          }
          yield sse({ type: 'content_block_stop', index });
          yield sse({ type: 'content_block_start', index: index + 1, content_block: result });
          shift++;
          break;
        }
        open = index;
        text = '';
        yield sse({ type: 'content_block_start', index, content_block: startBlock(s.block) });
        break;
      case 'annotation':
        // Anthropic cites within an open block only: a citation after its block closed is lost.
        if (index === open)
          yield sse({
            type: 'content_block_delta',
            index,
            delta: { type: 'citations_delta', citation: citation(s.annotation, text) },
          });
        break;
      case 'delta':
        if (s.kind === 'text') text += s.text;
        yield sse({
          type: 'content_block_delta',
          index,
          delta:
            s.kind === 'reasoning'
              ? { type: 'thinking_delta', thinking: s.text }
              : s.kind === 'tool'
                ? { type: 'input_json_delta', partial_json: s.text }
                : { type: 'text_delta', text: s.text },
        });
        break;
      case 'close':
        // A search's result block (index + 1: `shift` counted it already) ends here.
        if (s.block.kind === 'search') {
          yield sse({ type: 'content_block_stop', index });
          break;
        }
        open = null;
        if (s.block.kind === 'reasoning' && s.block.data === undefined) {
          yield sse({
            type: 'content_block_delta',
            index,
            delta: { type: 'signature_delta', signature: s.block.signature || THINKING_SIGNATURE },
          });
        }
        yield sse({ type: 'content_block_stop', index });
        break;
      case 'end': {
        const sealed = sealedState(foreign);
        if (sealed) {
          const at = s.blocks.length + shift;
          yield sse({ type: 'content_block_start', index: at, content_block: sealed });
          yield sse({ type: 'content_block_stop', index: at });
        }
        const reason = stopReason(
          s.finish,
          s.nativeFinish,
          s.blocks.some((b) => b.kind === 'tool'),
        );
        yield sse({
          type: 'message_delta',
          delta: {
            stop_reason: reason,
            stop_sequence: null,
            stop_details: stopDetails(reason),
            container: null,
          },
          usage: Object.assign(tokenCounts(s.usage), { server_tool_use: serverToolUsage(s.usage) }),
        });
        yield sse({ type: 'message_stop' });
        break;
      }
      case 'error':
        yield sse({ type: 'error', error: { type: 'api_error', message: s.message } });
        return;
    }
  }
}
