/**
 * Canonical chat ⇄ OpenAI Chat Completions wire. The canonical format IS Chat Completions, so this
 * is mostly a whitelist plus the few per-flavour differences:
 *
 * | canonical             | `openai` (api.openai.com)               | `openai-compatible` (vLLM, Ollama, Groq…) |
 * | --------------------- | --------------------------------------- | ----------------------------------------- |
 * | `max_tokens`          | → `max_completion_tokens`               | kept as `max_tokens`                      |
 * | `reasoning`           | → `reasoning_effort` (budget → effort)  | passed through unchanged                  |
 * | `developer` role      | kept                                    | → `system` (many servers reject it)       |
 * | assistant `reasoning` | dropped from history                    | dropped from history                      |
 * | cost / latency hints  | sent: `prompt_cache_key`, `prompt_cache_retention`, `prompt_cache_options`, `service_tier`, `verbosity`, `store`, `metadata`, `safety_identifier` | not sent |
 * | `top_k`               | never (refused before: OpenAI has none)  | sent                                      |
 * | `cache_control`       | not sent (OpenAI caches prefixes by itself) | not sent                              |
 * | `web_search`          | → `web_search_options` (context size, location) | same                               |
 * | tool-result media     | → a user message after the tool run (`toWireMessages`) | same                              |
 *
 * Only canonical fields are sent (unknown fields a caller may have smuggled in never reach the
 * upstream), and Gatehouse's extensions (`cache_control`, a tool's `origin`) are stripped. Streams
 * always ask for `stream_options.include_usage`.
 * Responses: `reasoning` / `reasoning_content` (vLLM, DeepSeek, Groq) → canonical `reasoning`;
 * `url_citation` annotations (a web search's, on the message or a delta) → canonical `annotations`,
 * and an answer with any counts one web search in its usage (`withCitedSearch`);
 * `finish_reason` normalised (`function_call` → `tool_calls`), the original kept in
 * `native_finish_reason`.
 */
import type {
  ChatChunk,
  ChatMessage,
  ChatRequest,
  ChatResponse,
  ContentPart,
  EmbeddingsRequest,
  EmbeddingsResponse,
  FileInput,
  FinishReason,
  ReasoningConfig,
  UrlCitation,
  Usage,
  WebSearchRequest,
} from '../../formats/chat.js';
import { OPENAI_HINT_FIELDS } from '../../formats/hints.js';
import { base64Text, fileSource, isTextMedia } from '../content.js';
import { attachedNote, attachmentIntro, splitToolResult } from '../tool-media.js';

export type OpenAiFlavor = 'openai' | 'openai-compatible';

/** Canonical request fields forwarded as they are (besides the per-flavour ones). */
const PASSTHROUGH = [
  'temperature',
  'top_p',
  'stop',
  'seed',
  'presence_penalty',
  'frequency_penalty',
  'tool_choice',
  'parallel_tool_calls',
  'response_format',
  'logprobs',
  'top_logprobs',
  'user',
] as const satisfies readonly (keyof ChatRequest)[];

/** Reasoning budget → OpenAI effort (OpenAI takes no budget). */
export function effortFromReasoning(r: ReasoningConfig): ReasoningConfig['effort'] | undefined {
  if (r.effort) return r.effort;
  if (r.max_tokens === undefined) return undefined;
  if (r.max_tokens <= 1024) return 'low';
  if (r.max_tokens <= 8192) return 'medium';
  return 'high';
}

/**
 * A file part as Chat Completions takes it. A text document goes as its text (OpenAI's file parts
 * take PDFs); a PDF, a URL or a file id as a `file` part, and the provider decides what it accepts.
 */
function wireFile(file: FileInput): ContentPart {
  const src = fileSource(file);
  if (src.kind === 'data' && isTextMedia(src.mediaType)) return { type: 'text', text: base64Text(src.data) };
  if (src.kind === 'id') return { type: 'file', file: { file_id: src.id } };
  const name = file.filename ?? (src.kind === 'url' ? undefined : 'document.pdf');
  return { type: 'file', file: { ...(name ? { filename: name } : {}), file_data: file.file_data } };
}

/** Content parts without Gatehouse's `cache_control` (OpenAI would reject the unknown field). */
function wireContent(content: ChatMessage['content']): ChatMessage['content'] {
  if (!Array.isArray(content)) return content;
  return content.map((p): ContentPart => {
    if (p.type === 'text') return { type: 'text', text: p.text };
    if (p.type === 'image_url') return { type: 'image_url', image_url: p.image_url };
    // Video goes as sent: OpenRouter takes it, for the models that watch.
    if (p.type === 'input_audio' || p.type === 'video_url') return p;
    return wireFile(p.file);
  });
}

