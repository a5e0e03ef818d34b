/**
 * Canonical chat ⇄ Anthropic Messages (`POST /v1/messages`, `anthropic-version: 2023-06-01`).
 *
 * Request:
 * - `system` and `developer` messages (wherever they are) → top-level `system`, joined by blank
 *   lines; as text blocks instead when any of them was given as parts or sets a cache breakpoint.
 * - Cache breakpoints (`cache_control`): a part's → its block's; a message's → the last block it
 *   gives (a tool message's: its `tool_result`); a tool's → the tool's; the request's → top-level
 *   `cache_control`. Past Anthropic's four, the earliest (tools, then system, then turns) go.
 * - user/assistant → content blocks; consecutive same-role turns are merged into one; consecutive
 *   `tool` messages → ONE user message of `tool_result` blocks (any user text after them follows
 *   in the same turn); assistant `tool_calls` → `tool_use` blocks with the arguments parsed
 *   (invalid JSON → TranslationError, i.e. a 400).
 * - Assistant reasoning in history goes back as Anthropic received it: the message's
 *   `reasoning_details` of format `anthropic-claude-v1` (REASONING_FORMATS.anthropic) become the
 *   FIRST blocks of that assistant turn, in order — `reasoning.text` with a signature →
 *   `{type:'thinking', thinking, signature}`, `reasoning.encrypted` → `{type:'redacted_thinking',
 *   data}`, text, signature and data exactly as received (fragments sharing an `index` merged
 *   first). Entries of another format (Gemini's, …), `reasoning.text` without a signature and
 *   `reasoning.summary` are not sent (Anthropic would reject them), nor is a bare `reasoning`
 *   string without details. Thinking blocks are left out of a turn that has nothing else (Anthropic
 *   refuses a turn ending with thinking) and of a merged turn that does not start with thinking,
 *   and every thinking block is left out of a request that does not enable thinking (Anthropic
 *   needs them only with thinking on).
 * - Tool loops: a request that continues a tool loop (it ends with tool results answering the last
 *   assistant turn) keeps thinking enabled only when that assistant turn starts with its thinking
 *   blocks; otherwise thinking is not enabled for the call (Anthropic rejects a thinking-enabled
 *   continuation whose last assistant turn has no thinking block).
 * - Images: `data:` URLs → `{type:'base64'}` sources, http(s) URLs → `{type:'url'}` sources.
 * - `max_tokens` is required by Anthropic: `max_completion_tokens ?? max_tokens`, else the model's
 *   maximum output as the catalog knows it for the endpoint (`maxOutput`: an OpenAI-format caller
 *   that names no limit expects none), else 4096 (`DEFAULT_MAX_TOKENS`); with thinking, no caller
 *   limit and no known maximum it is `budget + 4096`.
 * - `stop` → `stop_sequences`; `temperature` is clamped to Anthropic's [0, 1]; `top_k` as is;
 *   `user` (else `safety_identifier`) → `metadata.user_id`; `service_tier` auto/default →
 *   auto/standard_only (other tiers are not sent: see HINT_RULES); tools → `{name, description,
 *   input_schema}`; tool_choice auto/required/none/named → auto/any/none/tool;
 *   `parallel_tool_calls: false` → `disable_parallel_tool_use`; `web_search` → the
 *   `web_search_20250305` server tool after the functions (`webSearchTool`).
 * - `reasoning` → `thinking: {type:'enabled', budget_tokens}` (`reasoning.max_tokens`, else the
 *   effort table in `../reasoning.ts`; at least 1024 and below `max_tokens` — the caller's limit or
 *   the model's maximum — else no thinking).
 *   With thinking on, `temperature`/`top_p`/`top_k` are dropped (Anthropic requires the defaults)
 *   and a forced tool_choice (required/named) turns thinking off instead (Anthropic refuses the
 *   pair).
 * - `response_format: json_schema` → `output_config.format` (the schema in the subset Anthropic
 *   takes: `output-schema.ts`); `json_object`, `seed`, penalties and `logprobs` have no Anthropic
 *   equivalent (the engine refuses them before the call: `CAPABILITY_RULES`).
 *
 * Response / stream: text blocks joined, thinking → `reasoning` (joined) and, block by block in
 * order, `reasoning_details` (format `anthropic-claude-v1`, `index` 0, 1, …): thinking →
 * `reasoning.text` with its `signature` (in streams: `thinking_delta` → text fragments,
 * `signature_delta` → a fragment carrying the signature), redacted_thinking →
 * `reasoning.encrypted` with its `data`; both omitted with `reasoning.exclude`. tool_use →
 * tool_calls; stop_reason → finish_reason (the original in `native_finish_reason`);
 * usage.prompt_tokens = input + cache_read + cache_creation. Web search: `server_tool_use` blocks
 * named `web_search` and their `web_search_tool_result` → `web_search_calls` (query, pages; in
 * streams one delta per result block), the `web_search_result_location` citations of a text block →
 * `annotations` spanning that block's text (streams: on a delta when the block ends).
 */
