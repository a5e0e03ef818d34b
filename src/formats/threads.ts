import { TranslationError } from './chat.js';
import { given, type Obj } from './validate.js';

/**
 * Anthropic's message threads (`thread: {type: 'create'}` / `{type: 'continue',
 * previous_message_id}`) reach a provider only on Anthropic's own API, which holds them: for a
 * model no such provider serves, Gatehouse holds the thread and sends every provider the whole
 * conversation (message-threads/). What still carries `thread` here is a call meant for Anthropic
 * that falls back to another provider, or one made while Gatehouse keeps no threads (a retention of
 * 0): it is refused with the rejection Anthropic's clients recognise (`error.details.error_code:
 * thread_unsupported_request`), on which the official client's tool runner resends the call, and
 * every later one, with the whole conversation and no thread. Dropping the field instead would
 * lose the history on the next turn.
 */
export function refuseThread(body: Obj, where: string): void {
  if (!given(body.thread)) return;
  throw new TranslationError(
    `thread: ${where} holds no message threads; send the whole conversation without \`thread\``,
    { error_code: 'thread_unsupported_request', unsupported: ['thread'] },
  );
}