function toWireMessage(m: ChatMessage, flavor: OpenAiFlavor): Record<string, unknown> {
  const out: Record<string, unknown> = {
    role: flavor === 'openai-compatible' && m.role === 'developer' ? 'system' : m.role,
    content: wireContent(m.content),
  };
  if (m.name !== undefined) out.name = m.name;
  if (m.tool_calls?.length) out.tool_calls = m.tool_calls;
  if (m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id;
  return out;
}

/**
 * The wire messages. A tool message takes text only on Chat Completions, so a tool result's media
 * (an image Claude Code's Read tool returned, a PDF, …) move to ONE user message after the run of
 * tool messages, each result's introduced by a line naming its call, in order; the tool message
 * keeps its text (a note when it had none), so every tool call is still answered right after the
 * assistant message that made it.
 */
function toWireMessages(messages: ChatMessage[], flavor: OpenAiFlavor): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const names = new Map<string, string>();
  let attachments: ContentPart[] = [];
  const flush = () => {
    if (attachments.length) out.push({ role: 'user', content: attachments });
    attachments = [];
  };
  for (const m of messages) {
    if (m.role !== 'tool') flush();
    for (const tc of m.tool_calls ?? []) names.set(tc.id, tc.function.name);
    const wire = toWireMessage(m, flavor);
    if (m.role === 'tool' && Array.isArray(wire.content)) {
      const { text, media } = splitToolResult(wire.content as ContentPart[]);
      if (media.length) {
        // As a string: some OpenAI-compatible servers take a tool message's content as a string only.
        const joined = text.map((p) => p.text).join('\n');
        wire.content = joined.trim() ? joined : attachedNote(media);
        const name = m.tool_call_id === undefined ? undefined : names.get(m.tool_call_id);
        attachments.push({ type: 'text', text: attachmentIntro(m.tool_call_id, name) }, ...media);
      }
    }
    out.push(wire);
  }
  flush();
  return out;
}

/** OpenAI's `web_search_options` (its location nested under `approximate`). */
export function webSearchOptions(ws: WebSearchRequest): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (ws.search_context_size) out.search_context_size = ws.search_context_size;
  if (ws.user_location) {
    const { type, ...approximate } = ws.user_location;
    out.user_location = { type, approximate };
  }
  return out;
}

/**
 * A Chat Completions answer citing web pages searched once (OpenAI's search models run one search
 * per request and bill it per call; the usage does not count it).
 */
export const withCitedSearch = (usage: Usage): Usage => ({
  ...usage,
  server_tool_use: { web_search_requests: 1 },
});

/** `url_citation` annotations as canonical (anything else an upstream annotates with is left out). */
export function mapAnnotations(raw: unknown): UrlCitation[] {
  if (!Array.isArray(raw)) return [];
  const out: UrlCitation[] = [];
  for (const a of raw) {
    const c = obj(obj(a).url_citation);
    if (obj(a).type !== 'url_citation' || typeof c.url !== 'string') continue;
    out.push({
      type: 'url_citation',
      url_citation: {
        url: c.url,
        title: typeof c.title === 'string' ? c.title : c.url,
        ...(typeof c.content === 'string' ? { content: c.content } : {}),
        start_index: count(c.start_index),
        end_index: count(c.end_index),
      },
    });
  }
  return out;
}

/** The upstream request body for a canonical request. */
export function toOpenAiRequest(
  req: ChatRequest,
  flavor: OpenAiFlavor,
  stream: boolean,
): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: req.model,
    messages: toWireMessages(req.messages, flavor),
  };
  for (const k of PASSTHROUGH) if (req[k] !== undefined) body[k] = req[k];
  if (req.tools) body.tools = req.tools.map((t) => ({ type: 'function', function: t.function }));
  if (req.web_search) body.web_search_options = webSearchOptions(req.web_search);

  if (flavor === 'openai') {
    // api.openai.com takes its hints as they are (OpenAI-compatible servers may refuse them).
    for (const k of OPENAI_HINT_FIELDS) if (req[k] !== undefined) body[k] = req[k];
    const max = req.max_completion_tokens ?? req.max_tokens;
    if (max !== undefined) body.max_completion_tokens = max;
    if (req.reasoning) {
      const effort = effortFromReasoning(req.reasoning);
      if (effort) body.reasoning_effort = effort;
    }
  } else {
    if (req.max_tokens !== undefined) body.max_tokens = req.max_tokens;
    if (req.max_completion_tokens !== undefined) body.max_completion_tokens = req.max_completion_tokens;
    if (req.reasoning !== undefined) body.reasoning = req.reasoning;
    if (req.top_k !== undefined) body.top_k = req.top_k;
  }

  if (stream) {
    body.stream = true;
    body.stream_options = { ...req.stream_options, include_usage: true };
  }
  return body;
}

