/**
 * The built-in deterministic development provider: no network, no account. It serves any model id;
 * the advertised ones are `echo` and `scripted` (both honour directives, both echo without one).
 *
 * Behaviour is scripted from the LAST USER MESSAGE's text, so it works through every caller format
 * (chat, messages, responses, batches…): a directive `gatehouse:` followed by a JSON object, e.g.
 *
 *   gatehouse:{"text":"hi","tool_calls":[{"name":"get_weather","arguments":{"city":"Paris"}}],
 *              "reasoning":"thinking…","finish_reason":"stop",
 *              "usage":{"prompt_tokens":12,"completion_tokens":5},"delay_ms":30,"chunk_delay_ms":5,
 *              "error":{"status":429,"message":"slow down","retry_after_s":1},"fail_after_chunks":2}
 *
 * - reply text: `text` if given; else nothing when `tool_calls` are scripted; else the message text
 *   with the directive removed (trimmed). Without a directive: the last user message's text.
 * - `steps: [d0, d1, …]`: for agent loops — the step is the number of assistant messages after the
 *   last user message (d0 first, then d1 once a tool result came back, …; the last one repeats).
 * - `delay_ms`: wait before answering (abortable); `error`: reject with UpstreamError(status,
 *   message, retryAfterMs = retry_after_s·1000) after the delay, before any stream starts.
 * - streams: a role chunk, reasoning then text split into words (each with its trailing space, so
 *   the pieces concatenate to the text), each tool call as a header chunk (id, name) plus its
 *   arguments in two pieces, a finish chunk, and a usage chunk (`choices: []`); `chunk_delay_ms`
 *   between chunks; `fail_after_chunks: n` makes the iterator throw UpstreamError(502) after n chunks.
 * - usage when not scripted: prompt_tokens = whitespace-separated words across all message text
 *   (system and tool messages included, images not), completion_tokens = words in the reply
 *   (text + reasoning + tool call names and arguments); reasoning words are reported as
 *   reasoning_tokens. A partial `usage` override keeps the computed value for the missing field.
 * - ids: `chatcmpl-dev-<process start>-<counter>`, unique within and across processes.
 * - embeddings: 8-dim unit vectors from a SHA-256 of each input; prompt_tokens = words.
 * - rerank: a document's score is the share of the query's words it contains (an image: 0);
 *   total_tokens = words of the query and the documents.
 * - speech and transcriptions: see audio.ts.
 * - a caller abort rejects with / throws the signal's reason, like the network adapters.
 */
import { createHash } from 'node:crypto';
import type {
  ChatChunk,
  ChatRequest,
  ChatResponse,
  EmbeddingsRequest,
  EmbeddingsResponse,
  FinishReason,
  ToolCall,
  Usage,
} from '../../formats/chat.js';
import type { RerankRequest, RerankResponse } from '../../formats/rerank.js';
import type { CallSignal } from '../../lib/call-abort.js';
import { textOf } from '../content.js';
import { abortReason, throwIfAborted } from '../http.js';
import { redact } from '../redact.js';
import {
  type CallContext,
  type Provider,
  type ProviderConfig,
  type ProviderTraits,
  UpstreamError,
} from '../types.js';
import { devSpeech, devTranscription } from './audio.js';

export const DEV_MODELS = ['echo', 'scripted'] as const;
export const DEV_EMBEDDING_DIMENSIONS = 8;

export interface DevDirective {
  text?: string;
  tool_calls?: { id?: string; name: string; arguments?: unknown }[];
  reasoning?: string;
  finish_reason?: FinishReason;
  usage?: { prompt_tokens?: number; completion_tokens?: number };
  delay_ms?: number;
  chunk_delay_ms?: number;
  error?: { status?: number; message?: string; retry_after_s?: number };
  fail_after_chunks?: number;
  /**
   * Multi-step scripts (agent loops): the directive of step n, where n counts the assistant
   * messages after the last user message; past the end, the last step. Other fields of the outer
   * directive apply to every step unless the step sets them.
   */
  steps?: Omit<DevDirective, 'steps'>[];
}

const MARKER = 'gatehouse:';

/** The first balanced `{…}` JSON object at or after `start` (strings respected); null if none. */
function balancedObject(text: string, start: number): { json: string; end: number } | null {
  const open = text.indexOf('{', start);
  if (open < 0 || text.slice(start, open).trim() !== '') return null;
  let depth = 0;
  let inString = false;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}') {
      depth--;
      if (depth === 0) return { json: text.slice(open, i + 1), end: i + 1 };
    }
  }
  return null;
}

/**
 * Finds a `gatehouse:{…}` directive in `text`. Returns the parsed directive and the text without
 * it; `directive` is null when there is none (or its JSON is invalid, which is then echoed).
 */
