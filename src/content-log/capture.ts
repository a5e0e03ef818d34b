import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { AUDIO_GATEHOUSE_FIELDS } from '../formats/audio.js';
import type { ChatChunk, ChatResponse } from '../formats/chat.js';
import { frameEvents } from '../providers/lane.js';
import type { NativeWire, RelayFrame } from '../providers/types.js';
import type { Body } from '../routing/call.js';

/**
 * What content logging keeps of a call, read from what went to the provider (the caller's body
 * after the content filters' redactions) and from the answer the caller received (after the
 * filters on responses). Only message content is read: the body's other fields (provider
 * preferences, debug options, metadata) are not kept. Any JSON is accepted; what is not the
 * expected shape is left out, never an error.
 */

type Obj = Record<string, unknown>;
const isObj = (x: unknown): x is Obj => x !== null && typeof x === 'object' && !Array.isArray(x);

/** OpenRouter's `input`: a prompt string, or the messages in the caller's own format. */
export type ContentInput = { prompt: string } | { messages: unknown[] };

export interface ContentToolCall {
  id: string | null;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ContentOutput {
  completion: string | null;
  reasoning: string | null;
  tool_calls: ContentToolCall[] | null;
}

export interface ContentError {
  message: string | null;
  status: number | null;
}

/** Inline files (base64 images, PDFs, audio) above this size are replaced by a marker. */
const INLINE_DATA_MAX = 1024;

/** A copy of `v` with large inline data left out (kept content is text, not uploads). */
function withoutInlineData(v: unknown, depth = 0): unknown {
  if (typeof v === 'string') {
    if (v.length > INLINE_DATA_MAX && /^data:[^,]{0,100};base64,/.test(v))
      return `${v.slice(0, v.indexOf(',') + 1)}[${v.length} characters not kept]`;
    return v;
  }
  if (depth > 32) return null;
  if (Array.isArray(v)) return v.map((x) => withoutInlineData(x, depth + 1));
  if (!isObj(v)) return v;
  const out: Obj = {};
  for (const [k, x] of Object.entries(v)) {
    // Anthropic's and Responses' base64 sources: {type: 'base64', data} and file_data.
    if ((k === 'data' || k === 'file_data') && typeof x === 'string' && x.length > INLINE_DATA_MAX)
      out[k] = `[${x.length} characters not kept]`;
    else out[k] = withoutInlineData(x, depth + 1);
  }
  return out;
}

const systemMessage = (content: unknown) => ({ role: 'system', content });

/** The input of a chat-kind call by its endpoint (chat, messages, responses). */
export function inputOf(endpoint: string, body: Body): ContentInput {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  if (endpoint === 'messages') {
    const system = body.system;
    const all = system === undefined || system === null ? messages : [systemMessage(system), ...messages];
    return { messages: withoutInlineData(all) as unknown[] };
  }
  if (endpoint === 'responses') {
    const instructions = typeof body.instructions === 'string' ? body.instructions : null;
    const input = body.input;
    if (typeof input === 'string' && instructions === null) return { prompt: input };
    const items =
      typeof input === 'string' ? [{ role: 'user', content: input }] : Array.isArray(input) ? input : [];
    const all = instructions === null ? items : [systemMessage(instructions), ...items];
    return { messages: withoutInlineData(all) as unknown[] };
  }
  if (!Array.isArray(body.messages) && typeof body.prompt === 'string') return { prompt: body.prompt };
  return { messages: withoutInlineData(messages) as unknown[] };
}

/** Text of a message's content: a string, or the `text` of its parts joined. */
function textOf(content: unknown): string | null {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return null;
  const texts = content.flatMap((p) => (isObj(p) && typeof p.text === 'string' ? [p.text] : []));
  return texts.length ? texts.join('') : null;
}

const orNull = (s: string) => (s === '' ? null : s);

/**
 * Assembles an answer from its pieces (stream deltas or a whole answer's blocks): the text, the
 * reasoning, the tool calls by index.
 */
export class AnswerAssembly {
  private completion = '';
  private reasoning = '';
  private sawCompletion = false;
  private readonly tools = new Map<number, { id: string | null; name: string; arguments: string }>();

  text(s: unknown): void {
    if (typeof s !== 'string') return;
    this.completion += s;
    this.sawCompletion = true;
  }

  thought(s: unknown): void {
    if (typeof s === 'string') this.reasoning += s;
  }

  tool(index: number, part: { id?: unknown; name?: unknown; arguments?: unknown }): void {
    const t = this.tools.get(index) ?? { id: null, name: '', arguments: '' };
    if (typeof part.id === 'string' && part.id) t.id = part.id;
    if (typeof part.name === 'string') t.name += part.name;
    if (typeof part.arguments === 'string') t.arguments += part.arguments;
    this.tools.set(index, t);
  }

  /** Replaces what was assembled (a stream's final snapshot of the whole answer). */
  reset(): void {
    this.completion = '';
    this.reasoning = '';
    this.sawCompletion = false;
    this.tools.clear();
  }

