/**
 * The messages of the Responses WebSocket mode (socket.routes.ts) as OpenAI's server sends them:
 * each server event is one JSON text message — the `data` of the SSE event the same call streams
 * over HTTP — and a refusal is an `error` event `{type:'error', status, error:{type, code,
 * message, param}}`, the shape the openai client's `ResponsesWS` and the Agents SDK read.
 */
import type { RawData } from 'ws';
import { sseEventsOf } from '../formats/sse.js';
import { ApiError } from '../lib/errors.js';

/** An `error` event's fields; `status` is the HTTP status the same refusal has over HTTP. */
export interface SocketError {
  status: number;
  message: string;
  code?: string | null;
  param?: string | null;
}

/** OpenAI's error `type` for an HTTP status. */
function errorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  if (status === 402) return 'insufficient_quota';
  return status >= 500 ? 'server_error' : 'invalid_request_error';
}

export const errorEvent = ({ status, message, code = null, param = null }: SocketError): string =>
  JSON.stringify({ type: 'error', status, error: { type: errorType(status), code, message, param } });

/**
 * What a failed call says in an error event: an ApiError as its HTTP answer would (a missing
 * earlier response under OpenAI's code for it), anything else an internal error without details.
 */
export function errorOf(err: unknown): SocketError | null {
  if (!(err instanceof ApiError)) return null;
  const previous = err.status === 404 && err.message.startsWith('previous_response_id');
  return {
    status: err.status,
    message: err.message,
    code: err.code ?? (previous ? 'previous_response_not_found' : null),
    param: previous ? 'previous_response_id' : null,
  };
}

/**
 * The events of a stream frame (SSE text, or a lane's bytes: whole events, one or more) as the
 * JSON texts a socket sends; OpenAI's stream carries no `[DONE]`, a relayed one is left out.
 */
export function frameEvents(frame: string | Buffer): string[] {
  const text = typeof frame === 'string' ? frame : frame.toString('utf8');
  return sseEventsOf(text)
    .map((e) => e.data)
    .filter((data) => data !== '[DONE]');
}

/** A message's text (ws hands a text message over as a Buffer, or its fragments). */
export function messageText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}