import { ANTHROPIC_MAX_BREAKPOINTS, anthropicServiceTier } from '../../formats/capabilities.js';
import {
  type CacheControl,
  type ChatChunk,
  type ChatChunkToolCall,
  type ChatMessage,
  type ChatRequest,
  type ChatResponse,
  type ContentPart,
  type FileInput,
  type FinishReason,
  REASONING_FORMATS,
  type ReasoningDetail,
  type ToolCall,
  TranslationError,
  type UrlCitation,
  type Usage,
  type WebSearchCall,
  type WebSearchRequest,
} from '../../formats/chat.js';
import { detailsOfFormat } from '../../formats/reasoning-details.js';
import {
  base64Text,
  fileSource,
  isHttpUrl,
  isTextMedia,
  parseDataUrl,
  systemText,
  toolArgumentsObject,
} from '../content.js';
import { reasoningBudget } from '../reasoning.js';
import { UpstreamError } from '../types.js';
import { anthropicStreamError } from './errors.js';
import { anthropicOutputSchema } from './output-schema.js';

export const ANTHROPIC_VERSION = '2023-06-01';
/** The web search server tool's version Gatehouse sends (available on every Claude that searches). */
export const WEB_SEARCH_TYPE = 'web_search_20250305';
export const DEFAULT_MAX_TOKENS = 4096;
const MIN_THINKING_BUDGET = 1024;

type Block = Record<string, unknown>;
interface WireMessage {
  role: 'user' | 'assistant';
  content: Block[];
}
type Obj = Record<string, unknown>;
const obj = (x: unknown): Obj => (x && typeof x === 'object' ? (x as Obj) : {});

function imageBlock(url: string): Block {
  const data = parseDataUrl(url);
  if (data) return { type: 'image', source: { type: 'base64', media_type: data.mediaType, data: data.data } };
  if (isHttpUrl(url)) return { type: 'image', source: { type: 'url', url } };
  throw new TranslationError('image_url must be a data: URL or an http(s) URL');
}

/**
 * A file part as Anthropic's `document` block: a PDF inline or at a URL, a text file as text (the
 * two kinds of document Anthropic reads); the file name becomes its title.
 */
function documentBlock(file: FileInput): Block {
  const src = fileSource(file);
  let source: Block;
  if (src.kind === 'url') source = { type: 'url', url: src.url };
  else if (src.kind === 'id')
    throw new TranslationError("file ids belong to the provider that issued them: send the file's data");
  else if (isTextMedia(src.mediaType))
    source = { type: 'text', media_type: 'text/plain', data: base64Text(src.data) };
  else if (src.mediaType === 'application/pdf')
    source = { type: 'base64', media_type: 'application/pdf', data: src.data };
  else throw new TranslationError(`Anthropic takes PDF and text documents, not ${src.mediaType}`);
  return { type: 'document', source, ...(file.filename ? { title: file.filename } : {}) };
}

const withCache = (block: Block, cc: CacheControl | undefined): Block =>
  cc ? { ...block, cache_control: cc } : block;

