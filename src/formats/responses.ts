/**
 * OpenAI Responses (`POST /responses`) at the edge: caller request → canonical chat, canonical
 * response / stream → Responses `Response` / SSE events. Pure: data in, data out.
 *
 * Server-side state is not this module's: `POST /responses` expands `previous_response_id`,
 * `conversation` and `item_reference` input items from its store (src/stored-responses/) before
 * translating, so here (batches, or a body that reached this point unexpanded) they are refused,
 * as are `background: true` and `prompt` templates. `store` is the endpoint's to act on and is ignored.
 *
 * Request mapping:
 *
 * | Responses                                        | canonical                                           |
 * | ------------------------------------------------ | --------------------------------------------------- |
 * | `instructions`                                   | a leading `system` message                          |
 * | `input` string                                   | one user message                                    |
 * | message items user/system/developer              | same role; `input_text` → text, `input_image` (URL) → image_url, `input_file` (`file_data`, `file_url`, `file_id`) → file, `input_video` (OpenRouter's; user messages) → video_url |
 * | assistant message items (`output_text`, `refusal`) | assistant `content` (text concatenated)           |
 * | `reasoning` items (summary text)                 | assistant `reasoning`                               |
 * | Gatehouse's `encrypted_content` on reasoning items | assistant `reasoning_details` (reasoning-state.ts) |
 * | `function_call` / `custom_tool_call` /           | assistant `tool_calls` (id = `call_id`; names and   |
 * | `local_shell_call` items                         | arguments as in `responses-tools.ts`)               |
 * | `function_call_output` / `custom_tool_call_output` / `local_shell_call_output` items | `tool` messages |
 * | consecutive reasoning/assistant/function_call    | ONE assistant message (they are one model turn)     |
 * | `max_output_tokens`, `temperature`, `top_p`      | `max_tokens`, same, same                            |
 * | `presence_penalty`, `frequency_penalty`          | same                                                |
 * | `tools`: function, custom, namespace, local_shell | function tools (see `responses-tools.ts`)          |
 * | `tool_choice` none/auto/required/{function}/{custom} | same (a custom tool is a function)              |
 * | `tool_choice` allowed_tools                      | the listed tools alone, `mode` as the tool choice   |
 * | `parallel_tool_calls`                            | same                                                |
 * | `text.format` text/json_object/json_schema       | `response_format`                                   |
 * | `reasoning.effort` (`none` → no reasoning)       | `reasoning.effort`                                  |
 * | `prompt_cache_key`, `prompt_cache_retention`,    | same (hints; `text.verbosity` → `verbosity`)        |
 * | `prompt_cache_options`, `service_tier`,          |                                                     |
 * | `metadata`, `safety_identifier`,                 |                                                     |
 * | `text.verbosity`                                 |                                                     |
 * | `cache_control` on a tool                        | the tool's `cache_control`                          |
 * | `prompt_cache_breakpoint` on a content part      | the part's `cache_control` (a `ttl` → `1h`)         |
 * | `include: ['message.output_text.logprobs']`, `top_logprobs` | `logprobs`, `top_logprobs`               |
 * | `stream`, `user`                                 | same (+ `stream_options.include_usage`)             |
 *
 * Tools in `additional_tools` input items (Codex's "lite" dialect) are read like `tools`; so are
 * the tools a client tool search loaded (`tool_search_output` items with `execution: 'client'`,
 * whose `tool_search_call` is a call of the function `tool_search`).
 * Web search tools (`web_search`, `web_search_preview`, `openrouter:web_search`) → the request's
 * `web_search` (web-search.ts): the serving provider runs its own search; the answer's searches
 * become `web_search_call` items and its citations `url_citation` annotations.
 * Dropped and reported in `dropped`: hosted `tool_search` tools (`tools[i]`) and
 * `web_search_call` / hosted `tool_search_call` / `tool_search_output` items in the history
 * (`input[i]`), a custom tool's grammar (`tools[i].format`: described to the model, not
 * enforced), `include` values other than output logprobs and `reasoning.encrypted_content`
 * (`include[i]`), `truncation: 'auto'`, `max_tool_calls`.
 * Ignored: `store: false`, `reasoning.summary` / `generate_summary` (reasoning comes back as a
 * single summary part whatever is asked), an `encrypted_content` on a reasoning item that is not
 * Gatehouse's (another provider's opaque state, e.g. OpenAI's after a fallback),
 * `truncation: 'disabled'`, `stream_options`, Gatehouse's own fields, unknown fields.
 * Refused: other built-in tools (file_search, computer_use, mcp, code_interpreter, …) and hosted
 * tool choices, `file_id` images, `input_audio`.
 *
 * Responses: reasoning → a `reasoning` item with one `summary_text` (the canonical `reasoning`
 * text) and, when the answer has `reasoning_details`, those in its `encrypted_content` — whether or
 * not `include` asks: clients resend the items they got (the Agents SDK asks for nothing), and a
 * `store: false` client has no other way to give a provider its signed thinking back. A non-streamed
 * answer carries them on its first reasoning item (a reasoning item with no summary leads the output
 * when there is no reasoning text, e.g. only a redacted block); a stream on each reasoning item the
 * entries that arrived up to its end, and the rest on a reasoning item with no summary after the
 * others (a Gemini function call's signature comes with the call). Read back, the entries of every
 * reasoning item of a turn join, so the split does not matter; text → a `message` item; tool calls → the item type of the tool the caller
 * declared (`function_call`, `custom_tool_call`, `local_shell_call`; see `responses-tools.ts`).
 * `length` → status
 * `incomplete` with `incomplete_details.reason: 'max_output_tokens'` (`content_filter` likewise);
 * streams end with `response.completed` or, for those, `response.incomplete`, as the OpenAI API
 * does. `output_text` (the SDK convenience: all output_text parts joined) IS sent: the official
 * client computes it for `responses.create()` but its stream helper
 * (`responses.stream().finalResponse()`) does not. The response object carries every field the
 * official OpenRouter client validates (`completed_at`, the penalties, …), and `usage` the call's
 * cost when the caller passes `ResponsesEncodeOptions.cost`.
 */

