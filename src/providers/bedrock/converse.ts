/**
 * Canonical chat ⇄ Bedrock Converse (`POST /model/{modelId}/converse`, and `converse-stream`).
 *
 * Request: built as Anthropic's Messages body (`toAnthropicRequest`: system apart, same-role turns
 * merged, consecutive tool results in one user turn, arguments checked, thinking rules) and each
 * part rewritten into Converse's shapes — text → `{text}`, a base64 image → `{image: {format, source:
 * {bytes}}}` (Converse takes no image URLs: TranslationError), a PDF or text document →
 * `{document: {format: pdf|txt, name, source: {bytes}}}`, tool_use → `{toolUse}`, tool_result
 * → `{toolResult: {toolUseId, content}}` (its text, images and documents as those blocks); a
 * cache breakpoint (`cache_control`) becomes a `{cachePoint: {type: 'default'}}` block after the
 * block it marks. max tokens, temperature, top_p
 * and stop → `inferenceConfig`; tools → `toolConfig` (tool_choice auto/required/named →
 * auto/any/tool; `none` sends the tools without a choice: Converse has no "none", and history with
 * tool use needs the tool definitions); top_k → `additionalModelRequestFields.top_k`. For Claude,
 * `reasoning` → `additionalModelRequestFields.thinking` (Anthropic's budget rules), the caller's
 * `anthropic-beta` → `additionalModelRequestFields.anthropic_beta` (a list of the flags Bedrock
 * has, anthropic/betas.ts), and thinking
 * blocks of history (reasoning_details of format anthropic-claude-v1, with their signatures) →
 * `reasoningContent`; other models get no thinking, no betas (listed as dropped) and no default
 * max tokens (Claude's is Anthropic's: the model's maximum as the catalog knows it, else 4096).
 * `response_format: json_schema` → `outputConfig.textFormat` (structured output).
 * Seed, penalties, logprobs and `json_object` have no Converse field: the engine refuses them
 * before the call (the `anthropic` capability rows).
 *
 * Answer: text blocks joined, toolUse → tool_calls, reasoningContent → `reasoning` and
 * `reasoning_details` (text with its signature, or redacted content as `reasoning.encrypted`, format
 * anthropic-claude-v1 so a later turn sends them back; left out with `reasoning.exclude`); stopReason →
 * finish_reason (the original in native_finish_reason); usage: prompt = inputTokens + cache reads +
 * cache writes (Converse counts them apart, as Anthropic does).
 */
import {
  type ChatChunk,
  type ChatRequest,
  type ChatResponse,
  type FinishReason,
  REASONING_FORMATS,
  type ReasoningDetail,
  type ToolCall,
  TranslationError,
  type Usage,
} from '../../formats/chat.js';
import { betaList, hostBetas } from '../anthropic/betas.js';
import { toAnthropicRequest } from '../anthropic/wire.js';
import { type Obj, obj } from '../errors.js';
import { nowSeconds } from '../http.js';
import { UpstreamError } from '../types.js';

type Block = Record<string, unknown>;

const CACHE_POINT: Block = { cachePoint: { type: 'default' } };

