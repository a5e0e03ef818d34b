import { badRequest } from '../lib/errors.js';

const UNIX = /^\d{1,12}(\.\d+)?$/;

/**
 * A time bound as the stored `created_at` text (ISO 8601, UTC, milliseconds), so it compares with
 * the column as text and an index range serves it. Accepts ISO 8601 or unix seconds.
 */
export function instant(name: string, raw: string): string {
  const d = UNIX.test(raw) ? new Date(Number(raw) * 1000) : new Date(raw);
  if (
    Number.isNaN(d.getTime()) ||
    raw.trim() === '' ||
    d.getUTCFullYear() > 9999 ||
    d.getUTCFullYear() < 1970
  )
    throw badRequest(`Invalid ${name}: give an ISO 8601 time or unix seconds`);
  return d.toISOString();
}
