/**
 * A translated answer's `reasoning_details` (signed thinking, redacted thinking, thought
 * signatures) carried in a Responses `reasoning` item's `encrypted_content`, and read back from
 * it, so that /responses clients hand a provider its reasoning back as chat clients do with
 * `reasoning_details`.
 *
 * `encrypted_content` is opaque state to the client (OpenAI documents it so): Gatehouse's is
 * `gatehouse.rd1.` + base64url(deflate-raw(JSON of the entries)). It holds only what the provider
 * returned (reasoning text, its signatures and opaque blocks), never a key. Nothing is encrypted:
 * the provider verifies its own signatures, and a caller can send any `reasoning_details` on chat
 * anyway. A string without the prefix (OpenAI's own, after a fallback) or one that does not decode
 * gives no entries: the reasoning is not restored, the call goes on.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { ReasoningDetail } from './chat.js';
import { collapseReasoningDetails, parseReasoningDetails } from './reasoning-details.js';

const PREFIX = 'gatehouse.rd1.';

/** Past this a decoded state is ignored (a provider's reasoning of one answer is far smaller). */
const MAX_DECODED_BYTES = 8 * 1024 * 1024;

/** Entries → `encrypted_content` (collapsed first); undefined when there are none. */
export function encodeReasoningState(details: readonly ReasoningDetail[] | undefined): string | undefined {
  if (!details?.length) return undefined;
  const json = JSON.stringify(collapseReasoningDetails(details));
  return PREFIX + deflateRawSync(Buffer.from(json, 'utf8')).toString('base64url');
}

/** Whether `v` is an `encrypted_content` Gatehouse wrote (not whether it decodes). */
export const isGatehouseReasoningState = (v: unknown): v is string =>
  typeof v === 'string' && v.startsWith(PREFIX);

/** `encrypted_content` → entries; [] for anything that is not a well-formed state of Gatehouse's. */
export function decodeReasoningState(v: unknown): ReasoningDetail[] {
  if (!isGatehouseReasoningState(v)) return [];
  try {
    const packed = Buffer.from(v.slice(PREFIX.length), 'base64url');
    const json = inflateRawSync(packed, { maxOutputLength: MAX_DECODED_BYTES }).toString('utf8');
    return parseReasoningDetails(JSON.parse(json), 'encrypted_content');
  } catch {
    // Truncated, tampered with or too large: no reasoning restored rather than a refused call.
    return [];
  }
}
