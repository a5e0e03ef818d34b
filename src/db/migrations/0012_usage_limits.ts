import type { Kysely } from 'kysely';

/**
 * Usage limits per API key and per guardrail: requests per minute, tokens per minute and calls in
 * flight (null = no limit).
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen and must not depend on today's types
export async function up(db: Kysely<any>): Promise<void> {
  for (const table of ['api_keys', 'guardrails'])
    for (const column of ['rpm_limit', 'tpm_limit', 'concurrency_limit'])
      await db.schema.alterTable(table).addColumn(column, 'integer').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['api_keys', 'guardrails'])
    for (const column of ['rpm_limit', 'tpm_limit', 'concurrency_limit'])
      await db.schema.alterTable(table).dropColumn(column).execute();
}