  output(): ContentOutput {
    const tools = [...this.tools.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, t]) => ({
        id: t.id,
        type: 'function' as const,
        function: { name: t.name, arguments: t.arguments },
      }));
    return {
      completion: this.sawCompletion ? this.completion : null,
      reasoning: orNull(this.reasoning),
      tool_calls: tools.length ? tools : null,
    };
  }

  /** A Chat Completions message (a translated answer, or an OpenAI chat lane's). */
  chatMessage(m: unknown): void {
    if (!isObj(m)) return;
    const text = textOf(m.content);
    if (text !== null) this.text(text);
    // OpenRouter's `reasoning`; OpenAI-compatible servers' `reasoning_content`.
    this.thought(m.reasoning ?? m.reasoning_content);
    if (Array.isArray(m.tool_calls))
      for (const [i, tc] of m.tool_calls.entries())
        if (isObj(tc)) this.tool(i, { id: tc.id, ...(isObj(tc.function) ? tc.function : {}) });
  }

  /** A Chat Completions chunk's first choice. */
  chatChunk(json: unknown): void {
    if (!isObj(json) || !Array.isArray(json.choices)) return;
    const choice = json.choices[0];
    // A legacy completion's chunk: its text.
    if (isObj(choice) && typeof choice.text === 'string') this.text(choice.text);
    if (!isObj(choice) || !isObj(choice.delta)) return;
    const d = choice.delta;
    if (typeof d.content === 'string') this.text(d.content);
    this.thought(d.reasoning ?? d.reasoning_content);
    if (Array.isArray(d.tool_calls))
      for (const tc of d.tool_calls)
        if (isObj(tc))
          this.tool(typeof tc.index === 'number' ? tc.index : 0, {
            id: tc.id,
            ...(isObj(tc.function) ? tc.function : {}),
          });
  }

  /** An Anthropic Messages answer's content blocks. */
  messagesBlocks(content: unknown): void {
    if (!Array.isArray(content)) return;
    for (const [i, b] of content.entries()) {
      if (!isObj(b)) continue;
      if (b.type === 'text') this.text(b.text);
      else if (b.type === 'thinking') this.thought(b.thinking);
      else if (b.type === 'tool_use' || b.type === 'server_tool_use')
        this.tool(i, { id: b.id, name: b.name, arguments: JSON.stringify(b.input ?? {}) });
    }
  }

  /** An Anthropic Messages stream event. */
  messagesEvent(json: unknown): void {
    if (!isObj(json)) return;
    const index = typeof json.index === 'number' ? json.index : 0;
    if (json.type === 'content_block_start' && isObj(json.content_block)) {
      const b = json.content_block;
      if (b.type === 'text') this.text(b.text);
      else if (b.type === 'thinking') this.thought(b.thinking);
      else if (b.type === 'tool_use' || b.type === 'server_tool_use')
        this.tool(index, { id: b.id, name: b.name });
    } else if (json.type === 'content_block_delta' && isObj(json.delta)) {
      const d = json.delta;
      if (d.type === 'text_delta') this.text(d.text);
      else if (d.type === 'thinking_delta') this.thought(d.thinking);
      else if (d.type === 'input_json_delta') this.tool(index, { arguments: d.partial_json });
    }
  }

  /** A Responses API response object's output items. */
  responsesOutput(response: unknown): void {
    if (!isObj(response) || !Array.isArray(response.output)) return;
    for (const [i, item] of response.output.entries()) {
      if (!isObj(item)) continue;
      if (item.type === 'message') {
        const text = textOf(item.content);
        if (text !== null) this.text(text);
      } else if (item.type === 'reasoning') {
        for (const key of ['summary', 'content']) {
          const t = textOf(item[key]);
          if (t !== null) this.thought(t);
        }
      } else if (item.type === 'function_call') {
        this.tool(i, { id: item.call_id ?? item.id, name: item.name, arguments: item.arguments });
      }
    }
  }

  /** A Responses API stream event: deltas as they come, then the final response replaces them. */
  responsesEvent(json: unknown): void {
    if (!isObj(json)) return;
    const type = json.type;
    if ((type === 'response.completed' || type === 'response.incomplete') && isObj(json.response)) {
      this.reset();
      this.responsesOutput(json.response);
    } else if (type === 'response.output_text.delta') this.text(json.delta);
    else if (type === 'response.reasoning_summary_text.delta' || type === 'response.reasoning_text.delta')
      this.thought(json.delta);
  }
}

/** A translated (canonical) answer's output. */
export function chatOutput(r: ChatResponse): ContentOutput {
  const a = new AnswerAssembly();
  a.chatMessage(r.choices[0]?.message);
  return a.output();
}

