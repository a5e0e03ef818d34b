/**
 * The key-lookup cache and its invalidation (what the cluster bus relies on): a lookup that read the
 * row before a write committed must not be cached after the invalidation that followed the write.
 */
import { describe, expect, it } from 'vitest';
import type { Db } from '../db/connection.js';
import { KeysService } from './keys.service.js';

/** A database whose `findKey` reads answer when the test says so, with the row it says. */
function scriptedDb() {
  const reads: ((row: object | undefined) => void)[] = [];
  const chain = {
    selectAll: () => chain,
    where: () => chain,
    executeTakeFirst: () => new Promise<object | undefined>((resolve) => reads.push(resolve)),
  };
  const db = { selectFrom: () => chain } as unknown as Db;
  return { db, reads };
}

const row = (disabled: 0 | 1) => ({ hash: 'h'.repeat(64), disabled, expires_at: null });

describe('KeysService cache', () => {
  const make = (db: Db) => new KeysService(db, {} as never, {} as never, {} as never);

  it('does not cache a row read before an invalidation that came while it was being read', async () => {
    const { db, reads } = scriptedDb();
    const keys = make(db);
    const hash = 'h'.repeat(64);

    const stale = keys.row(hash); // reads the row as it was before the write…
    keys.forget(hash); // …the write commits and its invalidation arrives (from another node)…
    reads.shift()?.(row(0)); // …then the old row comes back
    expect((await stale)?.disabled).toBe(0);

    const fresh = keys.row(hash); // not served from the cache: read again
    expect(reads).toHaveLength(1);
    reads.shift()?.(row(1));
    expect((await fresh)?.disabled).toBe(1);
    expect(await keys.callerOf(hash)).toBeNull(); // cached now, disabled
    expect(reads).toHaveLength(0);
  });

  it('tells listeners about local writes (invalidate), not about forgotten entries (forget)', () => {
    const keys = make(scriptedDb().db);
    const heard: (string | null)[] = [];
    keys.onInvalidate((h) => heard.push(h));
    keys.invalidate('a'.repeat(64));
    keys.invalidate();
    keys.forget('b'.repeat(64));
    keys.forget();
    expect(heard).toEqual(['a'.repeat(64), null]);
  });

  it('caches unknown tokens by their hash only, within its entry bound', async () => {
    const noRows = {
      selectFrom: () => noRows,
      selectAll: () => noRows,
      where: () => noRows,
      executeTakeFirst: async () => undefined,
    } as unknown as Db;
    const keys = new KeysService(noRows, {} as never, {} as never, {} as never, { cacheMax: 100 });
    const tokens: string[] = [];
    for (let i = 0; i < 300; i++) {
      const token = `bogus-${i}-${'x'.repeat(15_000)}`;
      tokens.push(token);
      expect(await keys.authenticate(token)).toBeNull();
    }
    const cached = keys.cachedHashes();
    expect(cached).toHaveLength(100); // the bound, not one entry per token
    for (const k of cached) expect(k).toMatch(/^[0-9a-f]{64}$/);
    const held = JSON.stringify(cached);
    expect(tokens.some((t) => held.includes(t.slice(0, 12)))).toBe(false);
  });
});
