export const nowIso = (): string => new Date().toISOString();

export type ResetInterval = 'daily' | 'weekly' | 'monthly';

/**
 * Start (inclusive, UTC) of the current usage window. Days start at UTC midnight, weeks on
 * Monday 00:00 UTC, months on the 1st at 00:00 UTC.
 */
export function windowStart(interval: ResetInterval, now: Date = new Date()): Date {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  const d = now.getUTCDate();
  switch (interval) {
    case 'daily':
      return new Date(Date.UTC(y, m, d));
    case 'weekly': {
      const sinceMonday = (now.getUTCDay() + 6) % 7;
      return new Date(Date.UTC(y, m, d - sinceMonday));
    }
    case 'monthly':
      return new Date(Date.UTC(y, m, 1));
  }
}
