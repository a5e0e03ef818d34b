import { Type } from '@sinclair/typebox';
import { Nullable, StringEnum } from '../server/schemas.js';
import { RESET_INTERVALS } from './keys.service.js';

const Usd = Type.Number({ description: 'USD' });
const usageFields = {
  usage: Usd,
  usage_daily: Usd,
  usage_weekly: Usd,
  usage_monthly: Usd,
  byok_usage: Usd,
  byok_usage_daily: Usd,
  byok_usage_weekly: Usd,
  byok_usage_monthly: Usd,
};
const limitFields = {
  limit: Nullable(Type.Number({ description: 'Spending limit in USD; null = unlimited' })),
  limit_remaining: Nullable(Type.Number()),
  limit_reset: Nullable(Type.String({ description: 'daily | weekly | monthly (UTC); null = never resets' })),
  include_byok_in_limit: Type.Boolean(),
};
const usageLimitFields = {
  rpm_limit: Nullable(Type.Integer({ description: 'Requests per minute; null = no limit' })),
  tpm_limit: Nullable(
    Type.Integer({
      description: 'Prompt + completion tokens per minute, counted when a call ends; null = no limit',
    }),
  ),
  concurrency_limit: Nullable(Type.Integer({ description: 'Calls in flight at once; null = no limit' })),
};
const usageLimitInputs = {
  rpm_limit: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
  tpm_limit: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
  concurrency_limit: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
};
const ExpiresAt = Type.Optional(Nullable(Type.String({ format: 'date-time' })));

export const ApiKey = Type.Object(
  {
    hash: Type.String({ description: 'SHA-256 hex of the key; the key id' }),
    name: Type.String(),
    label: Type.String({ description: 'Masked form of the key' }),
    created_at: Type.String(),
    updated_at: Nullable(Type.String()),
    creator_user_id: Nullable(Type.String()),
    external_user: Nullable(Type.String()),
    workspace_id: Type.String(),
    disabled: Type.Boolean(),
    ...limitFields,
    ...usageLimitFields,
    ...usageFields,
    expires_at: ExpiresAt,
  },
  { $id: 'ApiKey', title: 'ApiKey' },
);

export const CurrentKey = Type.Object({
  label: Type.String(),
  ...limitFields,
  ...usageLimitFields,
  ...usageFields,
  is_free_tier: Type.Boolean(),
  is_management_key: Type.Boolean(),
  is_provisioning_key: Type.Boolean({ description: 'Deprecated alias of is_management_key' }),
  creator_user_id: Nullable(Type.String()),
  organization_id: Nullable(Type.String()),
  workspace_id: Nullable(Type.String()),
  allowed_data_regions: Type.Array(Type.String()),
  free_model_daily_requests: Type.Object({
    limit: Type.Integer(),
    remaining: Type.Integer(),
    used: Type.Integer(),
  }),
  rate_limit: Type.Object({ interval: Type.String(), note: Type.String(), requests: Type.Integer() }),
  expires_at: ExpiresAt,
});

const LimitReset = Type.Optional(Nullable(StringEnum(RESET_INTERVALS)));

export const CreateKeyBody = Type.Object({
  name: Type.String({ minLength: 1 }),
  limit: Type.Optional(Nullable(Type.Number({ minimum: 0 }))),
  limit_reset: LimitReset,
  include_byok_in_limit: Type.Optional(Type.Boolean()),
  ...usageLimitInputs,
  expires_at: Type.Optional(Nullable(Type.String({ description: 'ISO 8601 with zone, in the future' }))),
  creator_user_id: Type.Optional(Nullable(Type.String())),
  workspace_id: Type.Optional(Type.String()),
  external: Type.Optional(
    Type.Object({
      user: Type.String({ minLength: 1 }),
      api_key: Type.Optional(Type.String({ minLength: 32 })),
    }),
  ),
});

export const UpdateKeyBody = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1 })),
  disabled: Type.Optional(Type.Boolean()),
  limit: Type.Optional(Nullable(Type.Number({ minimum: 0 }))),
  limit_reset: LimitReset,
  include_byok_in_limit: Type.Optional(Type.Boolean()),
  ...usageLimitInputs,
});