const FINISH: Record<string, FinishReason> = {
  stop: 'stop',
  length: 'length',
  tool_calls: 'tool_calls',
  function_call: 'tool_calls',
  content_filter: 'content_filter',
  error: 'error',
  // llama.cpp / some servers
  eos: 'stop',
  max_tokens: 'length',
};

export function mapFinishReason(r: unknown): FinishReason | null {
  if (typeof r !== 'string' || !r) return null;
  return FINISH[r] ?? 'stop';
}

function reasoningOf(x: Record<string, unknown> | undefined): string | undefined {
  if (!x) return undefined;
  if (typeof x.reasoning === 'string') return x.reasoning;
  if (typeof x.reasoning_content === 'string') return x.reasoning_content;
  return undefined;
}

/** Usage as canonical; undefined when the upstream sent none (or null). */
export function mapUsage(u: unknown): Usage | undefined {
  if (!u || typeof u !== 'object') return undefined;
  const x = u as Record<string, unknown>;
  const prompt = typeof x.prompt_tokens === 'number' ? x.prompt_tokens : 0;
  const completion = typeof x.completion_tokens === 'number' ? x.completion_tokens : 0;
  const usage: Usage = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: typeof x.total_tokens === 'number' ? x.total_tokens : prompt + completion,
  };
  if (x.prompt_tokens_details && typeof x.prompt_tokens_details === 'object') {
    usage.prompt_tokens_details = x.prompt_tokens_details as Usage['prompt_tokens_details'];
  } else {
    // OpenAI-compatible servers that report cache hits their own way: DeepSeek
    // (`prompt_cache_hit_tokens`), Moonshot and others (`cached_tokens` beside prompt_tokens).
    const hits = x.prompt_cache_hit_tokens ?? x.cached_tokens;
    if (typeof hits === 'number') usage.prompt_tokens_details = { cached_tokens: hits };
  }
  if (x.completion_tokens_details && typeof x.completion_tokens_details === 'object') {
    usage.completion_tokens_details = x.completion_tokens_details as Usage['completion_tokens_details'];
  }
  return usage;
}

type Obj = Record<string, unknown>;
const obj = (x: unknown): Obj => (x && typeof x === 'object' ? (x as Obj) : {});
const count = (x: unknown): number => (typeof x === 'number' && Number.isFinite(x) ? x : 0);

/**
 * OpenAI Responses usage (`input_tokens`, which include cached tokens, with
 * `input_tokens_details.cached_tokens`; `output_tokens` with `output_tokens_details.reasoning_tokens`)
 * as canonical usage; undefined when there is none. For the Responses API's own stream and body.
 */
export function mapResponsesUsage(u: unknown): Usage | undefined {
  if (!u || typeof u !== 'object') return undefined;
  const x = u as Obj;
  const prompt = count(x.input_tokens);
  const completion = count(x.output_tokens);
  const usage: Usage = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: typeof x.total_tokens === 'number' ? x.total_tokens : prompt + completion,
  };
  const cached = obj(x.input_tokens_details).cached_tokens;
  if (typeof cached === 'number') usage.prompt_tokens_details = { cached_tokens: cached };
  const reasoning = obj(x.output_tokens_details).reasoning_tokens;
  if (typeof reasoning === 'number') usage.completion_tokens_details = { reasoning_tokens: reasoning };
  return usage;
}

/** Upstream ChatCompletion → canonical ChatResponse. */
export function fromOpenAiResponse(raw: unknown, requestedModel: string): ChatResponse {
  const r = obj(raw);
  const choices = Array.isArray(r.choices) ? r.choices : [];
  const out: ChatResponse = {
    id: typeof r.id === 'string' ? r.id : '',
    object: 'chat.completion',
    created: typeof r.created === 'number' ? r.created : Math.floor(Date.now() / 1000),
    model: typeof r.model === 'string' && r.model ? r.model : requestedModel,
    choices: choices.map((c: unknown, i: number) => {
      const ch = obj(c);
      const m = obj(ch.message);
      const message: ChatResponse['choices'][number]['message'] = {
        role: 'assistant',
        content: typeof m.content === 'string' || Array.isArray(m.content) ? (m.content as string) : null,
      };
      const reasoning = reasoningOf(m);
      if (reasoning !== undefined) message.reasoning = reasoning;
      if (Array.isArray(m.tool_calls) && m.tool_calls.length) {
        message.tool_calls = m.tool_calls as ChatMessage['tool_calls'];
      }
      if (typeof m.refusal === 'string' || m.refusal === null) message.refusal = m.refusal;
      const annotations = mapAnnotations(m.annotations);
      if (annotations.length) message.annotations = annotations;
      return {
        index: typeof ch.index === 'number' ? ch.index : i,
        message,
        finish_reason: mapFinishReason(ch.finish_reason),
        native_finish_reason: typeof ch.finish_reason === 'string' ? ch.finish_reason : null,
        logprobs: (ch.logprobs as ChatResponse['choices'][number]['logprobs']) ?? null,
      };
    }),
  };
  const usage = mapUsage(r.usage);
  const cited = out.choices.some((c) => c.message.annotations?.length);
  if (usage) out.usage = cited ? withCitedSearch(usage) : usage;
  if (typeof r.system_fingerprint === 'string') out.system_fingerprint = r.system_fingerprint;
  return out;
}