import { isAllowedToolsChoice, responsesAllowedTools, restrictTools } from './allowed-tools.js';
import type {
  ChatChunk,
  ChatMessage,
  ChatRequest,
  ChatResponse,
  ContentPart,
  FinishReason,
  ReasoningConfig,
  ReasoningDetail,
  ResponseFormat,
  ToolCall,
  ToolChoice,
  ToolDefinition,
  UrlCitation,
  Usage,
  WebSearchLocation,
  WebSearchRequest,
} from './chat.js';
import { IMAGE_DETAILS } from './chat.js';
import { isGatehouseCompaction } from './compaction-item.js';
import { filePart } from './files.js';
import { openAiHints, withPartBreakpoint } from './hints.js';
import { collapseReasoningDetails } from './reasoning-details.js';
import { decodeReasoningState, encodeReasoningState } from './reasoning-state.js';
import {
  assertUniqueNames,
  flatName,
  historyToolCall,
  type ResponsesToolCallItem,
  responsesTools,
  type ToolOrigins,
  toolCallItem,
  toolOrigins,
} from './responses-tools.js';
import { type Block, type LogprobEntry, responseBlocks, segmentChatStream } from './segments.js';
import {
  arr,
  compact,
  fail,
  given,
  idBase,
  nonEmptyStr,
  num,
  type Obj,
  obj,
  oneOf,
  optBool,
  optNum,
  optStr,
  str,
} from './validate.js';
import { isResponsesWebSearch, WEB_SEARCH_TOOL } from './web-search.js';

// ---------------------------------------------------------------------------------------------
// Wire types (what Gatehouse emits; a structural subset of the official SDK's types)
// ---------------------------------------------------------------------------------------------

export interface ResponsesLogprob {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: { token: string; logprob: number; bytes: number[] }[];
}

export interface ResponsesUrlCitation {
  type: 'url_citation';
  url: string;
  title: string;
  start_index: number;
  end_index: number;
}

export interface ResponsesOutputText {
  type: 'output_text';
  text: string;
  annotations: ResponsesUrlCitation[];
  logprobs: ResponsesLogprob[];
}

/** A web search the provider ran (its query, '' when the provider does not say; the pages found). */
export interface ResponsesWebSearchCallItem {
  type: 'web_search_call';
  id: string;
  status: 'in_progress' | 'searching' | 'completed';
  action: { type: 'search'; query: string; sources?: { type: 'url'; url: string }[] };
}

export interface ResponsesRefusal {
  type: 'refusal';
  refusal: string;
}

export type ItemStatus = 'in_progress' | 'completed' | 'incomplete';

export interface ResponsesReasoningItem {
  type: 'reasoning';
  id: string;
  summary: { type: 'summary_text'; text: string }[];
  /** The answer's `reasoning_details`, Gatehouse's opaque state (see reasoning-state.ts). */
  encrypted_content?: string;
}

export interface ResponsesMessageItem {
  type: 'message';
  id: string;
  role: 'assistant';
  status: ItemStatus;
  content: (ResponsesOutputText | ResponsesRefusal)[];
}

export type { ResponsesToolCallItem } from './responses-tools.js';

export type ResponsesOutputItem =
  | ResponsesReasoningItem
  | ResponsesMessageItem
  | ResponsesToolCallItem
  | ResponsesWebSearchCallItem;

