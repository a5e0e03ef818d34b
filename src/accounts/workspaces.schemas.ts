import { Type } from '@sinclair/typebox';
import { Nullable, StringEnum } from '../server/schemas.js';
import {
  DEFAULT_CONTENT_RETENTION_DAYS,
  MAX_CONTENT_RETENTION_DAYS,
  PROVIDER_SORTS,
  SAMPLING_RATE_MIN,
  SLUG_MAX_LENGTH,
  SLUG_PATTERN,
  WORKSPACE_MEMBER_ROLES,
} from './workspaces.service.js';

export const Workspace = Type.Object(
  {
    id: Type.String({ description: 'UUID' }),
    name: Type.String(),
    slug: Type.String(),
    description: Nullable(Type.String()),
    is_default: Type.Boolean({ description: "The organization's default workspace" }),
    created_at: Type.String(),
    updated_at: Nullable(Type.String()),
    created_by: Nullable(
      Type.String({ description: 'User id of the creator; null when created by the organization' }),
    ),
    default_guardrail_id: Type.String({ description: "Id of the workspace's default guardrail" }),
    default_text_model: Nullable(Type.String()),
    default_image_model: Nullable(Type.String()),
    default_provider_sort: Nullable(Type.String({ description: 'price | throughput | latency | exacto' })),
    disabled_server_tools: Nullable(Type.Array(Type.String())),
    io_logging_api_key_ids: Nullable(Type.Array(Type.Integer(), { description: 'null = all keys' })),
    io_logging_sampling_rate: Type.Number(),
    is_data_discount_logging_enabled: Type.Boolean(),
    is_observability_broadcast_enabled: Type.Boolean(),
    is_observability_io_logging_enabled: Type.Boolean(),
    include_byok_in_budgets: Type.Boolean(),
    content_logging: Type.Boolean({
      description: "Whether the content of the workspace's generations is kept (see GET /generation/content)",
    }),
    content_retention_days: Type.Integer({ description: 'Days kept content is served before it is deleted' }),
    video_callback_url: Nullable(
      Type.String({ description: "Where the workspace's video jobs without a callback_url send their end" }),
    ),
    has_webhook_secret: Type.Boolean({
      description:
        "Whether the workspace's video job events are signed (POST /workspaces/{id}/webhook-secret)",
    }),
  },
  { $id: 'Workspace', title: 'Workspace' },
);

export const WorkspaceMember = Type.Object(
  {
    id: Type.String(),
    workspace_id: Type.String(),
    user_id: Type.String(),
    role: StringEnum(WORKSPACE_MEMBER_ROLES),
    created_at: Type.String(),
  },
  { $id: 'WorkspaceMember', title: 'WorkspaceMember' },
);

const optionalFields = {
  description: Type.Optional(Nullable(Type.String())),
  default_text_model: Type.Optional(Nullable(Type.String())),
  default_image_model: Type.Optional(Nullable(Type.String())),
  default_provider_sort: Type.Optional(Nullable(StringEnum(PROVIDER_SORTS))),
  disabled_server_tools: Type.Optional(
    Nullable(
      Type.Array(Type.String({ minLength: 1 }), {
        description: 'Server tools disabled in this workspace; [] or null clears',
      }),
    ),
  ),
  io_logging_api_key_ids: Type.Optional(
    Nullable(Type.Array(Type.Integer(), { description: 'null = all keys' })),
  ),
  io_logging_sampling_rate: Type.Optional(Type.Number({ minimum: SAMPLING_RATE_MIN, maximum: 1 })),
  is_data_discount_logging_enabled: Type.Optional(Type.Boolean()),
  is_observability_broadcast_enabled: Type.Optional(Type.Boolean()),
  is_observability_io_logging_enabled: Type.Optional(Type.Boolean()),
  content_logging: Type.Optional(
    Type.Boolean({ description: 'Keep the request and response content of generations (off by default)' }),
  ),
  content_retention_days: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_CONTENT_RETENTION_DAYS,
      description: `Days content is kept (default ${DEFAULT_CONTENT_RETENTION_DAYS})`,
    }),
  ),
  video_callback_url: Type.Optional(
    Nullable(
      Type.String({
        description:
          "An https:// URL: where the workspace's video jobs without a callback_url send their end; null clears it",
      }),
    ),
  ),
};

const Name = Type.String({ minLength: 1 });
const Slug = Type.String({
  minLength: 1,
  maxLength: SLUG_MAX_LENGTH,
  pattern: SLUG_PATTERN,
  description: 'Lowercase letters and digits in segments joined by single hyphens',
});

export const CreateWorkspaceBody = Type.Object({ name: Name, slug: Slug, ...optionalFields });

export const UpdateWorkspaceBody = Type.Object({
  name: Type.Optional(Name),
  slug: Type.Optional(Slug),
  ...optionalFields,
});

export const UserIdsBody = Type.Object({
  user_ids: Type.Array(Type.String({ minLength: 1 }), { minItems: 1 }),
});
