import { type Static, Type } from '@sinclair/typebox';
import { Nullable, StringEnum } from '../server/schemas.js';

const Text = (description: string) => Type.String({ minLength: 1, maxLength: 300, description });
const ACTOR_KINDS = ['management_key', 'api_key', 'operator', 'system'] as const;

export const AuditEvent = Type.Object(
  {
    id: Type.String(),
    at: Type.String({ description: 'When the write was answered (ISO 8601, UTC)' }),
    organization_id: Nullable(Type.String({ description: 'Null for operator-level events' })),
    workspace_id: Nullable(Type.String()),
    actor: Type.Object({
      kind: StringEnum(ACTOR_KINDS),
      id: Nullable(Type.String({ description: "The key's hash (null for the operator token)" })),
      user_id: Nullable(
        Type.String({ description: "The key's user (null for a key acting as the organization)" }),
      ),
    }),
    action: Type.String({ description: 'resource.verb, e.g. key.create, guardrail.update' }),
    resource: Type.Object({ type: Type.String(), id: Nullable(Type.String()) }),
    status: Type.Integer({ description: 'The HTTP status the write was answered with' }),
    before: Type.Unknown({ description: 'The resource before the write (secrets masked); null for creates' }),
    after: Type.Unknown({
      description: 'The resource after the write (secrets masked); null for deletes and refusals',
    }),
    request: Type.Unknown({ description: 'The request body as sent (secrets masked)' }),
    request_id: Nullable(Type.String({ description: 'The x-request-id of the write' })),
    remote_address: Nullable(Type.String()),
  },
  { $id: 'AuditEvent', title: 'AuditEvent' },
);

const Filters = {
  from: Type.Optional(Text('Earliest time, inclusive (ISO 8601 or unix seconds)')),
  to: Type.Optional(Text('Latest time, exclusive (ISO 8601 or unix seconds)')),
  actor: Type.Optional(Text('A key hash or a user id')),
  actor_kind: Type.Optional(StringEnum(ACTOR_KINDS)),
  action: Type.Optional(Text('e.g. key.update')),
  resource_type: Type.Optional(Text('e.g. guardrail')),
  resource_id: Type.Optional(Text('The resource id (a key hash for keys)')),
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 200, default: 50, description: 'Page size (1–200)' }),
  ),
  cursor: Type.Optional(
    Type.String({ minLength: 1, maxLength: 1000, description: 'next_cursor of the previous page' }),
  ),
};

export const AuditQuery = Type.Object(Filters);
export type AuditQuery = Static<typeof AuditQuery>;

export const AdminAuditQuery = Type.Object({
  organization_id: Type.Optional(
    Text("An organization's id, or `none` for operator-level events only (default: every event)"),
  ),
  ...Filters,
});
export type AdminAuditQuery = Static<typeof AdminAuditQuery>;
