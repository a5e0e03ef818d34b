/**
 * One webhook delivery: a JSON batch of records, signed with the destination's secret
 * (`x-gatehouse-signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, the scheme
 * Stripe and others use, so receivers can check it and refuse replays), to an address the SSRF
 * guard allows (internal addresses only when the operator says so).
 */
import { createHmac } from 'node:crypto';
import { request } from 'undici';
import { hostOf, pinnedAgent, resolveAllowed } from '../lib/address-guard.js';
import type { ExportRecord } from './records.js';
import type { LiveDestination } from './service.js';

export const signature = (secret: string, timestamp: number, body: string) =>
  `t=${timestamp},v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;

/** What a delivery came to: `retry` for failures worth another attempt (network, 408, 429, 5xx). */
export type Delivered = { ok: true } | { ok: false; retry: boolean; reason: string };

export async function deliverWebhook(
  d: LiveDestination,
  deliveryId: string,
  records: ExportRecord[],
  opts: { allowPrivate: boolean; timeoutMs: number },
): Promise<Delivered> {
  const body = JSON.stringify({ type: 'generations', destination_id: d.id, data: records });
  const url = new URL(d.url);
  let agent: ReturnType<typeof pinnedAgent> | undefined;
  try {
    const pinned = await resolveAllowed(hostOf(url), opts.allowPrivate);
    agent = pinnedAgent(pinned, { headersTimeout: opts.timeoutMs, bodyTimeout: opts.timeoutMs });
    const res = await request(url, {
      method: d.method,
      dispatcher: agent,
      headers: {
        ...d.headers,
        'content-type': 'application/json',
        'user-agent': 'gatehouse-export',
        'x-gatehouse-delivery': deliveryId,
        'x-gatehouse-signature': signature(d.signingSecret, Math.floor(Date.now() / 1000), body),
      },
      body,
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
