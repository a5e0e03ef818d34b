import type { Db } from '../db/connection.js';
import type { GenerationFeedbackTable } from '../db/schema.js';

/** The number the generation's next entry takes (1 for its first). */
export async function nextSeq(db: Db, generationId: string): Promise<number> {
  const r = await db
    .selectFrom('generation_feedback')
    .select((eb) => eb.fn.max('seq').as('seq'))
    .where('generation_id', '=', generationId)
    .executeTakeFirst();
  return Number(r?.seq ?? 0) + 1;
}

/** Stores one entry; fails with a unique violation when its `seq` was taken meanwhile. */
export async function insertFeedback(db: Db, row: GenerationFeedbackTable): Promise<void> {
  await db.insertInto('generation_feedback').values(row).execute();
}

/** The generation's newest `limit` entries, newest first. */
export const recentFeedback = (db: Db, generationId: string, limit: number) =>
  db
    .selectFrom('generation_feedback')
    .select(['category', 'comment', 'created_at'])
    .where('generation_id', '=', generationId)
    .orderBy('seq', 'desc')
    .limit(limit)
    .execute();
