import { createParser } from 'eventsource-parser';

/** One `chat.completion.chunk` of an intern's chat stream (the fields the console reads). */
export interface ChatChunk {
  choices: {
    delta: {
      content?: string | null;
      reasoning?: string | null;
      tool_calls?: { id?: string; function?: { name?: string; arguments?: string } }[];
    };
    finish_reason: string | null;
  }[];
  session_id?: string | null;
  usage?: { total_tokens?: number } | null;
  error?: { code: number; message: string; metadata?: { reason?: string } };
}

/**
 * Reads a server-sent-events body and calls `onChunk` with each JSON chunk until `[DONE]` or the
 * end of the body (`: keepalive` comments are skipped by the parser).
 */
export async function readChunks(body: ReadableStream<Uint8Array>, onChunk: (c: ChatChunk) => void) {
  let done = false;
  const parser = createParser({
    onEvent(event) {
      if (done) return;
      if (event.data === '[DONE]') {
        done = true;
        return;
      }
      try {
        onChunk(JSON.parse(event.data) as ChatChunk);
      } catch {
        // Not JSON: not a chunk of this route; ignored rather than ending the chat.
      }
    },
  });
  const reader = body.getReader();
  const decoder = new TextDecoder();
  try {
    for (;;) {
      const { value, done: end } = await reader.read();
      if (end || done) break;
      parser.feed(decoder.decode(value, { stream: true }));
    }
  } finally {
    reader.releaseLock();
  }
}