export interface ResponsesUsage extends Partial<ResponsesCost> {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

/** What a call cost, as OpenRouter's Responses `usage` reports it (credits charged, BYOK cost). */
export interface ResponsesCost {
  cost: number;
  is_byok: boolean;
  cost_details: {
    upstream_inference_cost: number | null;
    upstream_inference_input_cost: number;
    upstream_inference_output_cost: number;
  };
}

/** How the response encoders fill what the canonical response does not carry. */
export interface ResponsesEncodeOptions {
  /**
   * The id a stream's response and items are named by (the endpoint passes the generation id,
   * unique where upstream ids need not be); default: the first chunk's id.
   */
  id?: string;
  /** The cost fields of the final `usage`, priced from its token counts. */
  cost?: (usage: Usage) => ResponsesCost;
  /** The clock of `completed_at` (ms since the epoch); `Date.now` by default. */
  now?: () => number;
}

export type ResponsesTextFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | {
      type: 'json_schema';
      name: string;
      schema: Record<string, unknown>;
      strict: boolean | null;
      description?: string;
    };

export interface ResponsesFunctionTool {
  type: 'function';
  name: string;
  description: string | null;
  parameters: Record<string, unknown> | null;
  strict: boolean | null;
}

/**
 * The web search tool as OpenAI echoes it (its defaults filled in), under the caller's own type;
 * OpenRouter's `openrouter:web_search` as sent (its parameters the canonical search carried).
 */
export type ResponsesWebSearchTool =
  | {
      type: 'web_search' | 'web_search_2025_08_26' | 'web_search_preview' | 'web_search_preview_2025_03_11';
      search_context_size: 'low' | 'medium' | 'high';
      user_location: WebSearchLocation | null;
      filters: { allowed_domains: string[] } | null;
    }
  | { type: 'openrouter:web_search'; parameters: Record<string, unknown> };

export type ResponsesToolChoice = 'none' | 'auto' | 'required' | { type: 'function'; name: string };

export interface ResponsesResponse {
  id: string;
  object: 'response';
  created_at: number;
  /** When the response completed (seconds); null until then, and for incomplete or failed ones. */
  completed_at: number | null;
  status: 'in_progress' | 'completed' | 'incomplete' | 'failed';
  background: boolean;
  error: { code: 'server_error'; message: string } | null;
  frequency_penalty: number | null;
  incomplete_details: { reason: 'max_output_tokens' | 'content_filter' } | null;
  instructions: null;
  max_output_tokens: number | null;
  metadata: Record<string, string>;
  model: string;
  output: ResponsesOutputItem[];
  /** SDK convenience, sent anyway: the text of every output_text part, joined. */
  output_text: string;
  parallel_tool_calls: boolean;
  presence_penalty: number | null;
  /** Set by the endpoint from the request (the stored-responses domain). */
  previous_response_id: string | null;
  reasoning: { effort: ReasoningConfig['effort'] | null; summary: null };
  store: boolean;
  temperature: number | null;
  text: { format: ResponsesTextFormat };
  tool_choice: ResponsesToolChoice;
  tools: (ResponsesFunctionTool | ResponsesWebSearchTool)[];
  top_p: number | null;
  truncation: 'disabled';
  usage?: ResponsesUsage;
  user?: string;
}

type OutputTextPart = ResponsesOutputText;
type SummaryPart = { type: 'summary_text'; text: string };

export type ResponsesStreamEvent =
  | { type: 'response.created'; sequence_number: number; response: ResponsesResponse }
  | { type: 'response.in_progress'; sequence_number: number; response: ResponsesResponse }
  | { type: 'response.completed'; sequence_number: number; response: ResponsesResponse }
  | { type: 'response.incomplete'; sequence_number: number; response: ResponsesResponse }
  | { type: 'response.failed'; sequence_number: number; response: ResponsesResponse }
  | {
      type: 'response.output_item.added';
      sequence_number: number;
      output_index: number;
      item: ResponsesOutputItem;
    }
  | {
      type: 'response.output_item.done';
      sequence_number: number;
      output_index: number;
      item: ResponsesOutputItem;
    }
  | {
      type: 'response.content_part.added' | 'response.content_part.done';
      sequence_number: number;
      item_id: string;
      output_index: number;
      content_index: number;
      part: OutputTextPart;
    }
  | {
      type: 'response.output_text.delta';
      sequence_number: number;
      item_id: string;
      output_index: number;
      content_index: number;
      delta: string;
      logprobs: ResponsesLogprob[];
    }
  | {
      type: 'response.output_text.done';
      sequence_number: number;
      item_id: string;
      output_index: number;
      content_index: number;
      text: string;
      logprobs: ResponsesLogprob[];
    }
  | {
      type: 'response.reasoning_summary_part.added' | 'response.reasoning_summary_part.done';
      sequence_number: number;
      item_id: string;
      output_index: number;
      summary_index: number;
      part: SummaryPart;
    }
  | {
      type: 'response.reasoning_summary_text.delta';
      sequence_number: number;
      item_id: string;
      output_index: number;
      summary_index: number;
      delta: string;
    }
  | {
      type: 'response.reasoning_summary_text.done';
      sequence_number: number;
      item_id: string;
      output_index: number;
      summary_index: number;
      text: string;
    }
  | {
      type: 'response.function_call_arguments.delta';
      sequence_number: number;
      item_id: string;
      output_index: number;
      delta: string;
    }
  | {
      type: 'response.function_call_arguments.done';
      sequence_number: number;
      item_id: string;
      output_index: number;
      /** The function's name (OpenRouter's client requires it). */
      name: string;
      arguments: string;
    }
  | {
      type: 'response.custom_tool_call_input.delta';
      sequence_number: number;
      item_id: string;
      output_index: number;
      delta: string;
    }
  | {
      type: 'response.custom_tool_call_input.done';
      sequence_number: number;
      item_id: string;
      output_index: number;
      input: string;
    }
  | {
      type:
        | 'response.web_search_call.in_progress'
        | 'response.web_search_call.searching'
        | 'response.web_search_call.completed';
      sequence_number: number;
      item_id: string;
      output_index: number;
    }
  | {
      type: 'response.output_text.annotation.added';
      sequence_number: number;
      item_id: string;
      output_index: number;
      content_index: number;
      annotation_index: number;
      annotation: ResponsesUrlCitation;
    }
  | { type: 'error'; sequence_number: number; code: 'server_error'; message: string; param: null };

/** One SSE frame: `event` is the event name (equal to `data.type`). */
export interface ResponsesSseEvent {
  event: ResponsesStreamEvent['type'];
  data: ResponsesStreamEvent;
}

// ---------------------------------------------------------------------------------------------
// Request: Responses → canonical
// ---------------------------------------------------------------------------------------------

const NOT_STORED =
  'stored responses can be referenced only on POST /responses; send the full conversation in `input` instead';
const NO_CONVERSATION =
  'conversations can be named only on POST /responses; send the full conversation in `input` instead';

function refuseStatefulFields(b: Obj): void {
  if (given(b.previous_response_id)) fail('previous_response_id', NOT_STORED);
  if (given(b.conversation)) fail('conversation', NO_CONVERSATION);
  if (given(b.prompt)) fail('prompt', 'stored prompt templates are not supported');
}

function inputContent(content: unknown, path: string, allowImages: boolean): string | ContentPart[] {
  if (typeof content === 'string') return content;
  return arr(content, path).map((raw, i): ContentPart => {
    const p = `${path}[${i}]`;
    const part = obj(raw, p);
    // OpenAI's `prompt_cache_breakpoint` is a breakpoint on the part (Anthropic's cache_control).
    return withPartBreakpoint(inputPart(part, p, allowImages), part, p);
  });
}

function inputPart(part: Obj, p: string, allowImages: boolean): ContentPart {
  switch (part.type) {
    case 'input_text':
      return { type: 'text', text: str(part.text, `${p}.text`) };
    case 'input_image': {
      if (!allowImages) return fail(`${p}.type`, 'images are only allowed in user messages');
      if (given(part.file_id))
        return fail(`${p}.file_id`, 'file ids are not supported; send image_url (a URL or data: URL)');
      const url = nonEmptyStr(part.image_url, `${p}.image_url`);
      const detail = given(part.detail) ? oneOf(part.detail, `${p}.detail`, IMAGE_DETAILS) : undefined;
      return { type: 'image_url', image_url: detail ? { url, detail } : { url } };
    }
    case 'input_file': {
      if (!allowImages) return fail(`${p}.type`, 'files are only allowed in user messages');
      // A file at a URL (`file_url`) is the canonical part's `file_data` URL.
      if (given(part.file_url)) return filePart({ ...part, file_data: part.file_url }, p, `${p}.file_url`);
      return filePart(part, p);
    }
    case 'input_video': {
      // OpenRouter's video part: its URL (a data: URL or a link) is the canonical video_url's.
      if (!allowImages) return fail(`${p}.type`, 'videos are only allowed in user messages');
      return { type: 'video_url', video_url: { url: nonEmptyStr(part.video_url, `${p}.video_url`) } };
    }
    case 'input_audio':
      return fail(`${p}.type`, "'input_audio' content is not supported");
    default:
      return fail(`${p}.type`, `'${String(part.type)}' content is not supported here`);
  }
}

function assistantText(content: unknown, path: string): string {
  if (typeof content === 'string') return content;
  return arr(content, path)
    .map((raw, i) => {
      const p = `${path}[${i}]`;
      const part = obj(raw, p);
      if (part.type === 'output_text' || part.type === 'input_text') return str(part.text, `${p}.text`);
      if (part.type === 'refusal') return str(part.refusal, `${p}.refusal`);
      return fail(`${p}.type`, `'${String(part.type)}' content is not supported in assistant messages`);
    })
    .join('');
}

function reasoningText(item: Obj, path: string): string {
  const texts: string[] = [];
  if (given(item.summary)) {
    for (const [i, raw] of arr(item.summary, `${path}.summary`).entries()) {
      texts.push(str(obj(raw, `${path}.summary[${i}]`).text, `${path}.summary[${i}].text`));
    }
  }
  if (texts.length === 0 && Array.isArray(item.content)) {
    for (const [i, raw] of item.content.entries()) {
      const part = obj(raw, `${path}.content[${i}]`);
      if (part.type === 'reasoning_text') texts.push(str(part.text, `${path}.content[${i}].text`));
    }
  }
  return texts.join('\n\n');
}

function toolOutput(v: unknown, path: string): string | ContentPart[] {
  if (typeof v === 'string') return v;
  const parts = inputContent(v, path, true);
  return typeof parts !== 'string' && parts.every((p) => p.type === 'text')
    ? parts.map((p) => (p as { text: string }).text).join('')
    : parts;
}

/** Tools a client tool search loaded (`tool_search_output`): a tool the request declares itself wins. */
const searched = new WeakSet<ToolDefinition>();

/** The input as messages; tools from `additional_tools` items go to `tools`, dropped paths to `dropped`. */
function inputMessages(input: unknown, dropped: string[], tools: ToolDefinition[]): ChatMessage[] {
  if (typeof input === 'string') return [{ role: 'user', content: input }];
  const items = arr(input, 'input');
  const out: ChatMessage[] = [];
  let turn: {
    text: string | null;
    reasoning: string[];
    details: ReasoningDetail[];
    toolCalls: ToolCall[];
  } | null = null;
  const assistantTurn = () => {
    turn ??= { text: null, reasoning: [], details: [], toolCalls: [] };
    return turn;
  };
  const closeTurn = () => {
    if (!turn) return;
    const t = turn;
    turn = null;
    if (t.text === null && t.toolCalls.length === 0 && t.reasoning.length === 0 && t.details.length === 0)
      return;
    const m: ChatMessage = { role: 'assistant', content: t.text };
    if (t.reasoning.length) m.reasoning = t.reasoning.join('\n\n');
    // One answer's entries may be split over several items (see the stream encoder): merged here.
    if (t.details.length) m.reasoning_details = collapseReasoningDetails(t.details);
    if (t.toolCalls.length) m.tool_calls = t.toolCalls;
    out.push(m);
  };

  for (const [i, raw] of items.entries()) {
    const p = `input[${i}]`;
    const item = obj(raw, p);
    const type = item.type ?? (given(item.role) ? 'message' : undefined);
    switch (type) {
      case 'message': {
        const role = oneOf(item.role, `${p}.role`, ['user', 'assistant', 'system', 'developer'] as const);
        if (role === 'assistant') {
          const t = assistantTurn();
          t.text = (t.text ?? '') + assistantText(item.content, `${p}.content`);
        } else {
          closeTurn();
          out.push({ role, content: inputContent(item.content, `${p}.content`, role === 'user') });
        }
        break;
      }
      case 'reasoning': {
        const text = reasoningText(item, p);
        const t = assistantTurn();
        if (text) t.reasoning.push(text);
        t.details.push(...decodeReasoningState(item.encrypted_content));
        break;
      }
      case 'function_call':
      case 'custom_tool_call':
      case 'local_shell_call':
        assistantTurn().toolCalls.push(historyToolCall(item, p));
        break;
      case 'tool_search_call':
        // A search the caller ran (its tool_search is a function to the model); a hosted one OpenAI
        // ran, like a web search, is nothing another provider can be shown.
        if (item.execution === 'client') assistantTurn().toolCalls.push(historyToolCall(item, p));
        else dropped.push(p);
        break;
      case 'tool_search_output': {
        if (item.execution !== 'client') {
          dropped.push(p);
          break;
        }
        // The tools it loaded are offered from here on (once: a search may find one again); the
        // model is told which they are.
        const t = responsesTools(item.tools ?? [], `${p}.tools`);
        for (const tool of t.tools) {
          if (tools.some((x) => x.function.name === tool.function.name)) continue;
          searched.add(tool);
          tools.push(tool);
        }
        dropped.push(...t.dropped);
        closeTurn();
        out.push({
          role: 'tool',
          tool_call_id: nonEmptyStr(item.call_id, `${p}.call_id`),
          content: JSON.stringify({ loaded_tools: t.tools.map((tool) => tool.function.name) }),
        });
        break;
      }
      case 'web_search_call':
        dropped.push(p);
        break;
      case 'additional_tools': {
        const t = responsesTools(item.tools, `${p}.tools`);
        tools.push(...t.tools);
        dropped.push(...t.dropped);
        break;
      }
      case 'function_call_output':
      case 'custom_tool_call_output':
      case 'local_shell_call_output':
        closeTurn();
        out.push({
          role: 'tool',
          tool_call_id: nonEmptyStr(item.call_id, `${p}.call_id`),
          content: toolOutput(item.output, `${p}.output`),
        });
        break;
      case 'item_reference':
        fail(`${p}.type`, `'item_reference' is not supported here: ${NOT_STORED}`);
        break;
      case 'compaction':
        // Gatehouse's own are opened before translation (the compaction service): one here is
        // OpenAI's, whose summary only OpenAI can read.
        fail(
          p,
          isGatehouseCompaction(item.encrypted_content)
            ? 'a Gatehouse compaction item cannot be read here'
            : "this compaction item was made by OpenAI's compact endpoint and is encrypted by OpenAI: only OpenAI's models can read it (compact with this model through Gatehouse to continue on it)",
        );
        break;
      default:
        fail(`${p}.type`, `'${String(type)}' input items are not supported`);
    }
  }
  closeTurn();
  return out;
}

function toolChoice(v: unknown): ToolChoice | undefined {
  if (typeof v === 'string') return oneOf(v, 'tool_choice', ['none', 'auto', 'required'] as const);
  const tc = obj(v, 'tool_choice');
  // Forcing the web search: no provider can be made to search, the model decides (listed).
  if (isResponsesWebSearch(tc.type)) return undefined;
  if (tc.type === 'function' || tc.type === 'custom') {
    const name = nonEmptyStr(tc.name, 'tool_choice.name');
    return {
      type: 'function',
      function: { name: flatName(name, optStr(tc.namespace, 'tool_choice.namespace')) },
    };
  }
  return fail(
    'tool_choice.type',
    `'${String(tc.type)}' is not supported (only none, auto, required or a function)`,
  );
}

function responseFormat(v: unknown): ResponseFormat | undefined {
  const text = obj(v, 'text');
  if (!given(text.format)) return undefined;
  const f = obj(text.format, 'text.format');
  switch (f.type) {
    case 'text':
      return { type: 'text' };
    case 'json_object':
      return { type: 'json_object' };
    case 'json_schema': {
      const js: Extract<ResponseFormat, { type: 'json_schema' }>['json_schema'] = {
        name: nonEmptyStr(f.name, 'text.format.name'),
        schema: obj(f.schema, 'text.format.schema'),
      };
      const description = optStr(f.description, 'text.format.description');
      if (description !== undefined) js.description = description;
      const strict = optBool(f.strict, 'text.format.strict');
      if (strict !== undefined) js.strict = strict;
      return { type: 'json_schema', json_schema: js };
    }
    default:
      return fail('text.format.type', "must be one of 'text', 'json_object', 'json_schema'");
  }
}

/** Validates an OpenAI Responses request body and translates it to a canonical chat request. */
export function responsesRequestToChat(body: unknown): ChatRequest {
  const b = obj(body, 'body');
  refuseStatefulFields(b);
  const model = nonEmptyStr(b.model, 'model');

  const messages: ChatMessage[] = [];
  const dropped: string[] = [];
  const instructions = optStr(b.instructions, 'instructions');
  if (instructions) messages.push({ role: 'system', content: instructions });
  if (!given(b.input)) fail('input', 'is required');
  if (Array.isArray(b.input) && b.input.length === 0) fail('input', 'must not be empty');
  const inputTools: ToolDefinition[] = [];
  messages.push(...inputMessages(b.input, dropped, inputTools));

  const req: ChatRequest = { model, messages };
  req.max_tokens = optNum(b.max_output_tokens, 'max_output_tokens', { integer: true, min: 1 });
  req.temperature = optNum(b.temperature, 'temperature', { min: 0, max: 2 });
  req.top_p = optNum(b.top_p, 'top_p', { min: 0, max: 1 });
  req.presence_penalty = optNum(b.presence_penalty, 'presence_penalty', { min: -2, max: 2 });
  req.frequency_penalty = optNum(b.frequency_penalty, 'frequency_penalty', { min: -2, max: 2 });
  let tools = [...inputTools];
  if (given(b.tools)) {
    const t = responsesTools(b.tools);
    const declared = new Set(t.tools.map((tool) => tool.function.name));
    tools = tools.filter((tool) => !(searched.has(tool) && declared.has(tool.function.name)));
    tools.push(...t.tools);
    dropped.push(...t.dropped);
    if (t.web_search) req.web_search = t.web_search;
  }
  assertUniqueNames(tools);
  if (tools.length) req.tools = tools;
  // OpenAI's allowed_tools: the listed tools alone, with the choice's mode.
  if (isAllowedToolsChoice(b.tool_choice))
    Object.assign(req, restrictTools(req.tools, responsesAllowedTools(b.tool_choice, flatName)));
  else if (given(b.tool_choice)) {
    req.tool_choice = toolChoice(b.tool_choice);
    if (req.tool_choice === undefined) dropped.push('tool_choice');
  }
  req.parallel_tool_calls = optBool(b.parallel_tool_calls, 'parallel_tool_calls');
  if (given(b.text)) req.response_format = responseFormat(b.text);
  if (given(b.reasoning)) {
    const r = obj(b.reasoning, 'reasoning');
    if (given(r.effort)) {
      const effort = oneOf(r.effort, 'reasoning.effort', [
        'none',
        'minimal',
        'low',
        'medium',
        'high',
        'xhigh',
        'max',
      ] as const);
      if (effort !== 'none') req.reasoning = { effort };
    }
  }
  if (given(b.include)) {
    for (const [i, v] of arr(b.include, 'include').entries()) {
      const value = str(v, `include[${i}]`);
      if (value === 'message.output_text.logprobs') req.logprobs = true;
      // Reasoning state comes back whether asked or not (see the response mapping above).
      else if (value !== 'reasoning.encrypted_content') dropped.push(`include[${i}]`);
    }
  }
  const text = b.text && typeof b.text === 'object' ? (b.text as Obj) : {};
  Object.assign(req, openAiHints(b, { value: text.verbosity, path: 'text.verbosity' }));
  if (given(b.top_logprobs)) {
    req.top_logprobs = num(b.top_logprobs, 'top_logprobs', { integer: true, min: 0, max: 20 });
    if (req.top_logprobs > 0) req.logprobs = true;
  }
  req.user = optStr(b.user, 'user');
  if (optBool(b.stream, 'stream')) {
    req.stream = true;
    req.stream_options = { include_usage: true };
  }
  // Context housekeeping and a cap on built-in tool calls (none run on a translated call): the
  // answer is the same without them unless the context overflows, which the provider then reports.
  // Served in the foreground: the answer comes when it is done (a client polling it is answered at once).
  if (b.background === true) dropped.push('background');
  if (b.truncation === 'auto') dropped.push('truncation');
  if (given(b.max_tool_calls)) dropped.push('max_tool_calls');
  if (dropped.length) req.dropped = dropped;
  return compact(req);
}

// ---------------------------------------------------------------------------------------------
// Response: canonical → Responses
// ---------------------------------------------------------------------------------------------

export const responseId = (chatId: string): string => `resp_${idBase(chatId)}`;

const itemId = (prefix: 'rs' | 'msg' | 'fc' | 'ws', base: string, index: number) =>
  `${prefix}_${base}_${index}`;

const responsesCitation = ({ url_citation: c }: UrlCitation): ResponsesUrlCitation => ({
  type: 'url_citation',
  url: c.url,
  title: c.title,
  start_index: c.start_index,
  end_index: c.end_index,
});

function incompleteReason(finish: FinishReason | null): 'max_output_tokens' | 'content_filter' | null {
  if (finish === 'length') return 'max_output_tokens';
  if (finish === 'content_filter') return 'content_filter';
  return null;
}

/** Canonical usage → Responses usage (input_tokens include cached tokens, as OpenAI counts them). */
export function responsesUsage(u: Usage | null | undefined): ResponsesUsage {
  const input = u?.prompt_tokens ?? 0;
  const output = u?.completion_tokens ?? 0;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: u?.prompt_tokens_details?.cached_tokens ?? 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: u?.completion_tokens_details?.reasoning_tokens ?? 0 },
    total_tokens: u?.total_tokens ?? input + output,
  };
}

