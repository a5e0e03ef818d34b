/**
 * What every destination type shares: a batch turned into one request, sent by `post`
 * (lib/guarded-post.ts: the SSRF guard, a timeout, the answer read as delivered, worth retrying, or
 * refused for good).
 */
import type { Delivered, DeliveryOptions } from '../lib/guarded-post.js';
import type { ExportRecord } from './records.js';
import type { LiveDestination } from './service.js';

export type { Delivered, DeliveryOptions };

/** How one destination type turns a batch into a request and sends it. */
export type Sender = (
  d: LiveDestination,
  deliveryId: string,
  records: ExportRecord[],
  opts: DeliveryOptions,
) => Promise<Delivered>;