export function parseDirective(text: string): { directive: DevDirective | null; rest: string } {
  let from = 0;
  for (;;) {
    const at = text.indexOf(MARKER, from);
    if (at < 0) return { directive: null, rest: text };
    const found = balancedObject(text, at + MARKER.length);
    if (found) {
      try {
        const parsed = JSON.parse(found.json) as unknown;
        if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
          return {
            directive: parsed as DevDirective,
            rest: `${text.slice(0, at)}${text.slice(found.end)}`.trim(),
          };
        }
      } catch {}
    }
    from = at + MARKER.length;
  }
}

export const countWords = (s: string): number => s.split(/\s+/).filter(Boolean).length;

/** Word pieces that concatenate back to `s` (each word keeps the whitespace after it). */
export function wordPieces(s: string): string[] {
  return s.match(/\s*\S+\s*/g) ?? (s ? [s] : []);
}

const STARTED = Date.now().toString(36);
let counter = 0;
const nextId = (prefix: string) => `${prefix}-dev-${STARTED}-${(++counter).toString(36)}`;

/** Resolves after `ms`, or rejects with the abort reason as soon as `signal` aborts. */
function sleep(ms: number, signal: CallSignal): Promise<void> {
  throwIfAborted(signal);
  if (!ms || ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(t);
      reject(abortReason(signal));
    };
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

interface Plan {
  id: string;
  created: number;
  model: string;
  text: string | null;
  reasoning: string | null;
  toolCalls: ToolCall[];
  finish: FinishReason;
  usage: Usage;
  directive: DevDirective;
}

/** The directive of the current step of a multi-step script (the directive itself without `steps`). */
function stepOf(d: DevDirective, req: ChatRequest): DevDirective {
  if (!Array.isArray(d.steps) || d.steps.length === 0) return d;
  const lastUser = req.messages.findLastIndex((m) => m.role === 'user');
  const step = req.messages.slice(lastUser + 1).filter((m) => m.role === 'assistant').length;
  const { steps, ...outer } = d;
  return { ...outer, ...(steps[Math.min(step, steps.length - 1)] ?? {}) };
}

function plan(req: ChatRequest): Plan {
  const lastUser = [...req.messages].reverse().find((m) => m.role === 'user');
  const { directive, rest } = parseDirective(textOf(lastUser?.content ?? null));
  const d: DevDirective = stepOf(directive ?? {}, req);
  const id = nextId('chatcmpl');
  const toolCalls: ToolCall[] = (d.tool_calls ?? []).map((tc, i) => ({
    id: tc.id ?? `call_${id.replace(/\W/g, '')}_${i}`,
    type: 'function',
    function: {
      name: String(tc.name),
      arguments: typeof tc.arguments === 'string' ? tc.arguments : JSON.stringify(tc.arguments ?? {}),
    },
  }));
  const text = d.text !== undefined ? d.text : toolCalls.length ? null : rest;
  const reasoning = d.reasoning !== undefined && req.reasoning?.exclude !== true ? d.reasoning : null;
  const prompt = req.messages.reduce((n, m) => n + countWords(textOf(m.content)), 0);
  const reasoningWords = countWords(d.reasoning ?? '');
  const completion =
    countWords(text ?? '') +
    reasoningWords +
    toolCalls.reduce((n, tc) => n + countWords(`${tc.function.name} ${tc.function.arguments}`), 0);
  const p = d.usage?.prompt_tokens ?? prompt;
  const c = d.usage?.completion_tokens ?? completion;
  const usage: Usage = { prompt_tokens: p, completion_tokens: c, total_tokens: p + c };
  if (reasoningWords) usage.completion_tokens_details = { reasoning_tokens: reasoningWords };
  return {
    id,
    created: Math.floor(Date.now() / 1000),
    model: req.model,
    text,
    reasoning,
    toolCalls,
    finish: d.finish_reason ?? (toolCalls.length ? 'tool_calls' : 'stop'),
    usage,
    directive: d,
  };
}

function scriptedError(d: DevDirective, apiKey: string | null): UpstreamError | null {
  if (!d.error) return null;
  const status = typeof d.error.status === 'number' ? d.error.status : 500;
  const message = redact(d.error.message ?? `dev provider: scripted error ${status}`, [apiKey]);
  return new UpstreamError(status, message, {
    ...(typeof d.error.retry_after_s === 'number' ? { retryAfterMs: d.error.retry_after_s * 1000 } : {}),
    body: { error: { message, code: status } },
  });
}

/** Offline and keyless; it takes the canonical request whole, so nothing is refused on its way. */
const TRAITS: ProviderTraits = { natives: new Set(), target: null, keyOptional: true };

export class DevProvider implements Provider {
  readonly traits = TRAITS;

  constructor(readonly config: ProviderConfig) {}

  private async start(req: ChatRequest, ctx: CallContext): Promise<Plan> {
    throwIfAborted(ctx.signal);
    const p = plan(req);
    await sleep(p.directive.delay_ms ?? 0, ctx.signal);
    const err = scriptedError(p.directive, ctx.apiKey);
    if (err) throw err;
    return p;
  }

  async chat(req: ChatRequest, ctx: CallContext): Promise<ChatResponse> {
    const p = await this.start(req, ctx);
    const message: ChatResponse['choices'][number]['message'] = { role: 'assistant', content: p.text };
    if (p.reasoning !== null) message.reasoning = p.reasoning;
    if (p.toolCalls.length) message.tool_calls = p.toolCalls;
    return {
      id: p.id,
      object: 'chat.completion',
      created: p.created,
      model: p.model,
      choices: [
        { index: 0, message, finish_reason: p.finish, native_finish_reason: p.finish, logprobs: null },
      ],
      usage: p.usage,
    };
  }

  async chatStream(req: ChatRequest, ctx: CallContext): Promise<AsyncIterable<ChatChunk>> {
    const p = await this.start(req, ctx);
    const chunk = (
      delta: ChatChunk['choices'][number]['delta'],
      finish: FinishReason | null = null,
    ): ChatChunk => ({
      id: p.id,
      object: 'chat.completion.chunk',
      created: p.created,
      model: p.model,
      choices: [
        { index: 0, delta, finish_reason: finish, ...(finish ? { native_finish_reason: finish } : {}) },
      ],
    });
    // The prompt is counted before answering: the first chunk says so (ChatChunk.prompt_usage).
    const chunks: ChatChunk[] = [
      {
        ...chunk({ role: 'assistant', content: '' }),
        prompt_usage: { prompt_tokens: p.usage.prompt_tokens },
      },
    ];
    for (const w of wordPieces(p.reasoning ?? '')) chunks.push(chunk({ reasoning: w }));
    for (const w of wordPieces(p.text ?? '')) chunks.push(chunk({ content: w }));
    p.toolCalls.forEach((tc, index) => {
      chunks.push(
        chunk({
          tool_calls: [
            { index, id: tc.id, type: 'function', function: { name: tc.function.name, arguments: '' } },
          ],
        }),
      );
      const args = tc.function.arguments;
      const half = Math.ceil(args.length / 2);
      for (const piece of [args.slice(0, half), args.slice(half)]) {
        if (piece) chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
      }
    });
    chunks.push(chunk({}, p.finish));
    chunks.push({
      id: p.id,
      object: 'chat.completion.chunk',
      created: p.created,
      model: p.model,
      choices: [],
      usage: p.usage,
    });

    const failAfter = p.directive.fail_after_chunks;
    const delay = p.directive.chunk_delay_ms ?? 0;
    const signal = ctx.signal;
    return (async function* () {
      for (let i = 0; i < chunks.length; i++) {
        if (typeof failAfter === 'number' && i >= failAfter) {
          throw new UpstreamError(502, `dev provider: stream failed after ${failAfter} chunks`, {
            retryable: true,
          });
        }
        if (i > 0) await sleep(delay, signal);
        else throwIfAborted(signal);
        yield chunks[i] as ChatChunk;
      }
    })();
  }

  readonly speech = devSpeech;
  readonly transcription = devTranscription;

  async embeddings(req: EmbeddingsRequest, ctx: CallContext): Promise<EmbeddingsResponse> {
    throwIfAborted(ctx.signal);
    const inputs: (string | number[])[] =
      typeof req.input === 'string'
        ? [req.input]
        : req.input.length > 0 && typeof req.input[0] === 'number'
          ? [req.input as number[]]
          : (req.input as (string | number[])[]);
    let tokens = 0;
    const data = inputs.map((input, index) => {
      tokens += typeof input === 'string' ? countWords(input) : input.length;
      const v = devEmbedding(input);
      const embedding =
        req.encoding_format === 'base64' ? Buffer.from(new Float32Array(v).buffer).toString('base64') : v;
      return { object: 'embedding' as const, index, embedding };
    });
    return { object: 'list', data, model: req.model, usage: { prompt_tokens: tokens, total_tokens: tokens } };
  }

  async rerank(req: RerankRequest, ctx: CallContext): Promise<RerankResponse> {
    throwIfAborted(ctx.signal);
    const query = new Set(wordsOf(req.query));
    let tokens = countWords(req.query);
    const results = req.documents.map((d, index) => {
      const text = typeof d === 'string' ? d : (d.text ?? '');
      tokens += countWords(text);
      const words = new Set(wordsOf(text));
      const hits = [...query].filter((w) => words.has(w)).length;
      return { index, relevance_score: query.size ? hits / query.size : 0 };
    });
    // Best first; ties in the documents' order.
    results.sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index);
    return {
      model: req.model,
      results: req.top_n !== undefined ? results.slice(0, req.top_n) : results,
      usage: { total_tokens: tokens },
    };
  }
}

/** Lower-cased words of a text (the rerank scores' unit). */
const wordsOf = (s: string): string[] => s.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];

/** A deterministic unit vector for an input (same input → same vector). */
export function devEmbedding(input: string | number[]): number[] {
  const h = createHash('sha256')
    .update(typeof input === 'string' ? input : JSON.stringify(input))
    .digest();
  const v = Array.from({ length: DEV_EMBEDDING_DIMENSIONS }, (_, i) => h.readInt16BE(i * 2) / 32768);
  const norm = Math.hypot(...v) || 1;
  return v.map((x) => x / norm);
}
