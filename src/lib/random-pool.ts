import { randomFillSync } from 'node:crypto';

/**
 * Random bytes for per-call ids (generation, reservation and slot ids), drawn from the CSPRNG 4 KiB
 * at a time: one `randomFillSync` per few hundred ids instead of one `randomBytes` per id (each a
 * call into OpenSSL with its own buffer; ~4 % of a call's CPU in a profile of the hot path).
 */
const pool = Buffer.alloc(4096);
let at = pool.length;

function take(bytes: number): number {
  if (at + bytes > pool.length) {
    randomFillSync(pool);
    at = 0;
  }
  const start = at;
  at += bytes;
  return start;
}

/** `bytes` random bytes as lowercase hex. */
export function randomHex(bytes: number): string {
  const start = take(bytes);
  return pool.toString('hex', start, start + bytes);
}

/** `bytes` random bytes as base64url (no padding). */
export function randomBase64url(bytes: number): string {
  const start = take(bytes);
  return pool.toString('base64url', start, start + bytes);
}
