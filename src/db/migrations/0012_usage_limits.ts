import type { Kysely } from 'kysely';

/**
 * Usage limits per API key: requests per minute, tokens per minute and calls in flight
 * (null = no limit).
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  for (const column of ['rpm_limit', 'tpm_limit', 'concurrency_limit'])
    await db.schema.alterTable('api_keys').addColumn(column, 'integer').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  for (const column of ['rpm_limit', 'tpm_limit', 'concurrency_limit'])
    await db.schema.alterTable('api_keys').dropColumn(column).execute();
}
