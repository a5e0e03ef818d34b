import { Type } from '@sinclair/typebox';
import { Nullable, PageQuery, StringEnum } from '../server/schemas.js';

/**
 * The destination types Gatehouse delivers to. `otel-collector` is the official SDK's name for an
 * OTLP/HTTP traces endpoint (`config.endpoint`): delivered as `otlp` is. Others the SDK names are
 * refused with a 400.
 */
export const DESTINATION_TYPES = ['webhook', 'otlp', 'otel-collector', 'langfuse'] as const;
export type DestinationType = (typeof DESTINATION_TYPES)[number];

export const FILTER_FIELDS = [
  'model',
  'provider',
  'user_id',
  'finish_reason',
  'total_cost',
  'total_tokens',
  'prompt_tokens',
  'completion_tokens',
] as const;
export const FILTER_OPERATORS = [
  'equals',
  'not_equals',
  'contains',
  'not_contains',
  'regex',
  'starts_with',
  'ends_with',
  'gt',
  'lt',
  'gte',
  'lte',
  'exists',
  'not_exists',
] as const;

const Rule = Type.Object({
  field: Type.String({ description: `One of ${FILTER_FIELDS.join(', ')}` }),
  operator: Type.String({ description: `One of ${FILTER_OPERATORS.join(', ')}` }),
  value: Type.Optional(Type.Union([Type.Number(), Type.String({ maxLength: 500 })])),
});
const RuleGroup = Type.Object({
  logic: Type.Optional(
    StringEnum(['and', 'or'] as const, { description: 'How the group’s rules combine (default and)' }),
  ),
  rules: Type.Array(Rule, { minItems: 1, maxItems: 20 }),
});
export const FilterRules = Type.Object(
  {
    enabled: Type.Boolean(),
    groups: Type.Array(RuleGroup, { maxItems: 10, description: 'A record is sent when every group matches' }),
  },
  { description: 'Which records are sent; null or enabled:false sends every record' },
);

const Headers = Type.Record(
  Type.String({ pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$" }),
  Type.String({ maxLength: 4096 }),
  {
    description: 'Extra request headers (values are stored encrypted and shown masked)',
  },
);

export const WebhookConfig = Type.Object({
  url: Type.String({ minLength: 1, maxLength: 2048, description: 'http(s) URL records are sent to' }),
  method: Type.Optional(StringEnum(['POST', 'PUT'] as const, { description: 'Default POST' })),
  headers: Type.Optional(Headers),
});

/** The ObservabilityDestination wire object. Header values come back masked. */
export const Destination = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    workspace_id: Type.String(),
    type: Type.String({ description: DESTINATION_TYPES.join(', ') }),
    name: Nullable(Type.String()),
    enabled: Type.Boolean(),
    config: Type.Object(
      {
        url: Type.Optional(Type.String({ description: 'webhook, otlp' })),
        endpoint: Type.Optional(Type.String({ description: 'otel-collector: the OTLP/HTTP traces URL' })),
        method: Type.Optional(Type.String({ description: 'webhook' })),
        encoding: Type.Optional(Type.String({ description: 'otlp: protobuf or json' })),
        headers: Type.Optional(
          Type.Record(Type.String(), Type.String(), {
            description: 'webhook, otlp, otel-collector; values masked',
          }),
        ),
        base_url: Type.Optional(Type.String({ description: 'langfuse' })),
        public_key: Type.Optional(Type.String({ description: 'langfuse' })),
        secret_key: Type.Optional(Type.String({ description: 'langfuse; masked' })),
      },
      { description: 'The type’s configuration, secrets masked' },
    ),
    api_key_hashes: Nullable(Type.Array(Type.String())),
    privacy_mode: Type.Boolean(),
    sampling_rate: Type.Number(),
    regions: Type.Array(Type.String()),
    filter_rules: Nullable(FilterRules),
    broadcast_generation_cost: Type.Boolean(),
    broadcast_generation_identity: Type.Boolean(),
    broadcast_generation_request_context: Type.Boolean(),
    created_at: Type.String(),
    updated_at: Type.String(),
  },
  { $id: 'ObservabilityDestination', title: 'ObservabilityDestination' },
);

const common = {
  name: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
  enabled: Type.Optional(Type.Boolean()),
  api_key_hashes: Type.Optional(
    Nullable(Type.Array(Type.String({ minLength: 1 }), { minItems: 1, description: 'null = every key' })),
  ),
  privacy_mode: Type.Optional(
    Type.Boolean({ description: 'Never send content or upstream error messages (default false)' }),
  ),
  sampling_rate: Type.Optional(Type.Number({ minimum: 0.0001, maximum: 1, description: 'Default 1' })),
  regions: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })),
  filter_rules: Type.Optional(Nullable(FilterRules)),
  broadcast_generation_cost: Type.Optional(
    Type.Boolean({ description: 'Include cost fields (default true)' }),
  ),
  broadcast_generation_identity: Type.Optional(
    Type.Boolean({ description: 'Include the API key hash and user id (default true)' }),
  ),
  broadcast_generation_request_context: Type.Optional(
    Type.Boolean({ description: 'Include the endpoint, streamed flag and route (default false)' }),
  ),
};

export const CreateDestinationBody = Type.Object({
  type: Type.String({ minLength: 1, description: DESTINATION_TYPES.join(', ') }),
  config: Type.Record(Type.String(), Type.Unknown(), {
    description:
      'The type’s configuration. webhook: url, method (POST/PUT), headers. otlp: url (the OTLP/HTTP traces endpoint), encoding (protobuf/json), headers. langfuse: base_url (default https://cloud.langfuse.com), public_key, secret_key',
  }),
  workspace_id: Type.Optional(Type.String({ description: 'UUID or slug; default workspace if omitted' })),
  ...common,
  name: Type.String({ minLength: 1, maxLength: 200 }),
});

export const UpdateDestinationBody = Type.Object({
  config: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  ...common,
});

export const ListDestinationsQuery = Type.Object({
  ...PageQuery.properties,
  workspace_id: Type.Optional(Type.String({ description: 'UUID or slug; default workspace if omitted' })),
});
