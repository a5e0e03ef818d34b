/**
 * OpenAI's legacy Completions format (`POST /completions`: a `prompt`, answered with `text`), as
 * OpenAI-compatible servers (vLLM, llama.cpp, Ollama) and OpenRouter still serve it — what code
 * autocomplete and base models are called with. Served as it is by a provider that speaks it (a
 * lane); translated for the others: the prompt becomes the user's message, the answer's message its
 * `text`. What only the native API can do — several prompts at once, token prompts, `suffix`
 * (fill-in-the-middle), `echo`, `logprobs`, `best_of` — is a 400 naming it on a translated call.
 */

import type { ChatChunk, ChatRequest, ChatResponse } from './chat.js';
import { chatRequestFromBody } from './chat-edge.js';
import { fail, given, isObj, type Obj } from './validate.js';

/** Fields only the Completions API has: read here, never handed to the chat translation. */
const OWN_FIELDS = ['prompt', 'suffix', 'echo', 'logprobs', 'best_of'] as const;

const NATIVE_ONLY = 'is only served by a provider of the Completions API itself';

/** The one text prompt a translated call can carry. */
function promptOf(b: Obj): string {
  const p = b.prompt;
  if (typeof p === 'string') return p;
  if (Array.isArray(p) && p.length === 1 && typeof p[0] === 'string') return p[0];
  if (Array.isArray(p) && p.length > 0)
    return fail('prompt', `several prompts, or a prompt of tokens, ${NATIVE_ONLY}`);
  return fail('prompt', 'is required (a string)');
}

/** A Completions body as the canonical chat request: its prompt as the user's one message. */
export function completionsRequestToChat(body: unknown): ChatRequest {
  if (!isObj(body)) return fail('body', 'must be a JSON object');
  const prompt = promptOf(body);
  if (given(body.suffix) && body.suffix !== '') fail('suffix', `(fill-in-the-middle) ${NATIVE_ONLY}`);
  if (body.echo === true) fail('echo', NATIVE_ONLY);
  if (given(body.logprobs)) fail('logprobs', NATIVE_ONLY);
  if (given(body.best_of) && body.best_of !== 1) fail('best_of', NATIVE_ONLY);
  const rest: Obj = {};
  for (const [k, v] of Object.entries(body)) if (!(OWN_FIELDS as readonly string[]).includes(k)) rest[k] = v;
  return chatRequestFromBody({ ...rest, messages: [{ role: 'user', content: prompt }] });
}

/** The text of an answer's message (its content parts joined). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content.map((p) => (isObj(p) && typeof p.text === 'string' ? p.text : '')).join('');
  return '';
}

/** A translated answer as a Completions one: each choice's message as its `text`. */
export function chatToCompletion(res: ChatResponse): Obj {
  return {
    id: res.id,
    object: 'text_completion',
    created: res.created,
    model: res.model,
    choices: res.choices.map((c) => ({
      text: textOf(c.message.content),
      index: c.index,
      logprobs: null,
      finish_reason: c.finish_reason,
    })),
  };
}

/** A translated stream chunk as a Completions one: each delta's text. */
export function chunkToCompletion(chunk: ChatChunk): Obj {
  return {
    id: chunk.id,
    object: 'text_completion',
    created: chunk.created,
    model: chunk.model,
    choices: chunk.choices.map((c) => ({
      text: typeof c.delta.content === 'string' ? c.delta.content : '',
      index: c.index,
      logprobs: null,
      finish_reason: c.finish_reason ?? null,
    })),
  };
}