function contentBlocks(content: ChatMessage['content']): Block[] {
  if (content == null) return [];
  if (typeof content === 'string') return content ? [{ type: 'text', text: content }] : [];
  return content.flatMap((p: ContentPart): Block[] => {
    if (p.type === 'text') return p.text ? [withCache({ type: 'text', text: p.text }, p.cache_control)] : [];
    if (p.type === 'image_url') return [withCache(imageBlock(p.image_url.url), p.cache_control)];
    if (p.type === 'file') return [withCache(documentBlock(p.file), p.cache_control)];
    throw new TranslationError(`unsupported content part type: ${(p as { type: string }).type}`);
  });
}

/** A message's own breakpoint goes on the last block it gave. */
function endWithCache(blocks: Block[], cc: CacheControl | undefined): Block[] {
  const last = blocks[blocks.length - 1];
  if (cc && last) blocks[blocks.length - 1] = withCache(last, cc);
  return blocks;
}

/** The system prompt as text blocks (empty ones left out: Anthropic refuses them). */
function systemBlocks(messages: ChatMessage[]): Block[] {
  return messages.flatMap((m) => {
    const parts =
      typeof m.content === 'string' ? [{ type: 'text' as const, text: m.content }] : (m.content ?? []);
    return endWithCache(contentBlocks(parts), m.cache_control);
  });
}

function toolUseBlock(tc: ToolCall): Block {
  const input = toolArgumentsObject(tc);
  return { type: 'tool_use', id: tc.id, name: tc.function.name, input };
}

function toolResultBlock(m: ChatMessage): Block {
  if (!m.tool_call_id) throw new TranslationError('tool messages need a tool_call_id');
  const block: Block = { type: 'tool_result', tool_use_id: m.tool_call_id };
  if (m.cache_control) block.cache_control = m.cache_control;
  if (typeof m.content === 'string') {
    if (m.content) block.content = m.content;
  } else if (m.content) {
    const blocks = contentBlocks(m.content);
    if (blocks.length) block.content = blocks;
  }
  return block;
}

const FORMAT = REASONING_FORMATS.anthropic;

const isThinking = (b: Block | undefined): boolean =>
  b?.type === 'thinking' || b?.type === 'redacted_thinking';

/** The thinking / redacted_thinking blocks an assistant message's reasoning_details give back. */
function thinkingBlocks(m: ChatMessage): Block[] {
  const out: Block[] = [];
  for (const d of detailsOfFormat(m.reasoning_details, FORMAT)) {
    if (d.type === 'reasoning.text' && typeof d.signature === 'string' && d.signature) {
      out.push({ type: 'thinking', thinking: d.text, signature: d.signature });
    } else if (d.type === 'reasoning.encrypted' && d.data) {
      out.push({ type: 'redacted_thinking', data: d.data });
    }
  }
  return out;
}

