/**
 * One POST (or PUT) a caller's configuration points somewhere — export destinations, video job
 * callbacks: the host through the SSRF guard (address-guard.ts: internal addresses only when the
 * operator allows them, the connection pinned to the address judged), a deadline, and the answer
 * read as delivered, worth retrying, or refused for good.
 */
import { request } from 'undici';
import { hostOf, pinnedAgent, resolveAllowed } from './address-guard.js';

/** What a delivery came to: `retry` for failures worth another attempt (network, 408, 429, 5xx). */
export type Delivered = { ok: true } | { ok: false; retry: boolean; reason: string };

export interface DeliveryOptions {
  allowPrivate: boolean;
  timeoutMs: number;
  /** Certificates to trust besides the system's (a private CA; tests' self-signed receivers). */
  ca?: string;
}

export async function post(
  target: string,
  init: { method: 'POST' | 'PUT'; headers: Record<string, string>; body: string | Uint8Array },
  opts: DeliveryOptions,
): Promise<Delivered> {
  const url = new URL(target);
  let agent: ReturnType<typeof pinnedAgent> | undefined;
  try {
    const pinned = await resolveAllowed(hostOf(url), opts.allowPrivate);
    agent = pinnedAgent(
      pinned,
      { headersTimeout: opts.timeoutMs, bodyTimeout: opts.timeoutMs },
      opts.ca ? { ca: opts.ca } : {},
    );
    const res = await request(url, {
      method: init.method,
      dispatcher: agent,
      headers: { 'user-agent': 'gatehouse-export', ...init.headers },
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
