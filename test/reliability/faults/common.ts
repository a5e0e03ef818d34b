/**
 * Shared pieces of the fault suite (test/reliability/faults.test.ts): the figures every section
 * adds to, and small HTTP helpers that read an answer whatever it is (JSON envelope, SSE stream or
 * a connection error) so a fault's outcome can be classified and counted.
 */

export type Row = [label: string, value: string | number];

/** What the sections measured; faults.test.ts writes it once (afterAll). */
export const figures = {
  rows: [] as Row[],
  notes: [] as string[],
};

export interface Answer {
  status: number;
  contentType: string;
  text: string;
  /** JSON-parsed body (null when not JSON). */
  json: any;
  /** SSE events (event name and parsed data; `raw` when data is not JSON, e.g. `[DONE]`). */
  events: { event: string | null; data: any; raw: string }[];
  ms: number;
}

export function parseSse(text: string): Answer['events'] {
  const out: Answer['events'] = [];
  for (const block of text.split(/\n\n/)) {
    if (!block.trim() || block.startsWith(':')) continue;
    let event: string | null = null;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    const raw = data.join('\n');
    let parsed: any = null;
    try {
      parsed = JSON.parse(raw);
    } catch {}
    out.push({ event, data: parsed, raw });
  }
  return out;
}

/** POSTs JSON and reads the whole answer (any status, streamed or not). */
export async function post(
  url: string,
  key: string,
  body: unknown,
  opts: { timeoutMs?: number } = {},
): Promise<Answer> {
  const t0 = performance.now();
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(opts.timeoutMs ?? 20_000),
  });
  const text = await res.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {}
  const contentType = res.headers.get('content-type') ?? '';
  return {
    status: res.status,
    contentType,
    text,
    json,
    events: contentType.startsWith('text/event-stream') ? parseSse(text) : [],
    ms: performance.now() - t0,
  };
}

/** True when `body` is the gateway's standard error envelope with this status. */
export const isEnvelope = (body: any, status: number): boolean =>
  !!body &&
  typeof body === 'object' &&
  body.error?.code === status &&
  typeof body.error?.message === 'string' &&
  body.error.message.length > 0;

/** Counts of labelled outcomes. */
export class Tally {
  readonly counts = new Map<string, number>();
  add(label: string, n = 1): void {
    this.counts.set(label, (this.counts.get(label) ?? 0) + n);
  }
  get(label: string): number {
    return this.counts.get(label) ?? 0;
  }
  get total(): number {
    let n = 0;
    for (const v of this.counts.values()) n += v;
    return n;
  }
  /** `a: 3, b: 1` in insertion order. */
  summary(): string {
    return [...this.counts].map(([k, v]) => `${k}: ${v}`).join(', ');
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