/** Canonical messages → Anthropic `system` + `messages`. */
export function toAnthropicMessages(messages: ChatMessage[]): {
  system?: string | Block[];
  messages: WireMessage[];
} {
  const system: string[] = [];
  const systemMessages: ChatMessage[] = [];
  const out: WireMessage[] = [];
  const push = (role: WireMessage['role'], blocks: Block[]) => {
    if (blocks.length === 0) return;
    const last = out[out.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const m of messages) {
    switch (m.role) {
      case 'system':
      case 'developer': {
        systemMessages.push(m);
        const t = systemText(m);
        if (t) system.push(t);
        break;
      }
      case 'user':
        push('user', endWithCache(contentBlocks(m.content), m.cache_control));
        break;
      case 'assistant': {
        const rest = endWithCache(
          [...contentBlocks(m.content), ...(m.tool_calls ?? []).map(toolUseBlock)],
          m.cache_control,
        );
        const last = out[out.length - 1];
        const merged = last?.role === 'assistant';
        // Thinking first in the turn, never alone in it (see the file comment).
        const thinking = rest.length && (!merged || isThinking(last.content[0])) ? thinkingBlocks(m) : [];
        push('assistant', [...thinking, ...rest]);
        break;
      }
      case 'tool':
        push('user', [toolResultBlock(m)]);
        break;
      default:
        throw new TranslationError(`unsupported message role: ${(m as { role: string }).role}`);
    }
  }
  // Blocks when the caller gave blocks (their boundaries and breakpoints are kept), else one string.
  const asBlocks = systemMessages.some((m) => Array.isArray(m.content) || m.cache_control);
  if (asBlocks) {
    const blocks = systemBlocks(systemMessages);
    return blocks.length ? { system: blocks, messages: out } : { messages: out };
  }
  // Two literals, not a spread before `messages`: that would make a hidden class per call (lib/objects.ts).
  return system.length ? { system: system.join('\n\n'), messages: out } : { messages: out };
}

/**
 * Anthropic refuses more than four cache breakpoints: keep the last four in prefix order (tools,
 * system, turns, then the top-level one, which marks the last block).
 */
function limitBreakpoints(body: Record<string, unknown>): void {
  const marked: Block[] = [];
  const visit = (blocks: unknown) => {
    if (!Array.isArray(blocks)) return;
    for (const b of blocks as Block[]) {
      if (b.cache_control) marked.push(b);
      if (b.type === 'tool_result') visit(b.content);
    }
  };
  visit(body.tools);
  visit(body.system);
  for (const m of body.messages as WireMessage[]) visit(m.content);
  if (body.cache_control) marked.push(body);
  for (const b of marked.slice(0, Math.max(0, marked.length - ANTHROPIC_MAX_BREAKPOINTS))) {
    delete b.cache_control;
  }
}

/** The request continues a tool loop and the assistant turn it answers has no thinking blocks. */
function toolLoopWithoutThinking(messages: WireMessage[]): boolean {
  const last = messages[messages.length - 1];
  if (last?.role !== 'user' || !last.content.some((b) => b.type === 'tool_result')) return false;
  const turn = messages[messages.length - 2];
  return !(turn?.role === 'assistant' && isThinking(turn.content[0]));
}

function toolChoice(req: ChatRequest): Block | undefined {
  let choice: Block | undefined;
  const tc = req.tool_choice;
  if (tc === 'auto') choice = { type: 'auto' };
  else if (tc === 'required') choice = { type: 'any' };
  else if (tc === 'none') choice = { type: 'none' };
  else if (tc && typeof tc === 'object') choice = { type: 'tool', name: tc.function.name };
  if (req.parallel_tool_calls === false && req.tools?.length && choice?.type !== 'none') {
    choice = { ...(choice ?? { type: 'auto' }), disable_parallel_tool_use: true };
  }
  return choice;
}

/** Anthropic's web search server tool; of the two domain lists it takes one (the allowed). */
export function webSearchTool(ws: WebSearchRequest): Block {
  const tool: Block = { type: WEB_SEARCH_TYPE, name: 'web_search' };
  if (ws.max_uses !== undefined) tool.max_uses = ws.max_uses;
  if (ws.allowed_domains?.length) tool.allowed_domains = ws.allowed_domains;
  else if (ws.blocked_domains?.length) tool.blocked_domains = ws.blocked_domains;
  if (ws.user_location) tool.user_location = ws.user_location;
  return tool;
}

/**
 * The Anthropic request body for a canonical request. `maxOutput`: the model's maximum output
 * tokens at this endpoint, when the catalog knows it (`CallContext.maxOutputTokens`).
 */
export function toAnthropicRequest(
  req: ChatRequest,
  stream: boolean,
  maxOutput?: number,
): Record<string, unknown> {
  const { system, messages } = toAnthropicMessages(req.messages);
  // The output limit thinking's budget stays below: the caller's, else the model's own.
  const limit = req.max_completion_tokens ?? req.max_tokens ?? maxOutput;
  const body: Record<string, unknown> = {
    model: req.model,
    max_tokens: limit ?? DEFAULT_MAX_TOKENS,
    messages,
  };
  if (system !== undefined) body.system = system;
  if (req.stop !== undefined) body.stop_sequences = Array.isArray(req.stop) ? req.stop : [req.stop];
  if (req.temperature !== undefined) body.temperature = Math.min(1, Math.max(0, req.temperature));
  if (req.top_p !== undefined) body.top_p = req.top_p;
  if (req.top_k !== undefined) body.top_k = req.top_k;
  const userId = req.user ?? req.safety_identifier;
  if (userId !== undefined) body.metadata = { user_id: userId };
  const tier = anthropicServiceTier(req.service_tier);
  if (tier) body.service_tier = tier;
  if (req.tools?.length) {
    body.tools = req.tools.map((t) =>
      withCache(
        {
          name: t.function.name,
          ...(t.function.description !== undefined ? { description: t.function.description } : {}),
          input_schema: t.function.parameters ?? { type: 'object', properties: {} },
          ...(t.eager_input_streaming ? { eager_input_streaming: true } : {}),
        },
        t.cache_control,
      ),
    );
  }
  if (req.web_search) body.tools = [...((body.tools as Block[]) ?? []), webSearchTool(req.web_search)];
  if (req.cache_control) body.cache_control = req.cache_control;
  limitBreakpoints(body);
  const choice = toolChoice(req);
  if (choice) body.tool_choice = choice;
  if (req.response_format?.type === 'json_schema' && req.response_format.json_schema.schema) {
    const schema = anthropicOutputSchema(req.response_format.json_schema.schema);
    body.output_config = { format: { type: 'json_schema', schema } };
  }

  let budget = reasoningBudget(req.reasoning);
  const forcedTool = choice?.type === 'any' || choice?.type === 'tool';
  if (budget !== undefined && !forcedTool && !toolLoopWithoutThinking(messages)) {
    budget = Math.max(MIN_THINKING_BUDGET, budget);
    let max = limit ?? budget + DEFAULT_MAX_TOKENS;
    if (limit !== undefined && budget >= limit) budget = limit - 1;
    if (budget >= MIN_THINKING_BUDGET) {
      if (max <= budget) max = budget + 1;
      body.max_tokens = max;
      body.thinking = { type: 'enabled', budget_tokens: budget };
      delete body.temperature;
      delete body.top_p;
      delete body.top_k;
    }
  }
  if (!body.thinking) {
    // Thinking off for this call: history thinking blocks are not needed, and not sent.
    for (const m of messages) if (m.role === 'assistant') m.content = m.content.filter((b) => !isThinking(b));
  }
  if (stream) body.stream = true;
  return body;
}

// ---------------------------------------------------------------------------------------------
// Responses

const FINISH: Record<string, FinishReason> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

export function mapStopReason(r: unknown): FinishReason | null {
  if (typeof r !== 'string' || !r) return null;
  return FINISH[r] ?? 'stop';
}

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
};