function logprobs(entries: LogprobEntry[] | undefined): ResponsesLogprob[] {
  return (entries ?? []).map((e) => ({
    token: e.token,
    logprob: e.logprob,
    bytes: e.bytes ?? [],
    top_logprobs: (e.top_logprobs ?? []).map((t) => ({
      token: t.token,
      logprob: t.logprob,
      bytes: t.bytes ?? [],
    })),
  }));
}

function textFormat(rf: ResponseFormat | undefined): ResponsesTextFormat {
  if (!rf || rf.type === 'text') return { type: 'text' };
  if (rf.type === 'json_object') return { type: 'json_object' };
  const f: ResponsesTextFormat = {
    type: 'json_schema',
    name: rf.json_schema.name,
    schema: rf.json_schema.schema ?? {},
    strict: rf.json_schema.strict ?? null,
  };
  if (rf.json_schema.description !== undefined) f.description = rf.json_schema.description;
  return f;
}

function echoToolChoice(tc: ToolChoice | undefined): ResponsesToolChoice {
  if (tc === undefined) return 'auto';
  return typeof tc === 'string' ? tc : { type: 'function', name: tc.function.name };
}

/** The caller's web search tool, as OpenAI echoes it (none for a search asked another way). */
function echoWebSearch(ws: WebSearchRequest | undefined): ResponsesWebSearchTool[] {
  if (!ws?.origin) return [];
  if (ws.origin === WEB_SEARCH_TOOL)
    return [
      {
        type: WEB_SEARCH_TOOL,
        parameters: compact({
          max_uses: ws.max_uses,
          allowed_domains: ws.allowed_domains,
          excluded_domains: ws.blocked_domains,
          search_context_size: ws.search_context_size,
          user_location: ws.user_location,
        }),
      },
    ];
  return [
    {
      type: ws.origin as Exclude<ResponsesWebSearchTool['type'], typeof WEB_SEARCH_TOOL>,
      search_context_size: ws.search_context_size ?? 'medium',
      user_location: ws.user_location ?? null,
      filters: ws.allowed_domains ? { allowed_domains: ws.allowed_domains } : null,
    },
  ];
}

