/**
 * What every destination type shares on the wire: one HTTP request per batch, to an address the
 * SSRF guard allows (internal addresses only when the operator says so), with a timeout; the answer
 * read as delivered, worth retrying, or refused for good.
 */
import { request } from 'undici';
import { hostOf, pinnedAgent, resolveAllowed } from '../lib/address-guard.js';
import type { ExportRecord } from './records.js';
import type { LiveDestination } from './service.js';

/** What a delivery came to: `retry` for failures worth another attempt (network, 408, 429, 5xx). */
export type Delivered = { ok: true } | { ok: false; retry: boolean; reason: string };

export interface DeliveryOptions {
  allowPrivate: boolean;
  timeoutMs: number;
}

/** How one destination type turns a batch into a request and sends it. */
export type Sender = (
  d: LiveDestination,
  deliveryId: string,
  records: ExportRecord[],
  opts: DeliveryOptions,
) => Promise<Delivered>;

export async function post(
  target: string,
  init: { method: 'POST' | 'PUT'; headers: Record<string, string>; body: string | Uint8Array },
  opts: DeliveryOptions,
): Promise<Delivered> {
  const url = new URL(target);
  let agent: ReturnType<typeof pinnedAgent> | undefined;
  try {
    const pinned = await resolveAllowed(hostOf(url), opts.allowPrivate);
    agent = pinnedAgent(pinned, { headersTimeout: opts.timeoutMs, bodyTimeout: opts.timeoutMs });
    const res = await request(url, {
      method: init.method,
      dispatcher: agent,
      headers: { ...init.headers, 'user-agent': 'gatehouse-export' },
      body: init.body,
      signal: AbortSignal.timeout(opts.timeoutMs),
    });
    await res.body.dump();
    if (res.statusCode >= 200 && res.statusCode < 300) return { ok: true };
    const retry = res.statusCode === 408 || res.statusCode === 429 || res.statusCode >= 500;
    return { ok: false, retry, reason: `HTTP ${res.statusCode}` };
  } catch (err) {
    const private_ = (err as { reason?: string }).reason === 'private';
    return { ok: false, retry: !private_, reason: (err as Error).message };
  } finally {
    await agent?.close().catch(() => {});
  }
}
