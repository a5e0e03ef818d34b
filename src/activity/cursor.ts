import { badRequest } from '../lib/errors.js';

/** Where a page of generations ended: the last row's (created_at, id), newest first. */
export interface Cursor {
  createdAt: string;
  id: string;
}

/** Opaque to callers: base64url of the pair, so its form may change without breaking them. */
export const encodeCursor = (c: Cursor): string =>
  Buffer.from(JSON.stringify([c.createdAt, c.id])).toString('base64url');

export function decodeCursor(raw: string): Cursor {
  try {
    const v: unknown = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string')
      return { createdAt: v[0], id: v[1] };
  } catch {}
  throw badRequest('Invalid cursor: pass next_cursor from the previous page unchanged');
}