/** Upstream ChatCompletionChunk → canonical ChatChunk. */
export function fromOpenAiChunk(raw: unknown, requestedModel: string): ChatChunk {
  const r = obj(raw);
  const choices = Array.isArray(r.choices) ? r.choices : [];
  const chunk: ChatChunk = {
    id: typeof r.id === 'string' ? r.id : '',
    object: 'chat.completion.chunk',
    created: typeof r.created === 'number' ? r.created : Math.floor(Date.now() / 1000),
    model: typeof r.model === 'string' && r.model ? r.model : requestedModel,
    choices: choices.map((c: unknown, i: number) => {
      const ch = obj(c);
      const d = obj(ch.delta);
      const delta: ChatChunk['choices'][number]['delta'] = {};
      if (d.role === 'assistant') delta.role = 'assistant';
      if (typeof d.content === 'string') delta.content = d.content;
      else if (d.content === null) delta.content = null;
      const reasoning = reasoningOf(d);
      if (reasoning !== undefined) delta.reasoning = reasoning;
      const annotations = mapAnnotations(d.annotations);
      if (annotations.length) delta.annotations = annotations;
      if (Array.isArray(d.tool_calls) && d.tool_calls.length) {
        delta.tool_calls = d.tool_calls.map((t: unknown, j: number) => {
          const tc = obj(t);
          const fn = obj(tc.function);
          return {
            index: typeof tc.index === 'number' ? tc.index : j,
            ...(typeof tc.id === 'string' ? { id: tc.id } : {}),
            ...(tc.type === 'function' ? { type: 'function' as const } : {}),
            ...(tc.function
              ? {
                  function: {
                    ...(typeof fn.name === 'string' ? { name: fn.name } : {}),
                    ...(typeof fn.arguments === 'string' ? { arguments: fn.arguments } : {}),
                  },
                }
              : {}),
          };
        });
      }
      return {
        index: typeof ch.index === 'number' ? ch.index : i,
        delta,
        finish_reason: mapFinishReason(ch.finish_reason),
        ...(typeof ch.finish_reason === 'string' ? { native_finish_reason: ch.finish_reason } : {}),
        ...(ch.logprobs ? { logprobs: ch.logprobs as ChatChunk['choices'][number]['logprobs'] } : {}),
      };
    }),
  };
  const usage = mapUsage(r.usage);
  if (usage) chunk.usage = usage;
  return chunk;
}

/** Embeddings: the canonical request is the OpenAI wire already (whitelisted). */
export function toOpenAiEmbeddingsRequest(req: EmbeddingsRequest): Record<string, unknown> {
  const body: Record<string, unknown> = { model: req.model, input: req.input };
  if (req.encoding_format !== undefined) body.encoding_format = req.encoding_format;
  if (req.dimensions !== undefined) body.dimensions = req.dimensions;
  if (req.user !== undefined) body.user = req.user;
  return body;
}

export function fromOpenAiEmbeddings(raw: unknown, requestedModel: string): EmbeddingsResponse {
  const r = obj(raw);
  const data = Array.isArray(r.data) ? r.data : [];
  const u = obj(r.usage);
  const prompt = typeof u.prompt_tokens === 'number' ? u.prompt_tokens : 0;
  return {
    object: 'list',
    data: data.map((d: unknown, i: number) => {
      const e = obj(d);
      return {
        object: 'embedding',
        index: typeof e.index === 'number' ? e.index : i,
        embedding: e.embedding as number[] | string,
      };
    }),
    model: typeof r.model === 'string' && r.model ? r.model : requestedModel,
    usage: {
      prompt_tokens: prompt,
      total_tokens: typeof u.total_tokens === 'number' ? u.total_tokens : prompt,
    },
  };
}
