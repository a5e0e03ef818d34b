/**
 * One streamed chat completion: POST /chat/completions with `stream: true` through the typed client,
 * its server-sent events parsed as they arrive (eventsource-parser), so the answer grows on screen.
 */
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { ApiError, call, dataApi, type JsonBody } from '../../api/client';

/** A Chat Completions request, as the gateway's OpenAPI document describes it. */
export type ChatRequest = JsonBody<'/chat/completions', 'post'>;

/** A type, not an interface: the request's message type has an index signature to match. */
export type ChatMessage = {
  role: 'system' | 'user' | 'assistant';
  content: string;
};

/** What the gateway says about one answer. */
export interface AnswerMeta {
  provider: string | null;
  model: string | null;
  generationId: string | null;
  /** Milliseconds from sending to the first streamed token, and to the end of the stream. */
  ttfbMs: number | null;
  totalMs: number | null;
  promptTokens: number | null;
  completionTokens: number | null;
  /** USD, as the final usage chunk reports it. */
  cost: number | null;
  finishReason: string | null;
}

interface Chunk {
  id?: string;
  provider?: string;
  error?: { message?: string; code?: number };
  choices?: { delta?: { content?: string | null }; finish_reason?: string | null }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number; cost?: number } | null;
}

/**
 * Streams one answer: `onText` gets each piece of text, `onMeta` what is known so far. Resolves when
 * the stream ends (or is aborted through `signal`); throws an ApiError for a refusal or a failure
 * the stream reports mid-way.
 */
export async function streamChat(
  body: ChatRequest,
  signal: AbortSignal,
  onText: (piece: string) => void,
  onMeta: (meta: AnswerMeta) => void,
): Promise<AnswerMeta> {
  const started = performance.now();
  const meta: AnswerMeta = {
    provider: null,
    model: null,
    generationId: null,
    ttfbMs: null,
    totalMs: null,
    promptTokens: null,
    completionTokens: null,
    cost: null,
    finishReason: null,
  };
  const sent = dataApi.POST('/chat/completions', { body, parseAs: 'stream', signal });
  // A stop before the gateway answered is not a failure.
  const result = await sent.catch((err: unknown) => {
    if (signal.aborted) return null;
    throw err;
  });
  if (!result) return meta;
  const stream = await call(Promise.resolve(result));
  const headers = result.response.headers;
  meta.provider = headers.get('x-gatehouse-provider');
  meta.model = headers.get('x-gatehouse-model');
  meta.generationId = headers.get('x-gatehouse-generation-id');
  onMeta({ ...meta });

  const events = (stream as unknown as ReadableStream<BufferSource>)
    .pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream());
  const reader = events.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done || value.data === '[DONE]') break;
      let chunk: Chunk;
      try {
        chunk = JSON.parse(value.data) as Chunk;
      } catch {
        continue; // a comment or keep-alive the parser passed on
      }
      if (chunk.error)
        throw new ApiError(chunk.error.code ?? 502, chunk.error.message ?? 'The stream failed');
      if (chunk.id && !meta.generationId) meta.generationId = chunk.id;
      if (chunk.provider) meta.provider = chunk.provider;
      const choice = chunk.choices?.[0];
      const piece = choice?.delta?.content;
      if (piece) {
        if (meta.ttfbMs === null) meta.ttfbMs = Math.round(performance.now() - started);
        onText(piece);
      }
      if (choice?.finish_reason) meta.finishReason = choice.finish_reason;
      if (chunk.usage) {
        meta.promptTokens = chunk.usage.prompt_tokens ?? null;
        meta.completionTokens = chunk.usage.completion_tokens ?? null;
        meta.cost = chunk.usage.cost ?? null;
      }
      onMeta({ ...meta });
    }
  } catch (err) {
    if (!signal.aborted) throw err;
    meta.finishReason = 'stopped';
  } finally {
    reader.releaseLock();
  }
  if (signal.aborted) meta.finishReason = 'stopped';
  meta.totalMs = Math.round(performance.now() - started);
  onMeta({ ...meta });
  return meta;
}