/** The response envelope: ids and the request parameters OpenAI echoes back. */
function envelope(id: string, created: number, model: string, request?: ChatRequest): ResponsesResponse {
  const r: ResponsesResponse = {
    id: responseId(id),
    object: 'response',
    created_at: created,
    completed_at: null,
    status: 'in_progress',
    background: false,
    error: null,
    frequency_penalty: request?.frequency_penalty ?? null,
    incomplete_details: null,
    instructions: null,
    max_output_tokens: request?.max_tokens ?? null,
    metadata: {},
    model,
    output: [],
    output_text: '',
    parallel_tool_calls: request?.parallel_tool_calls ?? true,
    presence_penalty: request?.presence_penalty ?? null,
    previous_response_id: null,
    reasoning: { effort: request?.reasoning?.effort ?? null, summary: null },
    store: false,
    temperature: request?.temperature ?? null,
    text: { format: textFormat(request?.response_format) },
    tool_choice: echoToolChoice(request?.tool_choice),
    tools: [
      ...(request?.tools ?? []).map(
        (t): ResponsesFunctionTool => ({
          type: 'function',
          name: t.function.name,
          description: t.function.description ?? null,
          parameters: t.function.parameters ?? null,
          strict: t.function.strict ?? null,
        }),
      ),
      ...echoWebSearch(request?.web_search),
    ],
    top_p: request?.top_p ?? null,
    truncation: 'disabled',
  };
  if (request?.user !== undefined) r.user = request.user;
  return r;
}

