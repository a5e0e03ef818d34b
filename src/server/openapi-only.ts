/**
 * Schemas the OpenAPI document shows but Fastify never compiles, declared in a route's
 * `config.openapi`. For routes whose bodies pass through to providers unvalidated (inference) and
 * whose answers must go out unfiltered (a response schema would make Fastify's serializer drop
 * every field it does not name): the document describes them, the runtime leaves them alone.
 */

import type { TSchema } from '@sinclair/typebox';
import type { FastifySchema } from 'fastify';

/** A response as the document shows it: a schema, or `{description, content: {<type>: {schema}}}`. */
type DocumentedResponse = TSchema | { description: string; content: Record<string, { schema: TSchema }> };

export interface OpenapiOnly {
  /** The request body the document shows in place of the route's runtime `body` schema. */
  body?: TSchema;
  /** Answers the document shows beside the route's runtime ones (its error schemas). */
  response?: Record<number, DocumentedResponse>;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    openapi?: OpenapiOnly;
  }
}

/** The route's schema as the document shows it: its `config.openapi` laid over its runtime schema. */
export function documentedSchema(
  schema: FastifySchema,
  config: { openapi?: OpenapiOnly } | undefined,
): FastifySchema {
  const doc = config?.openapi;
  if (!doc || !schema) return schema;
  return {
    ...schema,
    ...(doc.body ? { body: doc.body } : {}),
    // The documented answers first: the success answer leads the list.
    ...(doc.response ? { response: { ...doc.response, ...(schema.response as object | undefined) } } : {}),
  };
}