const num = (x: unknown): number => (typeof x === 'number' && Number.isFinite(x) ? x : 0);

/** Anthropic usage → canonical (prompt = input + cache reads + cache writes). */
export function mapAnthropicUsage(raw: unknown): Usage {
  const u = obj(raw);
  const cacheRead = num(u.cache_read_input_tokens);
  const cacheWrite = num(u.cache_creation_input_tokens);
  const prompt = num(u.input_tokens) + cacheRead + cacheWrite;
  const completion = num(u.output_tokens);
  const usage: Usage = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cacheRead, cache_write_tokens: cacheWrite },
  };
  const thinking = obj(u.output_tokens_details).thinking_tokens;
  if (typeof thinking === 'number') usage.completion_tokens_details = { reasoning_tokens: thinking };
  // Anthropic's server tools bill per use: web searches (web fetches are free).
  const searches = num(obj(u.server_tool_use).web_search_requests);
  if (searches) usage.server_tool_use = { web_search_requests: searches };
  return usage;
}

/**
 * The web searches of an answer: `server_tool_use` blocks (named `web_search`) with their query,
 * `web_search_tool_result` blocks with the pages found (an error result finds none), and the
 * `web_search_result_location` citations of text blocks as annotations spanning the block's text.
 */
class WebSearches {
  readonly calls: WebSearchCall[] = [];
  readonly annotations: UrlCitation[] = [];