function outputItem(
  block: Block,
  base: string,
  index: number,
  status: ItemStatus,
  origins: ToolOrigins,
): ResponsesOutputItem {
  switch (block.kind) {
    case 'reasoning':
      return {
        type: 'reasoning',
        id: itemId('rs', base, index),
        // No text: an item that only carries reasoning state (see reasoningState).
        summary: block.text ? [{ type: 'summary_text', text: block.text }] : [],
      };
    case 'text':
      return {
        type: 'message',
        id: itemId('msg', base, index),
        role: 'assistant',
        status,
        content: [
          {
            type: 'output_text',
            text: block.text,
            annotations: (block.annotations ?? []).map(responsesCitation),
            logprobs: logprobs(block.logprobs),
          },
        ],
      };
    case 'search': {
      const { query, sources } = block.call;
      return {
        type: 'web_search_call',
        id: itemId('ws', base, index),
        status: 'completed',
        action: {
          type: 'search',
          query: query ?? '',
          ...(sources.length ? { sources: sources.map((x) => ({ type: 'url' as const, url: x.url })) } : {}),
        },
      };
    }
    case 'refusal':
      return {
        type: 'message',
        id: itemId('msg', base, index),
        role: 'assistant',
        status,
        content: [{ type: 'refusal', refusal: block.text }],
      };
    case 'tool':
      return toolCallItem(
        { id: itemId('fc', base, index), call_id: block.id, name: block.name, arguments: block.arguments },
        status,
        origins,
      );
  }
}

