import { createHash, randomUUID } from 'node:crypto';

export const newId = (): string => randomUUID();

/** A stable UUID-shaped id derived from a name (used for ids that exist before their row). */
export function derivedId(namespace: string, name: string): string {
  const h = createHash('sha256').update(`${namespace}:${name}`).digest('hex');
  // Shape as an RFC 4122 version-5-style UUID so clients that check UUID syntax accept it.
  const variant = ((Number.parseInt(h.slice(16, 18), 16) & 0x3f) | 0x80).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${variant}${h.slice(18, 20)}-${h.slice(20, 32)}`;
}

export const isUuid = (s: string): boolean =>
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s);

/**
 * A workspace's default guardrail id. It exists (in the workspace object) before the guardrail row
 * does; PATCH /guardrails/{id} on it materialises the row.
 */
export const defaultGuardrailId = (workspaceId: string): string =>
  derivedId('default-guardrail', workspaceId);