  block(b: Obj): void {
    if (b.type === 'server_tool_use') {
      if (b.name !== 'web_search') return;
      const query = obj(b.input).query;
      this.calls.push({
        id: String(b.id ?? ''),
        ...(typeof query === 'string' ? { query } : {}),
        sources: [],
      });
      return;
    }
    const call = this.calls.find((c) => c.id === b.tool_use_id);
    if (!call) return;
    for (const raw of Array.isArray(b.content) ? b.content : []) {
      const r = obj(raw);
      if (r.type === 'web_search_result' && typeof r.url === 'string')
        call.sources.push({ url: r.url, ...(typeof r.title === 'string' ? { title: r.title } : {}) });
    }
  }

  /** A search's query, once its input is complete (streams send it as JSON pieces). */
  query(id: string, query: string | undefined): void {
    const call = this.calls.find((c) => c.id === id);
    if (call && query !== undefined) call.query = query;
  }

  /** The citations of a text block spanning [start, end) of the joined text. */
  cite(citations: unknown, start: number, end: number): UrlCitation[] {
    const out: UrlCitation[] = [];
    for (const raw of Array.isArray(citations) ? citations : []) {
      const c = obj(raw);
      if (c.type !== 'web_search_result_location' || typeof c.url !== 'string') continue;
      const title = typeof c.title === 'string' ? c.title : c.url;
      const content = typeof c.cited_text === 'string' ? { content: c.cited_text } : {};
      out.push({
        type: 'url_citation',
        url_citation: { url: c.url, title, ...content, start_index: start, end_index: end },
      });
    }
    this.annotations.push(...out);
    return out;
  }
}

export interface AnthropicMapOptions {
  /** `reasoning.exclude`: leave thinking out of the canonical output. */
  excludeReasoning?: boolean;
}

/** Anthropic Message → canonical ChatResponse. */
export function fromAnthropicResponse(
  raw: unknown,
  requestedModel: string,
  opts: AnthropicMapOptions = {},
): ChatResponse {
  const r = obj(raw);
  const blocks = Array.isArray(r.content) ? r.content.map(obj) : [];
  const texts: string[] = [];
  const thinking: string[] = [];
  const details: ReasoningDetail[] = [];
  const toolCalls: ToolCall[] = [];
  const searches = new WebSearches();
  let length = 0;
  for (const b of blocks) {
    if (b.type === 'text' && typeof b.text === 'string') {
      texts.push(b.text);
      searches.cite(b.citations, length, length + b.text.length);
      length += b.text.length;
    } else if (b.type === 'server_tool_use' || b.type === 'web_search_tool_result') searches.block(b);
    else if (b.type === 'thinking' && typeof b.thinking === 'string') {
      thinking.push(b.thinking);
      const d: ReasoningDetail = {
        type: 'reasoning.text',
        text: b.thinking,
        format: FORMAT,
        index: details.length,
      };
      if (typeof b.signature === 'string') d.signature = b.signature;
      details.push(d);
    } else if (b.type === 'redacted_thinking' && typeof b.data === 'string') {
      details.push({ type: 'reasoning.encrypted', data: b.data, format: FORMAT, index: details.length });
    } else if (b.type === 'tool_use') {
      toolCalls.push({
        id: String(b.id ?? ''),
        type: 'function',
        function: { name: String(b.name ?? ''), arguments: JSON.stringify(b.input ?? {}) },
      });
    }
  }
  const message: ChatResponse['choices'][number]['message'] = {
    role: 'assistant',
    content: texts.length ? texts.join('') : toolCalls.length ? null : '',
  };
  if (!opts.excludeReasoning) {
    if (thinking.length) message.reasoning = thinking.join('');
    if (details.length) message.reasoning_details = details;
  }
  if (toolCalls.length) message.tool_calls = toolCalls;
  if (searches.calls.length) message.web_search_calls = searches.calls;
  if (searches.annotations.length) message.annotations = searches.annotations;
  const stop = typeof r.stop_reason === 'string' ? r.stop_reason : null;
  return {
    id: typeof r.id === 'string' ? r.id : '',
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: typeof r.model === 'string' && r.model ? r.model : requestedModel,
    choices: [
      { index: 0, message, finish_reason: mapStopReason(stop), native_finish_reason: stop, logprobs: null },
    ],
    usage: mapAnthropicUsage(r.usage),
  };
}

