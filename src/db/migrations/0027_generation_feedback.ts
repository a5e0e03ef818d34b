import type { Kysely } from 'kysely';

/**
 * Feedback on generations (POST /generation/feedback, OpenRouter's submitFeedback): one row per
 * submission, scoped to the generation's organization and workspace, with who sent it (the key's
 * hash, its user when there is one). `seq` numbers a generation's entries 1, 2, …: the unique
 * index on (generation_id, seq) reads a generation's newest entries and holds the per-generation
 * cap even when two submissions race (the second to take a number retries with the next one).
 * No foreign key: generations are written off the call's path, and feedback may name one still queued.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('generation_feedback')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('generation_id', 'text', (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull())
    // latency | incoherence | incorrect_response | formatting | billing | api_error | other
    .addColumn('category', 'text', (c) => c.notNull())
    .addColumn('comment', 'text')
    .addColumn('key_hash', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('generation_feedback_seq')
    .on('generation_feedback')
    .columns(['generation_id', 'seq'])
    .unique()
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('generation_feedback').ifExists().execute();
}
