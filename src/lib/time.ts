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

/**
 * Waits for `work` to settle, or `ms` at most (a shutdown's grace for what is under way); whatever
 * still runs afterwards goes on unawaited. Never rejects.
 */
export async function settledWithin(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  await Promise.race([work.then(noop, noop), deadline]);
  clearTimeout(timer);
}

const noop = () => {};