/**
 * Anthropic stream events → canonical chunks, one event at a time. `push` returns the chunks an
 * event produces (throws UpstreamError on an `error` event); `finish` checks the stream ended
 * with `message_stop` (else UpstreamError 502: the stream was cut off).
 *
 * Output: a role chunk (message_start), content / reasoning / tool-call deltas (tool calls are
 * numbered 0, 1, … in order of appearance; each thinking delta also as a `reasoning_details`
 * fragment of its block's entry, a `signature_delta` as a fragment carrying only the signature, a
 * redacted_thinking block as one `reasoning.encrypted` entry), a chunk with `finish_reason`
 * (message_delta), and a last chunk with `choices: []` and `usage` (message_stop), like OpenAI's
 * include_usage.
 */
export class AnthropicStreamMapper {
  private id = '';
  private model: string;
  private readonly created = Math.floor(Date.now() / 1000);
  private usage: Obj = {};
  private readonly toolIndex = new Map<number, number>();
  /** content block index → reasoning_details index */
  private readonly detailIndex = new Map<number, number>();
  private stopped = false;
  /** Web searches: their calls, the JSON of a call's input by block, citations by text block. */
  private readonly searches = new WebSearches();
  private readonly searchInput = new Map<number, { id: string; json: string }>();
  private readonly citations = new Map<number, { start: number; list: unknown[] }>();
  /** The length of the text so far (citations span their block's text). */
  private length = 0;

  constructor(
    requestedModel: string,
    private readonly opts: AnthropicMapOptions = {},
    private readonly secrets: (string | null)[] = [],
  ) {
    this.model = requestedModel;
  }

  private chunk(delta: ChatChunk['choices'][number]['delta'], finish?: string | null): ChatChunk {
    return {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      choices: [
        {
          index: 0,
          delta,
          finish_reason: finish ? mapStopReason(finish) : null,
          ...(finish ? { native_finish_reason: finish } : {}),
        },
      ],
    };
  }

  private text(content: string): ChatChunk {
    this.length += content.length;
    return this.chunk({ content });
  }

  private toolChunk(tc: ChatChunkToolCall): ChatChunk {
    return this.chunk({ tool_calls: [tc] });
  }

  /** The reasoning_details index of content block `block` (numbered in order of appearance). */
  private detail(block: number): number {
    let i = this.detailIndex.get(block);
    if (i === undefined) {
      i = this.detailIndex.size;
      this.detailIndex.set(block, i);
    }
    return i;
  }

  /** A chunk with reasoning text and/or a reasoning_details text fragment of block `block`. */
  private thinkingChunk(block: number, text: string, signature?: string): ChatChunk[] {
    if (this.opts.excludeReasoning) return [];
    const d: ReasoningDetail = { type: 'reasoning.text', text, format: FORMAT, index: this.detail(block) };
    if (signature) d.signature = signature;
    return [this.chunk(text ? { reasoning: text, reasoning_details: [d] } : { reasoning_details: [d] })];
  }

