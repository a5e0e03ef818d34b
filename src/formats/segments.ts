/**
 * Canonical chat streams and responses as a sequence of output blocks (reasoning, text, tool call),
 * the shape both caller formats that are not Chat Completions (Anthropic Messages, OpenAI Responses)
 * are built from. One segmenter handles the chunk-level details once: interleaving kinds, tool-call
 * pieces arriving by index, usage on a trailing chunk with empty `choices`, and upstream failures.
 */
import type {
  ChatChunk,
  ChatResponse,
  FinishReason,
  Logprobs,
  PromptUsage,
  ReasoningDetail,
  UrlCitation,
  Usage,
  WebSearchCall,
} from './chat.js';
import { collapseReasoningDetails } from './reasoning-details.js';
import { idBase } from './validate.js';

export type LogprobEntry = NonNullable<Logprobs['content']>[number];

/**
 * Reasoning blocks: by default one per run of `reasoning` text. With `SegmentOptions.reasoningFormat`
 * they follow the `reasoning_details` entries of that format instead (one block per entry), so a
 * caller format whose provider family matches can answer the provider's own blocks: `signature`
 * (a `reasoning.text` entry's) and `data` (a `reasoning.encrypted` entry: an opaque block with no
 * text) are set only from entries of that format.
 */
export type Block =
  | { kind: 'reasoning'; text: string; signature?: string; data?: string }
  /** `annotations`: its citations, offsets into this block's text. */
  | { kind: 'text'; text: string; logprobs?: LogprobEntry[]; annotations?: UrlCitation[] }
  /** A web search the provider ran (opened and closed at once, before the text that cites it). */
  | { kind: 'search'; call: WebSearchCall }
  | { kind: 'refusal'; text: string }
  | { kind: 'tool'; id: string; name: string; arguments: string };

export type Segment =
  /**
   * The first chunk arrived: its id, creation time and the prompt's token counts when it knows them
   * already (its `prompt_usage`, or a usage it carries).
   */
  | { type: 'begin'; id: string; created: number; prompt: PromptUsage | null }
  /** A new block starts (text/arguments empty). */
  | { type: 'open'; index: number; block: Block }
  /**
   * More text / reasoning / arguments for block `index`. `late` marks a tool-call piece that
   * arrived after its block was closed (only upstreams interleaving two calls' pieces do that).
   */
  | {
      type: 'delta';
      index: number;
      kind: Block['kind'];
      text: string;
      logprobs?: LogprobEntry[];
      late?: true;
    }
  /** A citation for text block `index` (which may be closed already), offsets into its text. */
  | { type: 'annotation'; index: number; annotation: UrlCitation; annotationIndex: number }
  /** Block `index` is complete; `final` when closed by the end of the stream (then `finish` is set). */
  | { type: 'close'; index: number; block: Block; final: boolean; finish: FinishReason | null }
  | {
      type: 'end';
      finish: FinishReason | null;
      nativeFinish: string | null;
      usage: Usage | null;
      blocks: Block[];
    }
  /** The upstream failed: nothing follows. */
  | { type: 'error'; message: string };

export interface SegmentOptions {
  /**
   * Reasoning blocks follow the `reasoning_details` entries of this format (see Block); without it
   * (or when a response has no entry of the format) they come from the `reasoning` text.
   */
  reasoningFormat?: string;
}

/** Entries of `format` as reasoning blocks (texts without any content skipped). */
function detailBlocks(details: ReasoningDetail[] | undefined, format: string): Block[] {
  const blocks: Block[] = [];
  for (const d of collapseReasoningDetails((details ?? []).filter((x) => x.format === format))) {
    if (d.type === 'reasoning.text') {
      if (!d.text && !d.signature) continue;
      blocks.push(
        d.signature
          ? { kind: 'reasoning', text: d.text, signature: d.signature }
          : { kind: 'reasoning', text: d.text },
      );
    } else if (d.type === 'reasoning.summary') {
      if (d.summary) blocks.push({ kind: 'reasoning', text: d.summary });
    } else if (d.data) blocks.push({ kind: 'reasoning', text: '', data: d.data });
  }
  return blocks;
}

/**
 * The search an answer with citations but no search of its own ran (OpenAI's chat completions
 * report only the citations): its pages are the cited ones, in order, each once.
 */
export function citedSearch(id: string, annotations: UrlCitation[]): WebSearchCall {
  const seen = new Map<string, { url: string; title?: string }>();
  for (const { url_citation: c } of annotations)
    if (!seen.has(c.url)) seen.set(c.url, { url: c.url, title: c.title });
  return { id, sources: [...seen.values()] };
}

const errorMessage = (err: unknown): string =>
  err instanceof Error ? err.message || err.name : typeof err === 'string' ? err : 'upstream stream failed';