/** A lane's whole answer (the provider's own body, filtered) by its native wire. */
export function laneOutput(native: NativeWire, json: unknown): ContentOutput {
  const a = new AnswerAssembly();
  if (native === 'anthropic-messages') a.messagesBlocks(isObj(json) ? json.content : null);
  else if (native === 'openai-responses') a.responsesOutput(json);
  else if (isObj(json) && Array.isArray(json.choices)) {
    const choice = json.choices[0] as Obj | undefined;
    // A legacy completion's answer is its `text` (openai-completions).
    if (typeof choice?.text === 'string') a.chatMessage({ content: choice.text });
    else a.chatMessage(choice?.message);
  }
  return a.output();
}

/** The JSON data of an SSE event (the tap's parse when it made one). */
function dataOf(f: RelayFrame): unknown {
  if (f.json !== undefined) return f.json;
  const data = (f.frame as string)
    .split('\n')
    .filter((l) => l.startsWith('data:'))
    .map((l) => l.slice(5).trimStart())
    .join('\n');
  if (data === '' || data === '[DONE]') return undefined;
  try {
    return JSON.parse(data);
  } catch {
    return undefined;
  }
}

/** Reads a stream's answer as it goes by. */
export interface StreamReader<T> {
  read(item: T): void;
  output(): ContentOutput;
}

export function chunkReader(): StreamReader<ChatChunk> {
  const a = new AnswerAssembly();
  return { read: (c) => a.chatChunk(c), output: () => a.output() };
}

export function frameReader(native: NativeWire): StreamReader<RelayFrame> {
  const a = new AnswerAssembly();
  const event =
    native === 'anthropic-messages'
      ? (j: unknown) => a.messagesEvent(j)
      : native === 'openai-responses'
        ? (j: unknown) => a.responsesEvent(j)
        : (j: unknown) => a.chatChunk(j);
  return {
    read: (f) => {
      for (const e of frameEvents(f)) event(dataOf(e));
    },
    output: () => a.output(),
  };
}

/**
 * Fields of a rerank or audio body that are not content: Gatehouse's routing and observability
 * fields (and voice references: audio, never kept).
 */
const NOT_CONTENT = new Set<string>(AUDIO_GATEHOUSE_FIELDS);

/**
 * The input of a rerank or audio call: its request as sent to the provider (after redactions), as
 * one item — a rerank's query and documents, speech's input text and voice, a transcription's
 * prompt and settings. A transcription's audio is never kept: its upload stands as its name, type
 * and size, base64 `input_audio` as its format.
 */
export function requestInput(body: Body): ContentInput {
  const out: Obj = {};
  for (const [k, v] of Object.entries(body)) {
    if (NOT_CONTENT.has(k)) continue;
    if (k === 'file' && isObj(v) && v.kind === 'file')
      out.file = { filename: v.filename, content_type: v.contentType, bytes: v.bytes, kept: false };
    else if (k === 'input_audio' && isObj(v)) out.input_audio = { format: v.format, kept: false };
    else out[k] = v;
  }
  return { messages: [withoutInlineData(out)] };
}

/** Only a text. */
export const textOutput = (completion: string | null): ContentOutput => ({
  completion,
  reasoning: null,
  tool_calls: null,
});

/** A rerank's ranking, best first, as JSON text: `[{"index":1,"relevance_score":0.97}, …]`. */
export const rankingOutput = (results: { index: number; relevance_score: number }[]): ContentOutput =>
  textOutput(JSON.stringify(results.map((r) => ({ index: r.index, relevance_score: r.relevance_score }))));

/** A whole transcription: the text of a JSON answer, or a text, srt or vtt answer as it came. */
export function transcriptOutput(parsed: unknown, body: string): ContentOutput {
  if (parsed === undefined) return textOutput(body);
  return textOutput(isObj(parsed) && typeof parsed.text === 'string' ? parsed.text : null);
}

/** Speech: its audio is not kept, only what it was. */
export const audioNote = (contentType: string, bytes: number): ContentOutput =>
  textOutput(`[${contentType} audio, ${bytes} bytes, not kept]`);

/** A transcription's event stream: the deltas' text, replaced by `transcript.text.done`'s. */
export function transcriptReader(): StreamReader<Buffer> {
  let text = '';
  let seen = false;
  const decoder = new TextDecoder();
  const parser = createParser({
    onEvent: (m: EventSourceMessage) => {
      let e: unknown;
      try {
        e = JSON.parse(m.data);
      } catch {
        return;
      }
      if (!isObj(e)) return;
      if (e.type === 'transcript.text.delta' && typeof e.delta === 'string') {
        text += e.delta;
        seen = true;
      } else if (e.type === 'transcript.text.done' && typeof e.text === 'string') {
        text = e.text;
        seen = true;
      }
    },
  });
  return {
    read: (chunk) => parser.feed(decoder.decode(chunk, { stream: true })),
    output: () => textOutput(seen ? text : null),
  };
}

/** Speech's audio: its size counted as it passes. */
export function audioReader(contentType: string): StreamReader<Buffer> {
  let bytes = 0;
  return {
    read: (chunk) => {
      bytes += chunk.length;
    },
    output: () => audioNote(contentType, bytes),
  };
}