/** `image/png` → `png` (Converse's image formats: png, jpeg, gif, webp). */
function imageFormat(mediaType: unknown): string {
  const f = String(mediaType ?? '')
    .replace(/^image\//, '')
    .toLowerCase();
  if (f === 'jpg' || f === 'jpeg') return 'jpeg';
  if (f === 'png' || f === 'gif' || f === 'webp') return f;
  throw new TranslationError(
    `Bedrock Converse takes png, jpeg, gif or webp images, not ${String(mediaType)}`,
  );
}

/**
 * A document's name as Converse takes it: letters, digits, single spaces, hyphens, parentheses
 * and square brackets only (a file name's dot and extension go).
 */
function documentName(title: unknown): string {
  const name = String(title ?? '')
    .replace(/\.[a-z0-9]{1,5}$/i, '')
    .replace(/[^A-Za-z0-9\s\-()[\]]+/g, '-')
    .replace(/\s+/g, ' ')
    .trim();
  return name || 'document';
}

/** An Anthropic `document` block → Converse's (a PDF, or a text document as a `txt` file). */
function documentBlock(b: Block): Block {
  const src = obj(b.source);
  let doc: { format: string; bytes: string };
  if (src.type === 'base64' && src.media_type === 'application/pdf')
    doc = { format: 'pdf', bytes: String(src.data) };
  else if (src.type === 'text')
    doc = { format: 'txt', bytes: Buffer.from(String(src.data)).toString('base64') };
  else throw new TranslationError('Bedrock Converse takes documents as data: URLs only, not http(s) URLs');
  return { document: { format: doc.format, name: documentName(b.title), source: { bytes: doc.bytes } } };
}

/**
 * Converse refuses two documents of one name: the later ones get " (2)", " (3)"… (documents in tool
 * results included).
 */
function uniqueDocumentNames(messages: { content: Block[] }[]): void {
  const seen = new Map<string, number>();
  const visit = (blocks: Block[]) => {
    for (const b of blocks) {
      const result = b.toolResult as { content: Block[] } | undefined;
      if (result) visit(result.content);
      const doc = b.document as { name: string } | undefined;
      if (!doc) continue;
      const n = (seen.get(doc.name) ?? 0) + 1;
      seen.set(doc.name, n);
      if (n > 1) doc.name = `${doc.name} (${n})`;
    }
  };
  for (const m of messages) visit(m.content);
}

/** One Anthropic-shaped block → its Converse blocks (the block, then its cache point). */
function converseBlocks(b: Block): Block[] {
  let out: Block | null;
  switch (b.type) {
    case 'text':
      out = { text: b.text };
      break;
    case 'image': {
      const src = obj(b.source);
      if (src.type !== 'base64')
        throw new TranslationError('Bedrock Converse takes images as data: URLs only, not http(s) URLs');
      out = { image: { format: imageFormat(src.media_type), source: { bytes: src.data } } };
      break;
    }
    case 'document':
      out = documentBlock(b);
      break;
    case 'tool_use':
      out = { toolUse: { toolUseId: b.id, name: b.name, input: b.input } };
      break;
    case 'tool_result': {
      const content =
        typeof b.content === 'string'
          ? [{ text: b.content }]
          : Array.isArray(b.content)
            ? (b.content as Block[]).flatMap((c) => converseBlocks({ ...c, cache_control: undefined }))
            : [{ text: '' }];
      out = { toolResult: { toolUseId: b.tool_use_id, content } };
      break;
    }
    case 'thinking':
      out = { reasoningContent: { reasoningText: { text: b.thinking, signature: b.signature } } };
      break;
    case 'redacted_thinking':
      out = { reasoningContent: { redactedContent: b.data } };
      break;
    default:
      out = null;
  }
  if (!out) return [];
  return b.cache_control ? [out, CACHE_POINT] : [out];
}

/** Anthropic's tool_choice → Converse's (no "none" in Converse: the tools go without a choice). */
function toolChoice(choice: unknown): Block | undefined {
  const c = obj(choice);
  if (c.type === 'auto') return { auto: {} };
  if (c.type === 'any') return { any: {} };
  if (c.type === 'tool') return { tool: { name: c.name } };
  return undefined;
}

/**
 * `response_format: json_schema` → Converse's structured output: the schema as Anthropic's body has
 * it (the subset Claude's structured outputs take), as a JSON string.
 */
function outputFormat(req: ChatRequest, a: Record<string, unknown>): Block | undefined {
  const rf = req.response_format;
  const schema = obj(obj(a.output_config).format).schema;
  if (rf?.type !== 'json_schema' || schema === undefined) return undefined;
  const { name, description } = rf.json_schema;
  const jsonSchema = { schema: JSON.stringify(schema), ...(name ? { name } : {}) };
  return {
    type: 'json_schema',
    structure: { jsonSchema: description ? { ...jsonSchema, description } : jsonSchema },
  };
}

export interface ConverseOptions {
  /** An Anthropic model: `reasoning` becomes Claude's `thinking` (an additional model field). */
  anthropic: boolean;
  /** The model's maximum output tokens as the catalog knows it: Claude's limit when the caller names none. */
  maxOutput?: number;
}

/** The Converse body of a canonical request (the model goes in the URL). */
export function toConverseRequest(req: ChatRequest, opts: ConverseOptions): Record<string, unknown> {
  // Anthropic's request rules (thinking budget, sampling without thinking, tool loops) apply to
  // Claude; other models get no thinking, and Anthropic's default max_tokens is not imposed on them.
  // Converse has no web search: one offered as a tool is left out (listed, see capabilities.ts),
  // one asked for outright was refused before the call.
  const sent: ChatRequest = { ...req, web_search: undefined };
  const a = opts.anthropic
    ? toAnthropicRequest(sent, false, opts.maxOutput)
    : toAnthropicRequest({ ...sent, reasoning: undefined }, false);
  const messages = (a.messages as { role: string; content: Block[] }[])
    .map((m) => ({ role: m.role, content: m.content.flatMap(converseBlocks) }))
    .filter((m) => m.content.length > 0);
  uniqueDocumentNames(messages);
  // A request-wide breakpoint marks the end of the prompt.
  if (a.cache_control) messages[messages.length - 1]?.content.push(CACHE_POINT);
  const body: Record<string, unknown> = { messages };
  if (typeof a.system === 'string') body.system = [{ text: a.system }];
  else if (Array.isArray(a.system)) body.system = (a.system as Block[]).flatMap(converseBlocks);
  const inference: Record<string, unknown> = {};
  const callerMax = req.max_completion_tokens ?? req.max_tokens;
  if (opts.anthropic || callerMax !== undefined) inference.maxTokens = a.max_tokens;
  if (a.temperature !== undefined) inference.temperature = a.temperature;
  if (a.top_p !== undefined) inference.topP = a.top_p;
  if (a.stop_sequences !== undefined) inference.stopSequences = a.stop_sequences;
  if (Object.keys(inference).length) body.inferenceConfig = inference;
  if (Array.isArray(a.tools)) {
    const tools: Block[] = [];
    for (const t of a.tools as Block[]) {
      tools.push({
        toolSpec: {
          name: t.name,
          ...(t.description !== undefined ? { description: t.description } : {}),
          inputSchema: { json: t.input_schema },
        },
      });
      if (t.cache_control) tools.push(CACHE_POINT);
    }
    const choice = toolChoice(a.tool_choice);
    body.toolConfig = { tools, ...(choice ? { toolChoice: choice } : {}) };
  }
  const additional: Record<string, unknown> = {};
  if (a.thinking) additional.thinking = a.thinking;
  // Claude takes the caller's betas as a list beside the request (as InvokeModel's body has them),
  // those Bedrock has a flag for on Converse (anthropic/betas.ts).
  const betas = opts.anthropic ? hostBetas(betaList(req.anthropic_beta), 'bedrock-converse').kept : [];
  if (betas.length) additional.anthropic_beta = betas;
  if (a.top_k !== undefined) additional.top_k = a.top_k;
  if (Object.keys(additional).length) body.additionalModelRequestFields = additional;
  const format = outputFormat(req, a);
  if (format) body.outputConfig = { textFormat: format };
  return body;
}

// ---------------------------------------------------------------------------------------------
// Answers

const FINISH: Record<string, FinishReason> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  guardrail_intervened: 'content_filter',
  content_filtered: 'content_filter',
};