/** The blocks of a non-streamed response (first choice), in the order a stream would produce them. */
export function responseBlocks(
  res: ChatResponse,
  opts: SegmentOptions = {},
): {
  blocks: Block[];
  finish: FinishReason | null;
  nativeFinish: string | null;
} {
  const choice = res.choices[0];
  if (!choice) return { blocks: [], finish: null, nativeFinish: null };
  const m = choice.message;
  const blocks: Block[] = opts.reasoningFormat ? detailBlocks(m.reasoning_details, opts.reasoningFormat) : [];
  if (blocks.length === 0 && m.reasoning) blocks.push({ kind: 'reasoning', text: m.reasoning });
  for (const call of m.web_search_calls ?? []) blocks.push({ kind: 'search', call });
  if (!m.web_search_calls?.length && m.annotations?.length)
    blocks.push({ kind: 'search', call: citedSearch(`${idBase(res.id)}_0`, m.annotations) });
  const text =
    typeof m.content === 'string'
      ? m.content
      : (m.content ?? [])
          .filter((p) => p.type === 'text')
          .map((p) => (p as { text: string }).text)
          .join('');
  if (text) {
    const logprobs = choice.logprobs?.content;
    const block: Block = logprobs ? { kind: 'text', text, logprobs } : { kind: 'text', text };
    if (m.annotations?.length) block.annotations = m.annotations;
    blocks.push(block);
  }
  if (m.refusal) blocks.push({ kind: 'refusal', text: m.refusal });
  for (const tc of m.tool_calls ?? []) {
    blocks.push({ kind: 'tool', id: tc.id, name: tc.function.name, arguments: tc.function.arguments });
  }
  return { blocks, finish: choice.finish_reason, nativeFinish: choice.native_finish_reason ?? null };
}

/**
 * Canonical chunks → segments. Only choice 0 is read (n > 1 is refused at every edge). A delta of
 * another kind closes the open block and opens a new one; a tool call opens its block once its name
 * is known (pieces before that are held); an input error or `finish_reason: 'error'` ends the
 * sequence with an `error` segment instead of `end`.
 */
