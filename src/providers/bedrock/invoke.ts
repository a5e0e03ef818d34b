/**
 * Anthropic models through InvokeModel: the caller's Messages body as Bedrock takes it — the model
 * in the URL (not the body), no `stream` field (the operation says it), `anthropic_version:
 * "bedrock-2023-05-31"`, and the `anthropic-beta` header as the body's `anthropic_beta` list, with
 * only the flags Bedrock has (anthropic/betas.ts). Everything else goes as the caller sent it.
 */
import type { SseEvent } from '../../formats/sse.js';
import { betaList, hostBetas } from '../anthropic/betas.js';
import { obj } from '../errors.js';
import { UpstreamError } from '../types.js';
import type { StreamMessage } from './eventstream.js';

export const BEDROCK_ANTHROPIC_VERSION = 'bedrock-2023-05-31';

/**
 * An Anthropic model's Bedrock id: `anthropic.claude-…`, a cross-region inference profile
 * (`us.anthropic.…`, `global.anthropic.…`) or an ARN naming one.
 */
export const isAnthropicModel = (modelId: string): boolean =>
  /^(arn:[^/]*\/)?([a-z]{2,6}\.)?anthropic\./.test(modelId);

/** The InvokeModel body of a `/messages` caller's body and allow-listed headers. */
export function invokeBody(
  body: Record<string, unknown>,
  headers: Record<string, string>,
): Record<string, unknown> {
  const { model: _model, stream: _stream, ...rest } = body;
  const out: Record<string, unknown> = { anthropic_version: BEDROCK_ANTHROPIC_VERSION, ...rest };
  const own = Array.isArray(rest.anthropic_beta) ? rest.anthropic_beta.map(String) : [];
  const { kept } = hostBetas([...own, ...betaList(headers['anthropic-beta'])], 'bedrock-invoke');
  if (kept.length) out.anthropic_beta = kept;
  else delete out.anthropic_beta;
  return out;
}

/** The caller's beta flags an InvokeModel call leaves out (Bedrock has no such flag). */
export function droppedInvokeBetas(body: Record<string, unknown>, headers: Record<string, string>): string[] {
  const own = Array.isArray(body.anthropic_beta) ? body.anthropic_beta.map(String) : [];
  return hostBetas([...own, ...betaList(headers['anthropic-beta'])], 'bedrock-invoke').dropped;
}

/** A `chunk` event's Anthropic stream event (base64 JSON in `bytes`) as the SSE event Anthropic sends. */
export function streamedEvent(m: StreamMessage): SseEvent | null {
  if (m.type !== 'chunk') return null;
  const bytes = obj(m.body).bytes;
  if (typeof bytes !== 'string')
    throw new UpstreamError(502, 'upstream sent a chunk without bytes', { retryable: true });
  const data = Buffer.from(bytes, 'base64').toString('utf8');
  let type: unknown;
  try {
    type = obj(JSON.parse(data)).type;
  } catch {
    throw new UpstreamError(502, 'upstream sent an invalid stream event', { retryable: true });
  }
  return { event: typeof type === 'string' ? type : 'message', data };
}