/** Blocks → output items; a refusal right after text joins that text's message item. */
function outputItems(
  blocks: Block[],
  base: string,
  incomplete: boolean,
  origins: ToolOrigins,
): ResponsesOutputItem[] {
  const items: ResponsesOutputItem[] = [];
  for (const [i, block] of blocks.entries()) {
    const status: ItemStatus = incomplete && i === blocks.length - 1 ? 'incomplete' : 'completed';
    const prev = items.at(-1);
    if (block.kind === 'refusal' && prev?.type === 'message') {
      prev.content.push({ type: 'refusal', refusal: block.text });
      prev.status = status;
      continue;
    }
    items.push(outputItem(block, base, items.length, status, origins));
  }
  return items;
}

/** What the official SDK computes as `output_text`. */
/** The SDK convenience `output_text`: every output_text part of the message items, joined. */
export function outputText(output: ResponsesOutputItem[]): string {
  return output
    .flatMap((item) => (item.type === 'message' ? item.content : []))
    .map((part) => (part.type === 'output_text' ? part.text : ''))
    .join('');
}

/**
 * Where the answer's reasoning state goes in the output: `byId` on those reasoning items,
 * `trailing` (a stream's state-only item) after the rest.
 */
interface ReasoningStates {
  byId: Map<string, string>;
  trailing?: ResponsesReasoningItem;
}

function finalResponse(
  env: ResponsesResponse,
  base: string,
  blocks: Block[],
  finish: FinishReason | null,
  usage: Usage | null | undefined,
  opts: ResponsesEncodeOptions,
  origins: ToolOrigins,
  states?: ReasoningStates,
): ResponsesResponse {
  const reason = incompleteReason(finish);
  const output = outputItems(blocks, base, reason !== null, origins);
  for (const item of output) {
    const state = item.type === 'reasoning' ? states?.byId.get(item.id) : undefined;
    if (state !== undefined) (item as ResponsesReasoningItem).encrypted_content = state;
  }
  if (states?.trailing) output.push(states.trailing);
  const tokens = responsesUsage(usage);
  return {
    ...env,
    status: reason ? 'incomplete' : 'completed',
    completed_at: reason ? null : Math.floor((opts.now ?? Date.now)() / 1000),
    incomplete_details: reason ? { reason } : null,
    output,
    output_text: outputText(output),
    usage: usage && opts.cost ? { ...tokens, ...opts.cost(usage) } : tokens,
  };
}

/**
 * A canonical chat response as a Responses `Response`. `model` is the model the caller asked for;
 * pass the canonical `request` to echo its parameters (tools, tool_choice, temperature, …) the way
 * OpenAI does — without it they are reported as defaults.
 */
export function chatResponseToResponses(
  res: ChatResponse,
  model: string,
  request?: ChatRequest,
  opts: ResponsesEncodeOptions = {},
): ResponsesResponse {
  const { blocks, finish } = responseBlocks(res);
  const base = idBase(res.id);
  const byId = new Map<string, string>();
  const state = encodeReasoningState(res.choices[0]?.message.reasoning_details);
  if (state !== undefined) {
    // On the first reasoning item; without reasoning text, on one of its own leading the output.
    let first = blocks.findIndex((b) => b.kind === 'reasoning');
    if (first < 0) {
      blocks.unshift({ kind: 'reasoning', text: '' });
      first = 0;
    }
    byId.set(itemId('rs', base, first), state);
  }
  return finalResponse(
    envelope(res.id, res.created, model, request),
    base,
    blocks,
    finish,
    res.usage,
    opts,
    toolOrigins(request?.tools),
    { byId },
  );
}

/**
 * A canonical chunk stream as Responses SSE events (with `sequence_number` from 0):
 * response.created → response.in_progress → per item output_item.added, then for text
 * content_part.added / output_text.delta… / output_text.done / content_part.done, for reasoning
 * reasoning_summary_part.added / reasoning_summary_text.delta… / .done / part.done, for function
 * calls function_call_arguments.delta… / .done (a custom tool's call: custom_tool_call_input.delta
 * and .done with the whole input once it is known; a local_shell call: its item only) →
 * output_item.done → response.completed (or
 * response.incomplete) carrying the full response and usage. If the input fails, `response.failed`
 * then an `error` event are the last things emitted (the iterator's error is not rethrown).
 * `id` names the response and its items (as `chatResponseToResponses` takes the response's id; the
 * endpoint passes the generation id, unique where upstream ids need not be); default: the first
 * chunk's id.
 */
