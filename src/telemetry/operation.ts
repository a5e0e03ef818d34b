/**
 * `gen_ai.operation.name` of a call, from its model kind or the endpoint that served it (a
 * generation record's): the conventions' `chat` and `embeddings`, and the kind's own name where
 * they define none (rerank, speech, transcription) — not `chat`, which dashboards would sum with
 * the chat calls.
 */
const OWN_NAMES = new Set(['embeddings', 'rerank', 'speech', 'transcription']);

export const operationName = (kindOrEndpoint: string | undefined): string =>
  kindOrEndpoint !== undefined && OWN_NAMES.has(kindOrEndpoint) ? kindOrEndpoint : 'chat';
