/**
 * The usage journal: a gateway SIGKILLed right after answering calls — before its group commit
 * wrote their generations — loses none of them: the next start writes them from its journal, once.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { databases } from './support/gateway.js';
import { adminClient } from './support/http.js';
import { killAll, newKeys, sharedDatabase, startProcess, waitFor } from './support/processes.js';

afterEach(killAll);
afterAll(killAll);

describe.each(databases)('usage journal (%s)', (kind) => {
  it('writes the calls a SIGKILLed gateway answered but had not recorded, once', async () => {
    const db = await sharedDatabase(kind);
    try {
      const keys = newKeys();
      // Group commits every 10 s: the kill below certainly finds answered calls not yet written.
      const env = { GATEHOUSE_ACCOUNTING_INTERVAL_MS: '10000' };
      const gw = await startProcess('serve', { name: 'gw', db, keys, env });
      const admin = adminClient(gw.url);
      const orgs = await admin('GET', '/admin/organizations');
      await admin('POST', '/admin/credits', { organization_id: orgs.body.data[0].id, amount_usd: 100 });
      const call = async () => {
        const res = await fetch(`${gw.url}/api/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${keys.apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'gatehouse/echo', messages: [{ role: 'user', content: 'journal' }] }),
        });
        if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
        return ((await res.json()) as { id: string }).id;
      };
      // Calls answered, then the kill.
      const answered: string[] = [];
      for (let round = 0; round < 5; round++)
        for (const id of await Promise.all(Array.from({ length: 16 }, call))) if (id) answered.push(id);
      gw.kill('SIGKILL');
      await gw.exited;
      expect(answered.length).toBe(80);
      const journal = join(db.dataDir, 'journal');
      const left = readdirSync(journal).filter((f) => f.startsWith('usage-'));
      // The case at hand: the process died holding answered calls it had not written.
      expect(left.length).toBeGreaterThan(0);

      const again = await startProcess('serve', { name: 'gw2', db, keys, env });
      const placeholders = answered.map(() => '?').join(',');
      const rows = await waitFor('every answered call written', async () => {
        const r = await db.query<{ id: string }>(
          `select id from generations where id in (${placeholders})`,
          answered,
        );
        return r.length === answered.length ? r : null;
      });
      expect(new Set(rows.map((r) => r.id))).toEqual(new Set(answered));
      // Billed once: one usage event per priced generation, none twice.
      const [events] = await db.query<{ n: number | string }>(
        `select count(*) as n from usage_events where key_hash = (select key_hash from generations where id = ?)`,
        [answered[0]],
      );
      const [priced] = await db.query<{ n: number | string }>(
        `select count(*) as n from generations where cost_usd > 0 and key_hash = (select key_hash from generations where id = ?)`,
        [answered[0]],
      );
      expect(Number(events?.n)).toBe(Number(priced?.n));
      // The replayed segments are gone; the new process's own are deleted as it writes.
      expect(readdirSync(journal).filter((f) => left.includes(f))).toEqual([]);
      again.kill('SIGTERM');
      await again.exited;
    } finally {
      await db.drop();
    }
  }, 60_000);
});