export async function* segmentChatStream(
  chunks: AsyncIterable<ChatChunk>,
  opts: SegmentOptions = {},
): AsyncGenerator<Segment> {
  const blocks: Block[] = [];
  let open: number | null = null;
  /** The `index` of the reasoning_details entry the open block follows (undefined: none / no index). */
  let openDetail: { index: number | undefined } | null = null;
  const toolBlock = new Map<number, number>(); // chunk tool-call index → block index
  const pending = new Map<number, { id?: string; name?: string; args: string }>();
  let begun = false;
  let base = '';
  let finish: FinishReason | null = null;
  let nativeFinish: string | null = null;
  let usage: Usage | null = null;

  function* close(final: boolean): Generator<Segment> {
    if (open === null) return;
    const index = open;
    open = null;
    yield {
      type: 'close',
      index,
      block: { ...(blocks[index] as Block) },
      final,
      finish: final ? finish : null,
    };
  }

  /** Closes the open block, opens `block`; returns its index. */
  function* start(block: Block): Generator<Segment, number> {
    yield* close(false);
    blocks.push(block);
    const index = blocks.length - 1;
    open = index;
    openDetail = null;
    yield { type: 'open', index, block: { ...block } };
    return index;
  }

  function* appendText(
    kind: 'text' | 'reasoning',
    text: string,
    logprobs?: LogprobEntry[],
  ): Generator<Segment> {
    const cur = open === null ? undefined : blocks[open];
    const same = cur && cur.kind === kind && !(cur.kind === 'reasoning' && cur.data !== undefined);
    const index = same ? (open as number) : yield* start({ kind, text: '' });
    const block = blocks[index] as { text: string; logprobs?: LogprobEntry[] };
    block.text += text;
    if (logprobs?.length) block.logprobs = [...(block.logprobs ?? []), ...logprobs];
    yield logprobs?.length
      ? { type: 'delta', index, kind, text, logprobs }
      : { type: 'delta', index, kind, text };
  }

  /** A reasoning_details fragment of the followed format (reasoningFormat mode). */
  function* detailFragment(d: ReasoningDetail): Generator<Segment> {
    if (d.type === 'reasoning.encrypted') {
      if (d.data) yield* start({ kind: 'reasoning', text: '', data: d.data });
      return;
    }
    const text = d.type === 'reasoning.text' ? d.text : d.summary;
    const cur = open === null ? undefined : blocks[open];
    let index: number;
    const signature = d.type === 'reasoning.text' ? d.signature : undefined;
    if (cur?.kind === 'reasoning' && openDetail !== null && openDetail.index === d.index)
      index = open as number;
    else if (!text && !signature) return;
    else {
      index = yield* start({ kind: 'reasoning', text: '' });
      openDetail = { index: d.index };
    }
    const block = blocks[index] as Extract<Block, { kind: 'reasoning' }>;
    if (signature) block.signature = signature;
    if (text) {
      block.text += text;
      yield { type: 'delta', index, kind: 'reasoning', text };
    }
  }

  /** Citations (offsets into the whole content) → the text block holding their start. */
  function* annotate(annotations: UrlCitation[]): Generator<Segment> {
    for (const a of annotations) {
      let index = -1;
      let offset = 0;
      let at = 0;
      for (const [i, b] of blocks.entries()) {
        if (b.kind !== 'text') continue;
        if (index < 0 || a.url_citation.start_index >= at) {
          index = i;
          offset = at;
        }
        at += b.text.length;
      }
      if (index < 0) index = yield* start({ kind: 'text', text: '' });
      const block = blocks[index] as Extract<Block, { kind: 'text' }>;
      const c = a.url_citation;
      const annotation: UrlCitation = {
        type: 'url_citation',
        url_citation: { ...c, start_index: c.start_index - offset, end_index: c.end_index - offset },
      };
      block.annotations = [...(block.annotations ?? []), annotation];
      yield { type: 'annotation', index, annotation, annotationIndex: block.annotations.length - 1 };
    }
  }

  function* toolArgs(index: number, text: string): Generator<Segment> {
    if (!text) return;
    const block = blocks[index] as { arguments: string };
    block.arguments += text;
    yield open === index
      ? { type: 'delta', index, kind: 'tool', text }
      : { type: 'delta', index, kind: 'tool', text, late: true };
  }

  try {
    for await (const chunk of chunks) {
      if (!begun) {
        begun = true;
        base = idBase(chunk.id);
        yield {
          type: 'begin',
          id: chunk.id,
          created: chunk.created,
          prompt: chunk.prompt_usage ?? chunk.usage ?? null,
        };
      }
      if (chunk.usage) usage = chunk.usage;
      for (const choice of chunk.choices) {
        if (choice.index !== 0) continue;
        const d = choice.delta ?? {};
        const own = opts.reasoningFormat
          ? (d.reasoning_details ?? []).filter((x) => x.format === opts.reasoningFormat)
          : [];
        // The entries of the followed format carry this chunk's reasoning text when they have any.
        const ownText = own.some((x) => x.type !== 'reasoning.encrypted');
        if (d.reasoning && !ownText) yield* appendText('reasoning', d.reasoning);
        for (const x of own) yield* detailFragment(x);
        if (d.content) yield* appendText('text', d.content, choice.logprobs?.content ?? undefined);
        // Citations before the searches of the same chunk: they belong to the text still open
        // (Gemini reports both at the end).
        if (d.annotations?.length) yield* annotate(d.annotations);
        for (const call of d.web_search_calls ?? []) {
          yield* start({ kind: 'search', call });
          yield* close(false);
        }
        for (const tc of d.tool_calls ?? []) {
          const args = tc.function?.arguments ?? '';
          const known = toolBlock.get(tc.index);
          if (known !== undefined) {
            yield* toolArgs(known, args);
            continue;
          }
          const p = pending.get(tc.index) ?? { args: '' };
          if (tc.id) p.id = tc.id;
          if (tc.function?.name) p.name = tc.function.name;
          p.args += args;
          if (!p.name) {
            pending.set(tc.index, p);
            continue;
          }
          pending.delete(tc.index);
          const index = yield* start({
            kind: 'tool',
            id: p.id ?? `call_${base}_${tc.index}`,
            name: p.name,
            arguments: '',
          });
          toolBlock.set(tc.index, index);
          yield* toolArgs(index, p.args);
        }
        if (choice.finish_reason) {
          finish = choice.finish_reason;
          nativeFinish = choice.native_finish_reason ?? null;
        }
      }
    }
  } catch (err) {
    yield { type: 'error', message: errorMessage(err) };
    return;
  }
  if (!begun) {
    yield { type: 'error', message: 'the upstream stream ended without sending any data' };
    return;
  }
  if (finish === 'error') {
    yield { type: 'error', message: 'the upstream provider reported an error during generation' };
    return;
  }
  const [unnamed] = pending.keys();
  if (unnamed !== undefined) {
    yield { type: 'error', message: `the upstream stream sent tool call ${unnamed} without a name` };
    return;
  }
  // Citations without a search (OpenAI's): the search that found them, last.
  const cited = blocks.flatMap((b) => (b.kind === 'text' ? (b.annotations ?? []) : []));
  if (cited.length && !blocks.some((b) => b.kind === 'search')) {
    yield* start({ kind: 'search', call: citedSearch(`${base}_0`, cited) });
  }
  yield* close(true);
  yield { type: 'end', finish, nativeFinish, usage, blocks: blocks.map((b) => ({ ...b })) };
}
