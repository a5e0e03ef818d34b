import { request } from 'undici';
import type { RuntimeEndpoint } from './provisioner.js';
import {
  RUNTIME_PATHS,
  RUNTIME_TOKEN_HEADER,
  type RuntimeEvent,
  type TurnRefusal,
  type TurnRequest,
} from './runtime-protocol.js';

/** What the runtime answered to a turn. */
export type TurnAnswer =
  | { kind: 'stream'; events: AsyncIterable<RuntimeEvent> }
  | { kind: 'steered' }
  | { kind: 'refused'; status: number; refusal: TurnRefusal };

/** The runtime could not be reached (connection refused, reset before an answer). */
export class RuntimeUnreachable extends Error {
  override name = 'RuntimeUnreachable';
}

/**
 * Starts or resumes a turn on an intern's runtime (runtime-protocol.ts). Aborting `signal` closes
 * the request, which cancels a streaming run.
 */
export async function startTurn(
  endpoint: RuntimeEndpoint,
  turn: TurnRequest,
  signal: AbortSignal,
): Promise<TurnAnswer> {
  let res: Awaited<ReturnType<typeof request>>;
  try {
    res = await request(`${endpoint.url}${RUNTIME_PATHS.turns}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [RUNTIME_TOKEN_HEADER]: endpoint.token },
      body: JSON.stringify(turn),
      signal,
      // A run may think for a long time between events; the chat route sends keepalives meanwhile.
      bodyTimeout: 0,
      headersTimeout: 60_000,
    });
  } catch (err) {
    if (signal.aborted) throw err;
    throw new RuntimeUnreachable((err as Error).message);
  }
  if (res.statusCode === 200) return { kind: 'stream', events: ndjson(res.body) };
  const text = await res.body.text().catch(() => '');
  if (res.statusCode === 202) return { kind: 'steered' };
  let refusal: TurnRefusal;
  try {
    refusal = JSON.parse(text) as TurnRefusal;
    if (typeof refusal?.reason !== 'string') throw new Error('no reason');
  } catch {
    throw new RuntimeUnreachable(`runtime answered ${res.statusCode} without a refusal body`);
  }
  return { kind: 'refused', status: res.statusCode, refusal };
}

/** Runtime events, one JSON object per line. */
async function* ndjson(body: AsyncIterable<Buffer>): AsyncGenerator<RuntimeEvent> {
  let buffered = '';
  for await (const chunk of body) {
    buffered += chunk.toString('utf8');
    let nl = buffered.indexOf('\n');
    while (nl >= 0) {
      const line = buffered.slice(0, nl).trim();
      buffered = buffered.slice(nl + 1);
      if (line) yield JSON.parse(line) as RuntimeEvent;
      nl = buffered.indexOf('\n');
    }
  }
  const rest = buffered.trim();
  if (rest) yield JSON.parse(rest) as RuntimeEvent;
}
