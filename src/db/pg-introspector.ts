import {
  type DatabaseIntrospector,
  type DatabaseMetadata,
  type Kysely,
  PostgresDialect,
  PostgresIntrospector,
  type SchemaMetadata,
  sql,
  type TableMetadata,
} from 'kysely';

/**
 * PostgreSQL with an introspector that lists only the tables of the connection's search path.
 *
 * Kysely's own lists every table of the database and calls `has_schema_privilege(<name>, …)` for
 * each schema: a schema dropped by anyone else between the query's snapshot and that call fails it
 * with "schema … does not exist". The migrator asks for the table list on every start, so a gateway
 * starting on a database shared with other applications (or other gateways' schemas) could fail to
 * start because of an unrelated drop. This one reads `pg_class` for the search path's schemas only,
 * with no name-based lookups. Columns are not listed: the migrator reads names only, and nothing
 * else in Gatehouse introspects.
 */
export class PostgresSearchPathDialect extends PostgresDialect {
  override createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new SearchPathIntrospector(db);
  }
}

class SearchPathIntrospector implements DatabaseIntrospector {
  readonly #db: Kysely<unknown>;
  readonly #schemas: PostgresIntrospector;

  constructor(db: Kysely<unknown>) {
    this.#db = db;
    this.#schemas = new PostgresIntrospector(db);
  }

  getSchemas(): Promise<SchemaMetadata[]> {
    return this.#schemas.getSchemas();
  }

  async getTables(): Promise<TableMetadata[]> {
    const { rows } = await sql<{ schema: string; name: string; kind: string }>`
      select n.nspname as schema, c.relname as name, c.relkind as kind
      from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
      where c.relkind in ('r', 'v', 'p') and n.nspname = any(current_schemas(false))
      order by n.nspname, c.relname`.execute(this.#db);
    return rows.map((r) => ({ schema: r.schema, name: r.name, isView: r.kind === 'v', columns: [] }));
  }

  async getMetadata(): Promise<DatabaseMetadata> {
    return { tables: await this.getTables() };
  }
}
