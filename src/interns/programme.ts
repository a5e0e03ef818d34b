import type { Caller } from '../accounts/caller.js';
import type { Db } from '../db/connection.js';

/** How long a member's programme flag is cached, ms (an admin change shows within this). */
const TTL_MS = 5_000;

/**
 * Membership of the interns programme (`users.interns_programme`, set by the operator). Callers
 * outside it get 404 on every /interns and /vault route. A key acting as its organization (no
 * user) is let through: it can read the workspace's interns and vault listings but writes nothing
 * (403 `no_acting_user`; access.ts).
 */
export class Programme {
  private readonly cache = new Map<string, { member: boolean; until: number }>();

  constructor(private readonly db: Db) {}

  async includes(caller: Caller): Promise<boolean> {
    if (caller.userId === null) return true;
    const now = Date.now();
    const hit = this.cache.get(caller.userId);
    if (hit && hit.until > now) return hit.member;
    const row = await this.db
      .selectFrom('users')
      .select('interns_programme')
      .where('id', '=', caller.userId)
      .executeTakeFirst();
    const member = row?.interns_programme === 1;
    this.cache.set(caller.userId, { member, until: now + TTL_MS });
    return member;
  }
}
