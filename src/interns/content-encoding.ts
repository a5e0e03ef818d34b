import type { Readable, Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';

/**
 * Egress asks for uncompressed answers (`accept-encoding: identity`) and decodes a compressed one
 * sent anyway: a secret is redacted in the text, and a compressed body would hide it from the
 * redaction while staying partly readable to the intern.
 */

const DECODERS: Record<string, () => Transform> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

/** The body decoded per its Content-Encoding, or null when an encoding is not one egress knows. */
export function decodedBody(body: Readable, contentEncoding: string | string[] | undefined): Readable | null {
  const codings = String(contentEncoding ?? '')
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
  let out: Readable = body;
  // Applied in order, so they are undone last first.
  for (const coding of codings.reverse()) {
    const make = DECODERS[coding];
    if (!make) return null;
    const decoder = make();
    out.on('error', (err) => decoder.destroy(err));
    out = out.pipe(decoder);
  }
  return out;
}
