import type { TSchema } from '@sinclair/typebox';
import {
  type ChatRequest,
  type ChatResponse,
  type EmbeddingsResponse,
  TranslationError,
} from '../../formats/chat.js';
import { anthropicBeta } from '../../formats/messages.js';
import { readPlugins } from '../../formats/plugins.js';
import { badRequest } from '../../lib/errors.js';
import { extended } from '../../lib/objects.js';
import { sameSource } from '../../lib/raw-json.js';
import type { RelayFrame } from '../../providers/types.js';
import type { Body, CallWire, RouteInfo } from '../../routing/call.js';
import type { Completed, Streaming } from '../../routing/engine.js';
import type { ErrorRenderer } from '../../server/errors.js';

/**
 * One incoming wire format (chat completions, messages, responses, embeddings) as one object: what
 * the engine needs of it (`CallWire`: native wire, strict parse, text walker, lane body) and what
 * its route needs — the lenient inspection, the encoders of a translated answer, the frames that
 * end a failed lane stream, and its error shape. The inference routes and the batch worker are
 * built from the table of these (`index.ts`).
 */
export interface CallerWire<R = ChatResponse> extends CallWire {
  /** The route under /api/v1. */
  readonly path: string;
  readonly summary: string;
  /** Request headers passed on to the provider of a lane (an allow-list; never credentials). */
  readonly forwardHeaders: readonly string[];
  /** The model and stream flag of a body, read without translating it (400 without a model). */
  inspect(body: Body): { model: string; stream: boolean };
  /** A translated answer in the caller's format. */
  encodeResponse(
    done: Completed<R> & { lane: false },
    call: { body: Body; model: string; echoUpstream: boolean },
  ): unknown;
  /** A translated stream as the caller's SSE frames (absent: the wire does not stream). */
  encodeStream?(s: Streaming & { lane: false }, call: { body: Body; model: string }): AsyncIterable<string>;
  /**
   * A lane's whole answer as the caller gets it: text sent as it is, or an object to serialize
   * (absent: the provider's body as it came).
   */
  relayJson?(done: Completed<R> & { lane: true }, call: { echoUpstream: boolean }): unknown;
  /**
   * A lane's stream event as the caller gets it (absent: as it came). Called for every frame: it
   * must not re-serialize an event it leaves as it is. A frame without `json` may hold several
   * events (RelayFrame.parts, or a Buffer of the upstream's bytes): only text edits that hold for
   * each of them apply to it.
   */
  relayFrame?(frame: RelayFrame, info: RouteInfo): string | Buffer;
  /**
   * OpenRouter's `debug.echo_upstream_body` on a stream: the frame that opens it, with what was
   * sent upstream (absent: the format has no such frame).
   */
  debugFrame?(info: RouteInfo): string;
  /**
   * The frames that end a stream which failed after it started (`status`: the failure's, 502 for
   * an upstream's; 403 for an answer a content filter blocked).
   */
  streamError(info: RouteInfo, message: string, status?: number): string[];
  /** Errors answered in the caller's own format. */
  readonly renderError: ErrorRenderer;
  /** The OpenAPI schema of its error body. */
  readonly errorSchema: TSchema;
}

/** A chat-kind wire (its answers are chat responses once translated). */
export type ChatWire = CallerWire<ChatResponse>;
export type EmbeddingsWire = CallerWire<EmbeddingsResponse>;

/**
 * The model a translated Messages or Responses answer names: as the caller named it (without an
 * `:online` suffix: routing/online.ts), or the model that served when a model fallback served it.
 */
export const answerModel = (info: RouteInfo): string =>
  info.model.id === info.primaryModel ? info.requested : info.model.id;

/** The request's `models` (OpenRouter's model fallbacks): a non-empty list of model ids, or absent. */
export function modelsOf(body: Body): string[] | undefined {
  const { models } = body;
  if (models === undefined || models === null) return undefined;
  if (
    !Array.isArray(models) ||
    models.length === 0 ||
    !models.every((m) => typeof m === 'string' && m !== '')
  )
    throw badRequest('models: must be a non-empty list of model ids');
  return models as string[];
}

/**
 * `model` (a non-empty string; the first of `models` when absent) and `stream` (a boolean when
 * given) of any body; its `plugins` are checked too (a lane forwards no malformed list unseen).
 */
export function inspectBody(body: Body): { model: string; stream: boolean } {
  const { stream } = body;
  const model = body.model ?? modelsOf(body)?.[0];
  if (typeof model !== 'string' || model === '') throw badRequest('model: a model id is required');
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean')
    throw badRequest('stream: must be a boolean');
  try {
    readPlugins(body);
  } catch (err) {
    if (err instanceof TranslationError) throw badRequest(err.message);
    throw err;
  }
  return { model, stream: stream === true };
}

/**
 * Gatehouse's own request fields (routing preferences, debugging, OpenRouter's extensions): read
 * by the gateway, never sent to a provider on a lane (the `web` plugin becomes the provider's own
 * search first: formats/plugins.ts).
 */
export const GATEHOUSE_FIELDS = [
  'provider',
  'models',
  'route',
  'debug',
  'transforms',
  'plugins',
  'preset',
] as const;

/** The caller's body for a lane: a shallow copy with the upstream's model id and without `drop`. */
export function withoutFields(body: Body, upstreamModel: string, drop: readonly string[]): Body {
  // Not a spread: a wire may add members later (a stream's options).
  const out: Body = sameSource(extended(body, { model: upstreamModel }), body);
  for (const f of drop) delete out[f];
  return out;
}

/** The caller's provider headers a lane passes on: the wire's allow-list, nothing else. */
export function forwardedHeaders(
  headers: Record<string, string | string[] | undefined>,
  allowed: readonly string[],
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of allowed) {
    const v = headers[name];
    if (typeof v === 'string') out[name] = v;
    else if (Array.isArray(v)) out[name] = v.join(',');
  }
  return out;
}

/**
 * A translated request with the caller's `anthropic-beta` header, for an Anthropic model called in
 * another format (an Anthropic-format provider sends it; any other lists it as dropped).
 */
export function withAnthropicBeta(req: ChatRequest, headers: Record<string, string> = {}): ChatRequest {
  const beta = anthropicBeta(headers);
  return beta ? { ...req, anthropic_beta: beta } : req;
}

/** An `anthropic-beta` header on a lane to an OpenAI-format provider: not sent, listed as dropped. */
export const laneDroppedHeaders = (headers: Record<string, string> = {}): string[] =>
  headers['anthropic-beta'] ? ['anthropic-beta'] : [];
