import { randomUUID } from 'node:crypto';
import { sseJson } from '../formats/sse.js';
import type { RuntimeEvent, RunUsage } from './runtime-protocol.js';

/** The pause tool's default name (the seeds' neutral placeholder; GATEHOUSE_INTERNS_PAUSE_TOOL changes it). */
export const PROVIDE_INPUT_TOOL = 'gateway.provide_input';
/** `model` of chunks before the runtime reports one, and of chunks the gateway makes itself. */
export const GATEWAY_MODEL = 'gateway/intern';

export interface StreamError {
  code: number;
  message: string;
  metadata: { reason: string; retryable: boolean };
}

/**
 * Turns a run's events into the chat-completion chunks of the interns chat route (digest §6.3):
 * a role chunk, content/reasoning deltas, exactly one finish chunk (`stop`, `tool_calls` with the
 * single provide_input call, or `error`), a final chunk with empty `choices` carrying
 * `session_id` and `usage` (null after `tool_calls`), then `[DONE]`. Every method returns the SSE
 * text to write.
 */
export class ChatChunks {
  private readonly id = `chatcmpl-intern-${randomUUID()}`;
  private readonly created = Math.floor(Date.now() / 1000);
  private model = GATEWAY_MODEL;
  private finished = false;

  constructor(
    private readonly sessionId: string,
    private readonly pauseTool: string = PROVIDE_INPUT_TOOL,
  ) {}

  /** Whether the finish chunk (and the final one) has been written. */
  get done(): boolean {
    return this.finished;
  }

  private chunk(delta: Record<string, unknown>, finish: string | null, extra: Record<string, unknown> = {}) {
    return sseJson({
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      choices: [{ index: 0, delta, finish_reason: finish }],
      ...extra,
    });
  }

  /** The first chunk of every stream. */
  role(): string {
    return this.chunk({ role: 'assistant' }, null);
  }

  /** The SSE text for one runtime event ('' for events that write nothing). */
  event(e: RuntimeEvent): string {
    if (this.finished) return '';
    switch (e.type) {
      case 'model':
        this.model = e.model || GATEWAY_MODEL;
        return '';
      case 'content':
        return e.text ? this.chunk({ content: e.text }, null) : '';
      case 'reasoning':
        return e.text ? this.chunk({ reasoning: e.text }, null) : '';
      case 'paused':
        return (
          this.chunk(
            {
              tool_calls: [
                {
                  index: 0,
                  id: e.id,
                  type: 'function',
                  function: { name: this.pauseTool, arguments: JSON.stringify(e.arguments) },
                },
              ],
            },
            'tool_calls',
          ) + this.final(null)
        );
      case 'end':
        if (e.finish_reason === 'error') {
          const err = e.error ?? {
            code: 500,
            message: 'The run failed',
            reason: 'turn_failed',
            retryable: false,
          };
          return this.error(
            {
              code: err.code,
              message: err.message,
              metadata: { reason: err.reason, retryable: err.retryable },
            },
            e.usage,
          );
        }
        return this.chunk({}, 'stop') + this.final(e.usage);
      default:
        return '';
    }
  }

  /** An error finish chunk and the final chunk (a gateway-made error switches `model` back). */
  error(error: StreamError, usage: RunUsage | null = null, fromGateway = false): string {
    if (this.finished) return '';
    if (fromGateway) this.model = GATEWAY_MODEL;
    return this.chunk({}, 'error', { error }) + this.final(usage);
  }

  private final(usage: RunUsage | null): string {
    this.finished = true;
    return `${sseJson({
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      choices: [],
      session_id: this.sessionId,
      usage,
    })}data: [DONE]\n\n`;
  }
}