export const mapConverseStop = (r: unknown): FinishReason | null =>
  typeof r === 'string' && r ? (FINISH[r] ?? 'stop') : null;

const num = (x: unknown): number => (typeof x === 'number' && Number.isFinite(x) ? x : 0);

/** Converse usage → canonical (prompt = input + cache reads + cache writes). */
export function mapConverseUsage(raw: unknown): Usage {
  const u = obj(raw);
  const cacheRead = num(u.cacheReadInputTokens);
  const cacheWrite = num(u.cacheWriteInputTokens);
  const prompt = num(u.inputTokens) + cacheRead + cacheWrite;
  const completion = num(u.outputTokens);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cacheRead, cache_write_tokens: cacheWrite },
  };
}

const responseId = (): string =>
  `bedrock-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 10)}`;

const FORMAT = REASONING_FORMATS.anthropic;

/** Output options: `reasoning.exclude` leaves the reasoning out. */
export interface AnswerOptions {
  excludeReasoning?: boolean;
}

/** A Converse answer → canonical ChatResponse. */
export function fromConverseResponse(
  raw: unknown,
  model: string,
  requestId?: string,
  opts: AnswerOptions = {},
): ChatResponse {
  const r = obj(raw);
  const content = obj(obj(r.output).message).content;
  if (!Array.isArray(content))
    throw new UpstreamError(502, 'Bedrock sent an answer without output.message.content', {
      retryable: true,
    });
  const texts: string[] = [];
  const reasoning: string[] = [];
  const details: ReasoningDetail[] = [];
  const toolCalls: ToolCall[] = [];
  for (const b of content.map(obj)) {
    if (typeof b.text === 'string') texts.push(b.text);
    else if (b.toolUse) {
      const t = obj(b.toolUse);
      toolCalls.push({
        id: String(t.toolUseId ?? ''),
        type: 'function',
        function: { name: String(t.name ?? ''), arguments: JSON.stringify(t.input ?? {}) },
      });
    } else if (b.reasoningContent) {
      const rc = obj(b.reasoningContent);
      const rt = obj(rc.reasoningText);
      if (typeof rt.text === 'string') {
        reasoning.push(rt.text);
        const d: ReasoningDetail = {
          type: 'reasoning.text',
          text: rt.text,
          format: FORMAT,
          index: details.length,
        };
        if (typeof rt.signature === 'string') d.signature = rt.signature;
        details.push(d);
      } else if (typeof rc.redactedContent === 'string')
        details.push({
          type: 'reasoning.encrypted',
          data: rc.redactedContent,
          format: FORMAT,
          index: details.length,
        });
    }
  }
  const message: ChatResponse['choices'][number]['message'] = {
    role: 'assistant',
    content: texts.length ? texts.join('') : toolCalls.length ? null : '',
  };
  if (!opts.excludeReasoning) {
    if (reasoning.length) message.reasoning = reasoning.join('');
    if (details.length) message.reasoning_details = details;
  }
  if (toolCalls.length) message.tool_calls = toolCalls;
  const stop = typeof r.stopReason === 'string' ? r.stopReason : null;
  return {
    id: requestId ?? responseId(),
    object: 'chat.completion',
    created: nowSeconds(),
    model,
    choices: [
      { index: 0, message, finish_reason: mapConverseStop(stop), native_finish_reason: stop, logprobs: null },
    ],
    usage: mapConverseUsage(r.usage),
  };
}

