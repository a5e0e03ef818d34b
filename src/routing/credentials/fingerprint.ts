import { createHash } from 'node:crypto';

/**
 * A credential's fingerprint for operators: the first 12 hex digits of its secret's SHA-256. It
 * tells two keys apart (and a rotated key from the old one) without revealing either.
 */
export const fingerprint = (secret: string | null): string =>
  secret === null ? 'none' : `sha256:${createHash('sha256').update(secret).digest('hex').slice(0, 12)}`;
