/**
 * The opaque `starting_after` cursor of GET /interns: the (created_at, id) of the last intern of a
 * page, as base64url JSON. The list is ordered newest first by that pair, so the next page is
 * everything strictly before it.
 */
export interface ListCursor {
  createdAt: string;
  id: string;
}

export const encodeCursor = (c: ListCursor): string =>
  Buffer.from(JSON.stringify([c.createdAt, c.id]), 'utf8').toString('base64url');

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

/** The cursor `text` encodes, or null when it is malformed. */
export function decodeCursor(text: string): ListCursor | null {
  if (!/^[A-Za-z0-9_-]+$/.test(text)) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (!Array.isArray(parsed) || parsed.length !== 2) return null;
  const [createdAt, id] = parsed as unknown[];
  if (typeof createdAt !== 'string' || !ISO.test(createdAt) || Number.isNaN(Date.parse(createdAt)))
    return null;
  if (typeof id !== 'string' || id.length === 0 || id.length > 200) return null;
  return { createdAt, id };
}