export async function* chatStreamToResponses(
  chunks: AsyncIterable<ChatChunk>,
  model: string,
  request?: ChatRequest,
  opts: ResponsesEncodeOptions = {},
): AsyncGenerator<ResponsesSseEvent> {
  let seq = 0;
  const origins = toolOrigins(request?.tools);
  /** Output indexes of tool calls that are not function_call items (no argument events). */
  const nonFunction = new Set<number>();
  let env: ResponsesResponse | null = null;
  let base = '';
  const done: ResponsesOutputItem[] = [];
  // Event payloads without `sequence_number`; emit() numbers them.
  type Payload = ResponsesStreamEvent extends infer E
    ? E extends unknown
      ? Omit<E, 'sequence_number'>
      : never
    : never;
  const emit = (payload: Payload): ResponsesSseEvent => {
    const data = { ...payload, sequence_number: seq++ } as ResponsesStreamEvent;
    return { event: data.type, data };
  };
  const snapshot = (): ResponsesResponse => ({
    ...(env as ResponsesResponse),
    output: [...done],
    output_text: outputText(done),
  });
  // The reasoning_details fragments seen so far (the segmenter reads text only), and how many of
  // them reasoning items already carry.
  const details: ReasoningDetail[] = [];
  let carried = 0;
  const states: ReasoningStates = { byId: new Map() };
  const uncarried = (): string | undefined => {
    const state = encodeReasoningState(details.slice(carried));
    carried = details.length;
    return state;
  };
  async function* tapped(): AsyncGenerator<ChatChunk> {
    for await (const chunk of chunks) {
      for (const c of chunk.choices) if (c.index === 0) details.push(...(c.delta?.reasoning_details ?? []));
      yield chunk;
    }
  }

  for await (const s of segmentChatStream(tapped())) {
    switch (s.type) {
      case 'begin':
        env = envelope(opts.id ?? s.id, s.created, model, request);
        base = idBase(opts.id ?? s.id);
        yield emit({ type: 'response.created', response: snapshot() });
        yield emit({ type: 'response.in_progress', response: snapshot() });
        break;
      case 'open': {
        const output_index = s.index;
        const item = outputItem(s.block, base, output_index, 'in_progress', origins);
        if (item.type === 'web_search_call') {
          // The search ran before the answer came: its events all at once, as OpenAI's end.
          const ref = { item_id: item.id, output_index };
          yield emit({
            type: 'response.output_item.added',
            output_index,
            item: { ...item, status: 'in_progress' },
          });
          yield emit({ type: 'response.web_search_call.in_progress', ...ref });
          yield emit({ type: 'response.web_search_call.searching', ...ref });
          yield emit({ type: 'response.web_search_call.completed', ...ref });
          break;
        }
        if (item.type !== 'function_call' && item.type !== 'message' && item.type !== 'reasoning')
          nonFunction.add(output_index);
        if (item.type === 'message') item.content = [];
        if (item.type === 'reasoning') item.summary = [];
        yield emit({ type: 'response.output_item.added', output_index, item });
        if (item.type === 'message') {
          yield emit({
            type: 'response.content_part.added',
            item_id: item.id,
            output_index,
            content_index: 0,
            part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
          });
        } else if (item.type === 'reasoning') {
          yield emit({
            type: 'response.reasoning_summary_part.added',
            item_id: item.id,
            output_index,
            summary_index: 0,
            part: { type: 'summary_text', text: '' },
          });
        }
        break;
      }
      case 'annotation':
        yield emit({
          type: 'response.output_text.annotation.added',
          item_id: itemId('msg', base, s.index),
          output_index: s.index,
          content_index: 0,
          annotation_index: s.annotationIndex,
          annotation: responsesCitation(s.annotation),
        });
        break;
      case 'delta': {
        const output_index = s.index;
        if (s.kind === 'text') {
          yield emit({
            type: 'response.output_text.delta',
            item_id: itemId('msg', base, output_index),
            output_index,
            content_index: 0,
            delta: s.text,
            logprobs: logprobs(s.logprobs),
          });
        } else if (s.kind === 'reasoning') {
          yield emit({
            type: 'response.reasoning_summary_text.delta',
            item_id: itemId('rs', base, output_index),
            output_index,
            summary_index: 0,
            delta: s.text,
          });
        } else if (!nonFunction.has(output_index)) {
          yield emit({
            type: 'response.function_call_arguments.delta',
            item_id: itemId('fc', base, output_index),
            output_index,
            delta: s.text,
          });
        }
        break;
      }
      case 'close': {
        const output_index = s.index;
        const status: ItemStatus = s.final && incompleteReason(s.finish) ? 'incomplete' : 'completed';
        const item = outputItem(s.block, base, output_index, status, origins);
        if (item.type === 'message') {
          const part = item.content[0] as ResponsesOutputText;
          yield emit({
            type: 'response.output_text.done',
            item_id: item.id,
            output_index,
            content_index: 0,
            text: part.text,
            logprobs: part.logprobs,
          });
          yield emit({
            type: 'response.content_part.done',
            item_id: item.id,
            output_index,
            content_index: 0,
            part,
          });
        } else if (item.type === 'reasoning') {
          const state = uncarried();
          if (state !== undefined) {
            item.encrypted_content = state;
            states.byId.set(item.id, state);
          }
          const part = item.summary[0] as SummaryPart;
          yield emit({
            type: 'response.reasoning_summary_text.done',
            item_id: item.id,
            output_index,
            summary_index: 0,
            text: part.text,
          });
          yield emit({
            type: 'response.reasoning_summary_part.done',
            item_id: item.id,
            output_index,
            summary_index: 0,
            part,
          });
        } else if (item.type === 'function_call') {
          yield emit({
            type: 'response.function_call_arguments.done',
            item_id: item.id,
            output_index,
            name: item.name,
            arguments: item.arguments,
          });
        } else if (item.type === 'custom_tool_call') {
          const ref = { item_id: item.id, output_index };
          yield emit({ type: 'response.custom_tool_call_input.delta', ...ref, delta: item.input });
          yield emit({ type: 'response.custom_tool_call_input.done', ...ref, input: item.input });
        }
        done.push(item);
        yield emit({ type: 'response.output_item.done', output_index, item });
        break;
      }
      case 'end': {
        // Entries after the last reasoning item (a Gemini call's signature, a redacted block after
        // text) or without any: on a reasoning item of their own, last.
        const state = uncarried();
        if (state !== undefined) {
          const output_index = s.blocks.length;
          const item: ResponsesReasoningItem = {
            type: 'reasoning',
            id: itemId('rs', base, output_index),
            summary: [],
            encrypted_content: state,
          };
          yield emit({ type: 'response.output_item.added', output_index, item });
          done.push(item);
          yield emit({ type: 'response.output_item.done', output_index, item });
          states.trailing = item;
        }
        const response = finalResponse(
          env as ResponsesResponse,
          base,
          s.blocks,
          s.finish,
          s.usage,
          opts,
          origins,
          states,
        );
        yield emit({
          type: response.status === 'incomplete' ? 'response.incomplete' : 'response.completed',
          response,
        });
        break;
      }
      case 'error': {
        const error = { code: 'server_error' as const, message: s.message };
        if (env)
          yield emit({ type: 'response.failed', response: { ...snapshot(), status: 'failed', error } });
        yield emit({ type: 'error', ...error, param: null });
        return;
      }
    }
  }
}
