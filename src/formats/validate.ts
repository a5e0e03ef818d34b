/**
 * Small validators for caller bodies at the edge. Every failure is a TranslationError whose message
 * starts with the JSON path of the offending field (`messages[2].content[0].source.type: …`), so the
 * 400 the edge returns says exactly what to fix.
 */
import { TranslationError } from './chat.js';

export type Obj = Record<string, unknown>;

export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** null and undefined both mean "not given" in every caller format Gatehouse accepts. */
export const given = (v: unknown): boolean => v !== undefined && v !== null;

export function fail(path: string, message: string): never {
  throw new TranslationError(`${path}: ${message}`);
}

export function obj(v: unknown, path: string): Obj {
  if (!isObj(v)) fail(path, 'must be an object');
  return v;
}

export function arr(v: unknown, path: string): unknown[] {
  if (!Array.isArray(v)) fail(path, 'must be an array');
  return v;
}

export function str(v: unknown, path: string): string {
  if (typeof v !== 'string') fail(path, 'must be a string');
  return v;
}

export function nonEmptyStr(v: unknown, path: string): string {
  if (typeof v !== 'string' || v === '') fail(path, 'must be a non-empty string');
  return v;
}

export function optStr(v: unknown, path: string): string | undefined {
  return given(v) ? str(v, path) : undefined;
}

export function optBool(v: unknown, path: string): boolean | undefined {
  if (!given(v)) return undefined;
  if (typeof v !== 'boolean') fail(path, 'must be a boolean');
  return v;
}

export interface NumberRule {
  min?: number;
  max?: number;
  integer?: boolean;
}

export function num(v: unknown, path: string, rule: NumberRule = {}): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) fail(path, 'must be a number');
  if (rule.integer && !Number.isInteger(v)) fail(path, 'must be an integer');
  if (rule.min !== undefined && v < rule.min) fail(path, `must be >= ${rule.min}`);
  if (rule.max !== undefined && v > rule.max) fail(path, `must be <= ${rule.max}`);
  return v;
}

export function optNum(v: unknown, path: string, rule: NumberRule = {}): number | undefined {
  return given(v) ? num(v, path, rule) : undefined;
}

export function strArray(v: unknown, path: string): string[] {
  return arr(v, path).map((s, i) => str(s, `${path}[${i}]`));
}

export function oneOf<T extends string>(v: unknown, path: string, allowed: readonly T[]): T {
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v)) {
    fail(path, `must be one of ${allowed.map((a) => `'${a}'`).join(', ')}`);
  }
  return v as T;
}

/** Drops keys whose value is undefined (keeps canonical requests free of `key: undefined`). */
export function compact<T extends object>(o: T): T {
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] === undefined) delete o[k];
  return o;
}

/** Parses tool-call `arguments` into an object; '' → {}; anything else that is not a JSON object → null. */
export function argumentsObject(args: string): Obj | null {
  if (args.trim() === '') return {};
  try {
    const v: unknown = JSON.parse(args);
    return isObj(v) ? v : null;
  } catch {
    return null;
  }
}

/** The provider-neutral part of a chat id (`chatcmpl-abc` → `abc`), safe to embed in other ids. */
export function idBase(id: string): string {
  const base = id.replace(/^(chatcmpl-|chatcmpl_|msg_|resp_|gen-)/, '').replace(/[^A-Za-z0-9_-]/g, '_');
  return base || 'gatehouse';
}
