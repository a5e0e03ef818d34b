import { chatWire } from './chat.js';
import { embeddingsWire } from './embeddings.js';
import { countTokensWire, messagesWire } from './messages.js';
import { responsesWire } from './responses.js';

/** Every incoming wire format, by endpoint name: the inference routes and batches are built from it. */
export const WIRES = {
  chat: chatWire,
  messages: messagesWire,
  responses: responsesWire,
  embeddings: embeddingsWire,
} as const;

/** Token counting of a Messages body (not a call: nothing is billed or recorded). */
export { countTokensWire };

export type WireName = keyof typeof WIRES;
export type { CallerWire, ChatWire, EmbeddingsWire } from './wire.js';
