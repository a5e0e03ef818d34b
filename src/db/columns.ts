/**
 * Column encodings shared by every store (see db/schema.ts): lists as JSON text, booleans as 0/1,
 * and the driver error codes that both dialects use for constraint violations.
 */
export const fromJsonList = <T = string>(text: string | null): T[] | null =>
  text === null ? null : (JSON.parse(text) as T[]);

export const toJsonList = (list: readonly unknown[] | null): string | null =>
  list === null ? null : JSON.stringify(list);

/** A nullable boolean as a nullable 0/1 column. */
export const toBit = (v: boolean | null): number | null => (v === null ? null : v ? 1 : 0);

const codeOf = (err: unknown) => (err as { code?: unknown } | null)?.code;

/** A unique-constraint violation (PostgreSQL 23505, SQLite SQLITE_CONSTRAINT_UNIQUE/PRIMARYKEY). */
export const isUniqueViolation = (err: unknown): boolean =>
  ['23505', 'SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY'].includes(codeOf(err) as string);

/** A foreign-key violation (PostgreSQL 23503, SQLite SQLITE_CONSTRAINT_FOREIGNKEY). */
export const isForeignKeyViolation = (err: unknown): boolean =>
  ['23503', 'SQLITE_CONSTRAINT_FOREIGNKEY'].includes(codeOf(err) as string);