  push(raw: unknown): ChatChunk[] {
    const ev = obj(raw);
    switch (ev.type) {
      case 'message_start': {
        const m = obj(ev.message);
        if (typeof m.id === 'string') this.id = m.id;
        if (typeof m.model === 'string' && m.model) this.model = m.model;
        this.usage = { ...obj(m.usage) };
        const start = this.chunk({ role: 'assistant', content: '' });
        // The input counts are known from the start (output_tokens is a placeholder until the end).
        if (typeof this.usage.input_tokens === 'number') {
          const { prompt_tokens, prompt_tokens_details } = mapAnthropicUsage(this.usage);
          start.prompt_usage = { prompt_tokens, prompt_tokens_details };
        }
        return [start];
      }
      case 'content_block_start': {
        const b = obj(ev.content_block);
        const index = num(ev.index);
        if (b.type === 'text') {
          this.citations.set(index, {
            start: this.length,
            list: Array.isArray(b.citations) ? b.citations : [],
          });
          if (typeof b.text === 'string' && b.text) return [this.text(b.text)];
          return [];
        }
        if (b.type === 'server_tool_use') {
          this.searches.block(b);
          this.searchInput.set(index, { id: String(b.id ?? ''), json: '' });
          return [];
        }
        if (b.type === 'web_search_tool_result') {
          this.searches.block(b);
          const call = this.searches.calls.find((c) => c.id === b.tool_use_id);
          return call ? [this.chunk({ web_search_calls: [call] })] : [];
        }
        if (b.type === 'thinking') {
          const text = typeof b.thinking === 'string' ? b.thinking : '';
          const signature = typeof b.signature === 'string' ? b.signature : '';
          this.detail(index);
          return text || signature ? this.thinkingChunk(index, text, signature) : [];
        }
        if (b.type === 'redacted_thinking' && typeof b.data === 'string') {
          const d: ReasoningDetail = {
            type: 'reasoning.encrypted',
            data: b.data,
            format: FORMAT,
            index: this.detail(index),
          };
          return this.opts.excludeReasoning ? [] : [this.chunk({ reasoning_details: [d] })];
        }
        if (b.type === 'tool_use') {
          const i = this.toolIndex.size;
          this.toolIndex.set(index, i);
          return [
            this.toolChunk({
              index: i,
              id: String(b.id ?? ''),
              type: 'function',
              function: { name: String(b.name ?? ''), arguments: '' },
            }),
          ];
        }
        return [];
      }
      case 'content_block_delta': {
        const d = obj(ev.delta);
        if (d.type === 'text_delta' && typeof d.text === 'string') return [this.text(d.text)];
        if (d.type === 'citations_delta') {
          this.citations.get(num(ev.index))?.list.push(d.citation);
          return [];
        }
        if (d.type === 'thinking_delta' && typeof d.thinking === 'string' && d.thinking) {
          return this.thinkingChunk(num(ev.index), d.thinking);
        }
        if (d.type === 'signature_delta' && typeof d.signature === 'string' && d.signature) {
          return this.thinkingChunk(num(ev.index), '', d.signature);
        }
        if (d.type === 'input_json_delta' && typeof d.partial_json === 'string' && d.partial_json) {
          const search = this.searchInput.get(num(ev.index));
          if (search) search.json += d.partial_json;
          const i = this.toolIndex.get(num(ev.index));
          if (i === undefined) return [];
          return [this.toolChunk({ index: i, function: { arguments: d.partial_json } })];
        }
        return [];
      }
      case 'message_delta': {
        const d = obj(ev.delta);
        for (const [k, v] of Object.entries(obj(ev.usage))) if (v != null) this.usage[k] = v;
        const stop = typeof d.stop_reason === 'string' ? d.stop_reason : null;
        return stop ? [this.chunk({}, stop)] : [];
      }
      case 'message_stop':
        this.stopped = true;
        return [
          {
            id: this.id,
            object: 'chat.completion.chunk',
            created: this.created,
            model: this.model,
            choices: [],
            usage: mapAnthropicUsage(this.usage),
          },
        ];
      case 'content_block_stop': {
        const index = num(ev.index);
        const search = this.searchInput.get(index);
        if (search) {
          const query = obj(parseJson(search.json)).query;
          this.searches.query(search.id, typeof query === 'string' ? query : undefined);
        }
        const cited = this.citations.get(index);
        this.citations.delete(index);
        const annotations = cited ? this.searches.cite(cited.list, cited.start, this.length) : [];
        return annotations.length ? [this.chunk({ annotations })] : [];
      }
      case 'error':
        throw anthropicStreamError(raw, this.secrets);
      default:
        // ping, and event types added later.
        return [];
    }
  }

  get done(): boolean {
    return this.stopped;
  }

  finish(): void {
    if (!this.stopped) {
      throw new UpstreamError(502, 'upstream stream ended before message_stop', { retryable: true });
    }
  }
}
