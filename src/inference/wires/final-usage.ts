import type { ChatChunk } from '../../formats/chat.js';
import type { Streaming } from '../../routing/engine.js';

/**
 * A translated stream's chunks, with a final usage chunk added when the upstream ended without one
 * (the engine estimated it): every caller format reports usage at the end of a stream.
 */
export async function* withFinalUsage(s: Streaming & { lane: false }): AsyncGenerator<ChatChunk> {
  let sawUsage = false;
  for await (const chunk of s.chunks) {
    if (chunk.usage) sawUsage = true;
    yield chunk;
  }
  const f = s.final();
  if (!sawUsage && f?.usage) {
    yield {
      id: s.info.generationId,
      object: 'chat.completion.chunk',
      created: Math.floor(Date.now() / 1000),
      model: s.info.model.id,
      choices: [],
      usage: f.usage,
    };
  }
}
