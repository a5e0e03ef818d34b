import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { NativeWire } from '../../providers/types.js';

/** The route that served a conversation's previous turn. */
export interface StickyRoute {
  provider: string;
  /** The credential's name (operator key name or BYOK id). */
  credential: string | null;
}

type Body = Record<string, unknown>;

const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);

/** Up to `max` characters of the text in `v` (strings of nested arrays and objects, in order). */
function textPrefix(v: unknown, max: number): string {
  let out = '';
  const walk = (x: unknown, depth: number): void => {
    if (out.length >= max || depth > 6) return;
    if (typeof x === 'string') out += `${x.slice(0, max - out.length)}\u0000`;
    else if (Array.isArray(x)) for (const y of x) walk(y, depth + 1);
    else if (x && typeof x === 'object') for (const y of Object.values(x)) walk(y, depth + 1);
  };
  walk(v, 0);
  return out;
}

const PREFIX_CHARS = 4096;

/**
 * What identifies a conversation in a caller's body, in this order: the caller's own cache key
 * (`prompt_cache_key`); the end user it names (`safety_identifier`, `user`, Anthropic's
 * `metadata.user_id`); else a hash of the conversation's opening — the system prompt and the first
 * message (its first 4,096 characters of text), which every later turn repeats. Null for bodies
 * that are no conversation (embeddings, token counts).
 */
export function conversationKey(native: NativeWire, body: Body): string | null {
  let opening: unknown[];
  if (native === 'openai-chat') {
    const id = str(body.prompt_cache_key) ?? str(body.safety_identifier) ?? str(body.user);
    if (id) return digest(`id\u0000${id}`);
    const messages = Array.isArray(body.messages) ? body.messages : [];
    opening = messages.slice(0, 2);
  } else if (native === 'openai-responses' || native === 'openai-responses-compact') {
    const id = str(body.prompt_cache_key) ?? str(body.safety_identifier) ?? str(body.user);
    if (id) return digest(`id\u0000${id}`);
    const input = Array.isArray(body.input) ? body.input.slice(0, 1) : [body.input];
    opening = [body.instructions, ...input];
  } else if (native === 'anthropic-messages') {
    const id = str((body.metadata as Body | undefined)?.user_id);
    if (id) return digest(`id\u0000${id}`);
    opening = [body.system, Array.isArray(body.messages) ? body.messages[0] : undefined];
  } else return null;
  const text = textPrefix(opening, PREFIX_CHARS);
  if (text.length === 0) return null;
  return digest(`text\u0000${text}`);
}

/** Keys of a bounded size whatever the caller sent (and no prompt text kept in memory). */
const digest = (s: string): string => createHash('sha256').update(s).digest('base64url').slice(0, 22);

/**
 * Conversations' routes, so that the next turn goes where the provider's prompt cache is warm: a
 * bounded LRU whose entries expire `ttlMs` after their last turn. Keys are scoped per API key.
 */
export class StickyRoutes {
  private readonly routes: LRUCache<string, StickyRoute>;

  constructor(opts: { max: number; ttlMs: number; now?: () => number }) {
    this.routes = new LRUCache({
      max: opts.max,
      ttl: opts.ttlMs,
      ...(opts.now ? { perf: { now: opts.now }, ttlResolution: 0 } : {}),
    });
  }

  get(scope: string, conversation: string, model: string): StickyRoute | undefined {
    return this.routes.get(`${scope}\n${model}\n${conversation}`);
  }

  set(scope: string, conversation: string, model: string, route: StickyRoute): void {
    this.routes.set(`${scope}\n${model}\n${conversation}`, route); // each turn restarts the TTL
  }

  get size(): number {
    return this.routes.size;
  }
}
