/**
 * The names the media service gives its outputs in the object store, `<kind>/<yyyy>/<mm>/<dd>/<uuid>.<ext>`,
 * and the test that a key is one of them: the filesystem store serves only such keys under /files,
 * never any other file that happens to be in its directory.
 */
import { randomUUID } from 'node:crypto';

const OBJECT_KEY =
  /^[a-z0-9]{1,16}\/\d{4}\/\d{2}\/\d{2}\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.[a-z0-9]{1,8}$/;

export function objectKey(kind: string, extension: string, now = new Date()): string {
  const y = now.getUTCFullYear();
  const m = String(now.getUTCMonth() + 1).padStart(2, '0');
  const d = String(now.getUTCDate()).padStart(2, '0');
  return `${kind}/${y}/${m}/${d}/${randomUUID()}.${extension}`;
}

/** Whether `key` has the shape of a key `objectKey` makes. */
export const isObjectKey = (key: string): boolean => OBJECT_KEY.test(key);
