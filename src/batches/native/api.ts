import { redact } from '../../providers/redact.js';

/**
 * What Gatehouse needs of a provider's batch API: submit the requests, poll, read the results,
 * cancel. One implementation per provider (openai.ts, anthropic.ts).
 */
export interface NativeBatchApi {
  /** Submits `lines` (their `customId`s unique); returns the provider's batch id. */
  submit(lines: NativeLine[], meta: { endpoint: string; gatehouseId: string }): Promise<string>;
  status(id: string): Promise<NativeStatus>;
  /** Every result the provider has for the batch, read as it downloads (those it never ran are missing). */
  results(id: string): AsyncIterable<NativeResult>;
  cancel(id: string): Promise<void>;
  /**
   * The provider batch an earlier submission of this Gatehouse batch created, if the API can tell
   * (OpenAI: by its metadata); a submitter that died before recording the id left it running.
   */
  find?(gatehouseId: string): Promise<string | null>;
}

export interface NativeLine {
  customId: string;
  /** The body the synchronous call would send upstream (the upstream model id, no Gatehouse fields). */
  body: Record<string, unknown>;
}

/** `running` until the provider is done with the batch; then how it ended. */
export type NativeStatus =
  | { state: 'running' }
  | { state: 'ended'; outcome: 'completed' | 'failed' | 'expired' | 'cancelled'; message?: string };

/** One item's outcome: the 200 answer's body, or why the provider did not answer it. */
export type NativeResult = { customId: string; body: unknown } | { customId: string; error: string };

/** A provider's batch API answered with an error (4xx: it refuses; 0: unreachable). */
export class NativeApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'NativeApiError';
  }
}

/** Longest a batch API call may take (an upload included). */
const CALL_TIMEOUT_MS = 300_000;
/** Longest a result download may take: it is read while its answers are recorded. */
export const DOWNLOAD_TIMEOUT_MS = 3_600_000;

/** One HTTP call to a batch API; errors carry the status and the provider's message, never the key. */
export async function call(
  url: string,
  init: {
    method: 'GET' | 'POST';
    headers: Record<string, string>;
    body?: string | FormData;
    timeoutMs?: number;
  },
  secrets: (string | null)[],
): Promise<Response> {
  let res: Response;
  const { timeoutMs = CALL_TIMEOUT_MS, ...rest } = init;
  try {
    // Node's own fetch (its FormData builds the Files API upload).
    res = await fetch(url, { ...rest, signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    throw new NativeApiError(0, redact(`batch API unreachable: ${(err as Error).message}`, secrets));
  }
  if (res.ok) return res;
  const text = await res.text().catch(() => '');
  let message = text.slice(0, 300);
  try {
    // OpenAI and Anthropic: `{error: {message}}`; AWS: `{message}`.
    const j = JSON.parse(text) as { error?: { message?: string }; message?: string };
    if (typeof j.error?.message === 'string') message = j.error.message;
    else if (typeof j.message === 'string') message = j.message;
  } catch {}
  throw new NativeApiError(res.status, redact(`batch API answered ${res.status}: ${message}`, secrets));
}

export async function callJson<T>(
  url: string,
  init: Parameters<typeof call>[1],
  secrets: (string | null)[],
): Promise<T> {
  const res = await call(url, init, secrets);
  try {
    return (await res.json()) as T;
  } catch {
    throw new NativeApiError(502, 'batch API sent invalid JSON');
  }
}

/**
 * JSON Lines of a response body as it downloads: one parsed value per non-empty line (a broken
 * line is skipped), so a result file of any size is read in bounded memory.
 */
export async function* jsonLines(res: Response): AsyncGenerator<unknown> {
  if (!res.body) return;
  const decoder = new TextDecoder();
  let rest = '';
  const parse = (line: string) => {
    if (!line.trim()) return undefined;
    try {
      return JSON.parse(line) as unknown;
    } catch {
      return undefined;
    }
  };
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    rest += decoder.decode(chunk, { stream: true });
    const lines = rest.split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) {
      const v = parse(line);
      if (v !== undefined) yield v;
    }
  }
  const v = parse(rest + decoder.decode());
  if (v !== undefined) yield v;
}
