/**
 * The operator token's minimum strength, checked at start: it unlocks every tenant (GATEHOUSE_ADMIN_TOKEN).
 *
 * Strength is estimated simply: the token's length times the Shannon entropy of its characters
 * (bits per character, from how often each character occurs in it). Repeats and small alphabets
 * score low (`aaaa…` scores 0, `operator-secret` 45); random tokens score about 4 bits per hex
 * character and more for base64. `openssl rand -hex 32` (64 characters, ~230 bits) passes easily.
 */

import { MAX_CREDENTIAL_LENGTH } from '../lib/credentials.js';

export const ADMIN_TOKEN_MIN_LENGTH = 24;
export const ADMIN_TOKEN_MIN_BITS = 80;

/** Length × Shannon entropy per character, in bits. */
export function estimatedEntropyBits(token: string): number {
  const chars = [...token];
  const counts = new Map<string, number>();
  for (const c of chars) counts.set(c, (counts.get(c) ?? 0) + 1);
  let perChar = 0;
  for (const n of counts.values()) {
    const p = n / chars.length;
    perChar -= p * Math.log2(p);
  }
  return perChar * chars.length;
}

/** Why the token is too weak to start with, or null when it is strong enough. Never quotes the token. */
export function adminTokenWeakness(token: string): string | null {
  const hint = 'generate one with `openssl rand -hex 32`';
  if (token.length > MAX_CREDENTIAL_LENGTH)
    return `GATEHOUSE_ADMIN_TOKEN is too long: credentials over ${MAX_CREDENTIAL_LENGTH} characters are refused`;
  if ([...token].length < ADMIN_TOKEN_MIN_LENGTH)
    return `GATEHOUSE_ADMIN_TOKEN is too short: it needs at least ${ADMIN_TOKEN_MIN_LENGTH} characters; ${hint}`;
  const bits = estimatedEntropyBits(token);
  if (bits < ADMIN_TOKEN_MIN_BITS)
    return `GATEHOUSE_ADMIN_TOKEN is too predictable: about ${Math.floor(bits)} bits estimated, at least ${ADMIN_TOKEN_MIN_BITS} needed (more varied characters, or a longer token); ${hint}`;
  return null;
}
