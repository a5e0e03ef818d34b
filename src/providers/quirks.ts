/**
 * Applies a vendor's `rejects` (see presets.ts) to a Chat Completions body: a lane's body as the
 * caller sent it, or the canonical request of a translated call (same field names). The vendor
 * would answer these fields with a 400, so they are left out and reported as dropped instead.
 */
import { sameSource } from '../lib/raw-json.js';
import type { Quirk } from './presets.js';

type Body = Record<string, unknown>;

const isObj = (v: unknown): v is Body => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `messages[].name` → { list: 'messages', key: 'name' }; `logprobs` → { key: 'logprobs' }. */
function pathOf(field: string): { list?: string; key: string } {
  const m = /^(\w+)\[\]\.(\w+)$/.exec(field);
  return m ? { list: m[1], key: m[2] as string } : { key: field };
}

/** Whether `value` is one the quirk refuses (set, and not among the values the vendor takes). */
const refused = (q: Quirk, value: unknown): boolean =>
  value !== undefined && !(q.accepts ?? []).includes(value);

const applies = (q: Quirk, model: string): boolean => !q.models || q.models.test(model);

/** Whether `body` carries the field `q` refuses. */
function carries(body: Body, q: Quirk): boolean {
  const { list, key } = pathOf(q.field);
  if (!list) return refused(q, body[key]);
  const items = body[list];
  return Array.isArray(items) && items.some((it) => isObj(it) && refused(q, it[key]));
}

/** The fields of `body` that `quirks` refuse for `model`, in table order (what gets reported). */
export function rejectedFields(body: Body, quirks: readonly Quirk[], model: string): string[] {
  return quirks.filter((q) => applies(q, model) && carries(body, q)).map((q) => q.field);
}

/** `body` without the fields `quirks` refuse for `model` (a new object when any is; `body` is not changed). */
export function withoutRejected<T extends object>(body: T, quirks: readonly Quirk[], model: string): T {
  let out: Body | null = null;
  for (const q of quirks) {
    if (!applies(q, model) || !carries(out ?? (body as Body), q)) continue;
    out ??= sameSource({ ...(body as Body) }, body);
    const { list, key } = pathOf(q.field);
    if (!list) {
      delete out[key];
      continue;
    }
    out[list] = (out[list] as unknown[]).map((it) => {
      if (!isObj(it) || !refused(q, it[key])) return it;
      const { [key]: _, ...rest } = it;
      return rest;
    });
  }
  return (out ?? body) as T;
}
