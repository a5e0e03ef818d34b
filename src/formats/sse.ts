import { createParser, type EventSourceMessage } from 'eventsource-parser';

export interface SseEvent {
  /** The `event:` field; undefined for unnamed events (OpenAI streams). */
  event?: string;
  data: string;
}

/** One SSE frame: `event: x\ndata: y\n\n` (multi-line data split over several `data:` lines). */
export function encodeSse(e: SseEvent): string {
  const data = e.data.includes('\n') ? e.data.replaceAll('\n', '\ndata: ') : e.data;
  return e.event ? `event: ${e.event}\ndata: ${data}\n\n` : `data: ${data}\n\n`;
}

/** A JSON payload as an SSE frame (one `data:` line: JSON.stringify escapes every line break). */
export const sseJson = (data: unknown, event?: string): string =>
  `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`;

/** The events of a complete SSE text (a frame relayed as bytes, decoded for a reader of its events). */
export function sseEventsOf(text: string): SseEvent[] {
  const out: SseEvent[] = [];
  createParser({ onEvent: (m: EventSourceMessage) => out.push({ event: m.event, data: m.data }) }).feed(text);
  return out;
}

/**
 * Parses a byte stream of SSE into events as they arrive (comments and retry fields are skipped).
 * Works on undici/fetch bodies (async-iterable Uint8Array chunks).
 */
export async function* parseSse(body: AsyncIterable<Uint8Array | string>): AsyncGenerator<SseEvent> {
  const queue: SseEvent[] = [];
  const parser = createParser({
    onEvent: (m: EventSourceMessage) => queue.push({ event: m.event, data: m.data }),
  });
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    parser.feed(typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true }));
    while (queue.length > 0) yield queue.shift() as SseEvent;
  }
  parser.feed(decoder.decode());
  while (queue.length > 0) yield queue.shift() as SseEvent;
}

/**
 * As `parseSse`, but the events of one chunk of the body together (an array per chunk that
 * completed any): a relay that handles a chunk's events at once makes one pass through its
 * layers per network read instead of one per event.
 */
export async function* parseSseChunks(body: AsyncIterable<Uint8Array | string>): AsyncGenerator<SseEvent[]> {
  let batch: SseEvent[] = [];
  const parser = createParser({
    onEvent: (m: EventSourceMessage) => batch.push({ event: m.event, data: m.data }),
  });
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    parser.feed(typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true }));
    if (batch.length > 0) {
      const out = batch;
      batch = [];
      yield out;
    }
  }
  parser.feed(decoder.decode());
  if (batch.length > 0) yield batch;
}
