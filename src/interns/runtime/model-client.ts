import { CALLBACK_PATHS, RUN_GRANT_HEADER, type RunUsage } from '../runtime-protocol.js';
import type { ModelToolCall, TranscriptMessage } from './sessions.js';

/** A model call that did not produce an answer: `status` is the gateway's (or 502 when unreachable). */
export class ModelCallError extends Error {
  override name = 'ModelCallError';
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface ModelReply {
  content: string | null;
  reasoning: string | null;
  /** Kept as given and sent back with the assistant turn (signed thinking continues tool loops). */
  reasoningDetails: unknown[] | null;
  toolCalls: ModelToolCall[];
  usage: RunUsage | null;
}

export interface ToolDefinition {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** The model, reached through the gateway's callback (billed to the key whose chat issued `grant`). */
export class ModelClient {
  constructor(
    private readonly gatewayUrl: string,
    private readonly token: string,
    private readonly model: string,
  ) {}

  async complete(
    messages: ({ role: 'system'; content: string } | TranscriptMessage)[],
    tools: ToolDefinition[],
    signal: AbortSignal,
    grant: string,
  ): Promise<ModelReply> {
    let res: Response;
    try {
      res = await fetch(`${this.gatewayUrl}${CALLBACK_PATHS.chat}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${this.token}`,
          [RUN_GRANT_HEADER]: grant,
        },
        body: JSON.stringify({
          model: this.model,
          messages,
          ...(tools.length ? { tools, tool_choice: 'auto' } : {}),
        }),
        signal,
      });
    } catch (err) {
      if (signal.aborted) throw err;
      throw new ModelCallError(502, `The gateway could not be reached: ${(err as Error).message}`);
    }
    const text = await res.text();
    let body: Record<string, unknown> | null = null;
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {}
    if (!res.ok) {
      const err = body?.error as { message?: unknown } | undefined;
      const message =
        typeof err?.message === 'string' ? err.message : `The model call failed (${res.status})`;
      throw new ModelCallError(res.status, message);
    }
    const choice = (body?.choices as { message?: Record<string, unknown> }[] | undefined)?.[0];
    const message = choice?.message;
    if (!message) throw new ModelCallError(502, 'The model answered without a message');
    const toolCalls = Array.isArray(message.tool_calls)
      ? (message.tool_calls as ModelToolCall[]).map((tc, i) => ({
          id: typeof tc.id === 'string' && tc.id ? tc.id : `call_${i}`,
          type: 'function' as const,
          function: {
            name: String(tc.function?.name ?? ''),
            arguments: typeof tc.function?.arguments === 'string' ? tc.function.arguments : '{}',
          },
        }))
      : [];
    return {
      content: typeof message.content === 'string' ? message.content : null,
      reasoning: typeof message.reasoning === 'string' && message.reasoning ? message.reasoning : null,
      reasoningDetails:
        Array.isArray(message.reasoning_details) && message.reasoning_details.length > 0
          ? (message.reasoning_details as unknown[])
          : null,
      toolCalls,
      usage: usageOf(body?.usage),
    };
  }
}

function usageOf(raw: unknown): RunUsage | null {
  if (!raw || typeof raw !== 'object') return null;
  const u = raw as Record<string, unknown>;
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  const usage: RunUsage = {
    prompt_tokens: n(u.prompt_tokens),
    completion_tokens: n(u.completion_tokens),
    total_tokens: n(u.total_tokens),
  };
  if (typeof u.cost === 'number') usage.cost = u.cost;
  const details = u.prompt_tokens_details as { cached_tokens?: unknown } | undefined;
  if (details && typeof details.cached_tokens === 'number')
    usage.prompt_tokens_details = { cached_tokens: details.cached_tokens };
  return usage;
}

/** Adds one call's usage to a run's. */
export function addUsage(total: RunUsage, add: RunUsage): void {
  total.prompt_tokens += add.prompt_tokens;
  total.completion_tokens += add.completion_tokens;
  total.total_tokens += add.total_tokens;
  if (add.cost !== undefined) total.cost = (total.cost ?? 0) + add.cost;
  if (add.prompt_tokens_details) {
    total.prompt_tokens_details = {
      cached_tokens:
        (total.prompt_tokens_details?.cached_tokens ?? 0) + add.prompt_tokens_details.cached_tokens,
    };
  }
}