/**
 * ConverseStream events → canonical chunks: messageStart → a role chunk; contentBlockStart with
 * a toolUse → the tool call's id and name; contentBlockDelta → text, reasoning or argument pieces;
 * messageStop → the finish reason; metadata (the last event) → a usage chunk with no choices.
 * Tool calls are numbered 0, 1, … in order of appearance.
 */
export class ConverseStreamMapper {
  private readonly id: string;
  private readonly created = nowSeconds();
  private readonly toolIndex = new Map<number, number>();
  /** content block index → reasoning_details index */
  private readonly detailIndex = new Map<number, number>();
  private stopped = false;
  done = false;

  constructor(
    private readonly model: string,
    requestId?: string,
    private readonly opts: AnswerOptions = {},
  ) {
    this.id = requestId ?? responseId();
  }

  private detail(block: number): number {
    let i = this.detailIndex.get(block);
    if (i === undefined) {
      i = this.detailIndex.size;
      this.detailIndex.set(block, i);
    }
    return i;
  }

  /** Reasoning text, a signature, or redacted content of block `block`, as reasoning_details fragments. */
  private reasoning(block: number, rc: Obj): ChatChunk[] {
    if (this.opts.excludeReasoning) return [];
    const index = this.detail(block);
    if (typeof rc.text === 'string' && rc.text)
      return [
        this.chunk({
          reasoning: rc.text,
          reasoning_details: [{ type: 'reasoning.text', text: rc.text, format: FORMAT, index }],
        }),
      ];
    if (typeof rc.signature === 'string' && rc.signature)
      return [
        this.chunk({
          reasoning_details: [
            { type: 'reasoning.text', text: '', signature: rc.signature, format: FORMAT, index },
          ],
        }),
      ];
    if (typeof rc.redactedContent === 'string')
      return [
        this.chunk({
          reasoning_details: [
            { type: 'reasoning.encrypted', data: rc.redactedContent, format: FORMAT, index },
          ],
        }),
      ];
    return [];
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
          finish_reason: finish ? mapConverseStop(finish) : null,
          ...(finish ? { native_finish_reason: finish } : {}),
        },
      ],
    };
  }

  private tool(block: number): number {
    let i = this.toolIndex.get(block);
    if (i === undefined) {
      i = this.toolIndex.size;
      this.toolIndex.set(block, i);
    }
    return i;
  }

  /** The chunks one event gives. */
  push(type: string | undefined, ev: Obj): ChatChunk[] {
    switch (type) {
      case 'messageStart':
        return [this.chunk({ role: 'assistant', content: '' })];
      case 'contentBlockStart': {
        const t = obj(obj(ev.start).toolUse);
        if (!t.name) return [];
        const index = this.tool(num(ev.contentBlockIndex));
        return [
          this.chunk({
            tool_calls: [
              {
                index,
                id: String(t.toolUseId ?? ''),
                type: 'function',
                function: { name: String(t.name), arguments: '' },
              },
            ],
          }),
        ];
      }
      case 'contentBlockDelta': {
        const d = obj(ev.delta);
        if (typeof d.text === 'string') return d.text ? [this.chunk({ content: d.text })] : [];
        if (d.toolUse) {
          const input = obj(d.toolUse).input;
          const index = this.tool(num(ev.contentBlockIndex));
          return typeof input === 'string' && input
            ? [this.chunk({ tool_calls: [{ index, function: { arguments: input } }] })]
            : [];
        }
        return d.reasoningContent ? this.reasoning(num(ev.contentBlockIndex), obj(d.reasoningContent)) : [];
      }
      case 'messageStop':
        this.stopped = true;
        return [this.chunk({}, typeof ev.stopReason === 'string' ? ev.stopReason : 'end_turn')];
      case 'metadata': {
        this.done = true;
        return [
          {
            id: this.id,
            object: 'chat.completion.chunk',
            created: this.created,
            model: this.model,
            choices: [],
            usage: mapConverseUsage(ev.usage),
          },
        ];
      }
      default:
        return [];
    }
  }

  /** A stream that ended before its stop (and usage) was cut short. */
  finish(): void {
    if (!this.stopped)
      throw new UpstreamError(502, 'upstream stream ended before messageStop', { retryable: true });
  }
}
