/**
 * One webhook delivery: a JSON batch of records, signed with the destination's secret
 * (`x-gatehouse-signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, the scheme
 * Stripe and others use, so receivers can check it and refuse replays).
 */
import { createHmac } from 'node:crypto';
import { post } from '../lib/guarded-post.js';
import type { Sender } from './delivery.js';

export const signature = (secret: string, timestamp: number, body: string) =>
  `t=${timestamp},v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;

export const deliverWebhook: Sender = (d, deliveryId, records, opts) => {
  const body = JSON.stringify({ type: 'generations', destination_id: d.id, data: records });
  return post(
    d.url,
    {
      method: d.method,
      headers: {
        ...d.headers,
        'content-type': 'application/json',
        'x-gatehouse-delivery': deliveryId,
        'x-gatehouse-signature': signature(d.signingSecret, Math.floor(Date.now() / 1000), body),
      },
      body,
    },
    opts,
  );
};
