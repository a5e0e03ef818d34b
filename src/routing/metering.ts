import type { ChatChunk, ChatResponse, Usage } from '../formats/chat.js';
import type { SafeguardResult } from '../guardrails/content-filters.js';
import type { RelayFrame } from '../providers/types.js';

/**
 * What the engine reads of an answer on its way to the caller, to bill it: a translated stream's
 * chunks, a lane's relay frames, a translated answer's output (an estimate's input when the
 * upstream reported no usage).
 */

/** What a stream's meter has seen so far. */
export interface Meter {
  usage: Usage | null;
  /** The provider's id of the answer (lanes). */
  responseId: string | null;
  /** Characters of output (an estimate's input when no usage came). */
  chars: number;
  finishReason: string | null;
  /** The provider's own filter verdicts (Azure's), as its chunks carry them. */
  safeguards: SafeguardResult[];
}

export const readChunk = (chunk: ChatChunk, m: Meter) => {
  if (chunk.usage) m.usage = chunk.usage;
  if (chunk.provider_safeguards) m.safeguards.push(...chunk.provider_safeguards);
  for (const ch of chunk.choices) {
    m.chars += (ch.delta.content?.length ?? 0) + (ch.delta.reasoning?.length ?? 0);
    for (const tc of ch.delta.tool_calls ?? [])
      m.chars += (tc.function?.name?.length ?? 0) + (tc.function?.arguments?.length ?? 0);
    if (ch.finish_reason) m.finishReason = ch.finish_reason;
  }
};

export const readFrame = (f: RelayFrame, m: Meter) => {
  if (f.usage) m.usage = f.usage;
  if (f.responseId) m.responseId = f.responseId;
  if (f.outputChars) m.chars += f.outputChars;
  if (f.finishReason) m.finishReason = f.finishReason;
};

/** Characters of a translated answer's output. */
export const responseChars = (r: ChatResponse) =>
  r.choices.reduce((n, ch) => {
    const m = ch.message;
    const content = typeof m.content === 'string' ? m.content.length : 0;
    const tools = (m.tool_calls ?? []).reduce(
      (t, tc) => t + tc.function.name.length + tc.function.arguments.length,
      0,
    );
    return n + content + (m.reasoning?.length ?? 0) + tools;
  }, 0);
