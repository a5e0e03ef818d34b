import {
  CALLBACK_PATHS,
  type EgressRefusal,
  type EgressRequest,
  type EgressResponse,
} from '../runtime-protocol.js';

export type EgressOutcome =
  | { kind: 'response'; response: EgressResponse }
  | { kind: 'refused'; refusal: EgressRefusal['error'] }
  | { kind: 'failed'; status: number; message: string };

/** Sends an http_request through the gateway's egress callback (which holds the secrets). */
export async function sendThroughGateway(
  gatewayUrl: string,
  token: string,
  req: EgressRequest,
  signal: AbortSignal,
): Promise<EgressOutcome> {
  let res: Response;
  try {
    res = await fetch(`${gatewayUrl}${CALLBACK_PATHS.egress}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(req),
      signal,
    });
  } catch (err) {
    if (signal.aborted) throw err;
    return {
      kind: 'failed',
      status: 502,
      message: `The gateway could not be reached: ${(err as Error).message}`,
    };
  }
  const text = await res.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {}
  if (res.status === 200 && body && typeof body === 'object' && 'status' in body)
    return { kind: 'response', response: body as EgressResponse };
  const error = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  const message = typeof error?.message === 'string' ? error.message : `egress failed (${res.status})`;
  if (res.status === 403 && typeof error?.code === 'string')
    return { kind: 'refused', refusal: { code: error.code as EgressRefusal['error']['code'], message } };
  return { kind: 'failed', status: res.status, message };
}
