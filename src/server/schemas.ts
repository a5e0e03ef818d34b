import { type Static, type TSchema, Type } from '@sinclair/typebox';

/**
 * `T | null` as a JSON-Schema type array (`type: ['string', 'null']`) rather than `anyOf`:
 * with Ajv's type coercion, `anyOf: [number, null]` would silently turn `null` into `0`.
 */
export function Nullable<T extends TSchema>(schema: T) {
  const s = schema as unknown as { type?: unknown; enum?: unknown[] };
  if (typeof s.type !== 'string') throw new Error('Nullable() needs a schema with a single `type`');
  return Type.Unsafe<Static<T> | null>({
    ...schema,
    type: [s.type, 'null'],
    ...(s.enum ? { enum: [...s.enum, null] } : {}),
  });
}

/** A string enum as one `type: string` schema (open enums are plain strings on the wire). */
export const StringEnum = <T extends string>(values: readonly T[], opts: Record<string, unknown> = {}) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], ...opts });

export const ErrorBody = Type.Object(
  {
    error: Type.Object({
      code: Type.Integer(),
      message: Type.String(),
      metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    }),
  },
  { $id: 'ErrorBody', title: 'Error' },
);

/** Error responses documented on every route: `{error:{code,message}}`. */
export function errors(...codes: number[]) {
  return Object.fromEntries(codes.map((c) => [c, Type.Ref('ErrorBody')]));
}

export const Deleted = Type.Object({ deleted: Type.Literal(true) });

export const PageQuery = Type.Object({
  offset: Type.Optional(
    // Bounded: an offset past 2^53 binds as a REAL, which SQLite refuses (a 500, not a 400).
    Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      default: 0,
      description: 'Records to skip',
    }),
  ),
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'Maximum records to return (1–100)' }),
  ),
});
export type PageQuery = Static<typeof PageQuery>;

export interface Page {
  offset: number;
  limit: number;
}

export const toPage = (q: PageQuery): Page => ({ offset: q.offset ?? 0, limit: q.limit ?? 50 });

export const IdParams = Type.Object({ id: Type.String({ minLength: 1 }) });
