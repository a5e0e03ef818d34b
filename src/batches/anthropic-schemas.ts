import { Type } from '@sinclair/typebox';
import { Nullable } from '../server/schemas.js';

/** Wire schemas of the Message Batches routes, as Anthropic's API and SDK define them. */

const Str = Type.String();
const Time = Type.String({ format: 'date-time', description: 'RFC 3339' });

export const MessageBatch = Type.Object(
  {
    id: Type.String({ description: '`msgbatch_…`: the Gatehouse batch `batch_…` with the same suffix' }),
    type: Type.Literal('message_batch'),
    processing_status: Type.Union(['in_progress', 'canceling', 'ended'].map((s) => Type.Literal(s))),
    request_counts: Type.Object({
      processing: Type.Integer(),
      succeeded: Type.Integer(),
      errored: Type.Integer(),
      canceled: Type.Integer(),
      expired: Type.Integer(),
    }),
    created_at: Time,
    ended_at: Nullable(Time),
    expires_at: Time,
    cancel_initiated_at: Nullable(Time),
    archived_at: Nullable(Time),
    results_url: Nullable(
      Type.String({ description: 'Absolute URL of the results file on this gateway, once ended' }),
    ),
  },
  { $id: 'MessageBatch' },
);

export const MessageBatchCreate = Type.Object(
  {
    requests: Type.Array(
      Type.Object({
        custom_id: Type.String({ pattern: '^[a-zA-Z0-9_-]{1,64}$' }),
        params: Type.Object(
          {},
          { additionalProperties: true, description: 'A Messages request body (not streaming)' },
        ),
      }),
      { minItems: 1, maxItems: 100_000 },
    ),
  },
  {
    $id: 'MessageBatchCreate',
    description: 'Read as a stream (up to 256 MB and the configured batch size limit)',
  },
);

export const MessageBatchList = Type.Object({
  data: Type.Array(Type.Ref(MessageBatch)),
  has_more: Type.Boolean(),
  first_id: Nullable(Str),
  last_id: Nullable(Str),
});

export const MessageBatchListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 20 })),
  after_id: Type.Optional(Type.String({ description: 'Batches older than this one' })),
  before_id: Type.Optional(Type.String({ description: 'Batches newer than this one' })),
});

export const MessageBatchDeleted = Type.Object({
  id: Str,
  type: Type.Literal('message_batch_deleted'),
});
