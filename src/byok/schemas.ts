import { Type } from '@sinclair/typebox';
import { Nullable, PageQuery } from '../server/schemas.js';

const StringList = (description: string) =>
  Nullable(Type.Array(Type.String({ minLength: 1 }), { description }));

/** The BYOKKey wire object (digest §3). The secret itself is never part of it. */
export const ByokKey = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    workspace_id: Nullable(Type.String({ description: 'null = usable in every workspace' })),
    name: Nullable(Type.String()),
    provider: Type.String({ description: 'Provider slug' }),
    label: Type.String({ description: 'Masked form of the secret' }),
    disabled: Type.Boolean(),
    is_fallback: Type.Boolean(),
    is_byok_only: Type.Boolean(),
    is_required: Type.Boolean(),
    declared_zdr: Nullable(Type.Boolean({ description: 'Self-declared zero data retention' })),
    sort_order: Type.Integer({ description: 'Ascending try order among credentials of one provider' }),
    weight: Type.Integer({
      description: 'Share of calls among the credentials of its provider and tier (weighted random choice)',
    }),
    allowed_api_key_hashes: StringList('API keys that may use it; null = any'),
    allowed_models: StringList('Models it may serve; null = any'),
    allowed_user_ids: StringList('Organization members who may use it; null = any'),
    created_at: Type.String(),
    updated_at: Nullable(Type.String()),
  },
  { $id: 'BYOKKey', title: 'BYOKKey' },
);

/** Fields settable on create and on update. */
const commonFields = {
  name: Type.Optional(Nullable(Type.String())),
  disabled: Type.Optional(Type.Boolean()),
  is_fallback: Type.Optional(Type.Boolean()),
  is_byok_only: Type.Optional(
    Type.Boolean({ description: 'Never fall back to shared capacity; invalid with is_fallback' }),
  ),
  is_required: Type.Optional(Type.Boolean()),
  declared_zdr: Type.Optional(Nullable(Type.Boolean())),
  sort_order: Type.Optional(
    // The column is a 32-bit integer on PostgreSQL (larger → a 500 there).
    Type.Integer({
      minimum: 0,
      maximum: 2_147_483_647,
      description: 'Default on create: after the last of that provider',
    }),
  ),
  weight: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 1_000_000,
      description:
        'Share of calls among the credentials of its provider and tier; default 1 (even shares). Calls pick by weighted random choice among healthy credentials',
    }),
  ),
  allowed_api_key_hashes: Type.Optional(
    Nullable(
      Type.Array(Type.String({ minLength: 1 }), {
        minItems: 1,
        description: 'Hashes of API keys of this organization; null = any key',
      }),
    ),
  ),
  allowed_models: Type.Optional(StringList('null = any model')),
  allowed_user_ids: Type.Optional(StringList('Organization member ids; null = any member')),
};

export const CreateByokBody = Type.Object({
  provider: Type.String({ minLength: 1, description: 'Provider slug' }),
  key: Type.String({ minLength: 1, description: 'The provider secret; stored encrypted, never returned' }),
  workspace_id: Type.Optional(Type.String({ description: 'UUID or slug; default workspace if omitted' })),
  ...commonFields,
});

export const UpdateByokBody = Type.Object({
  key: Type.Optional(
    Type.String({ minLength: 1, description: 'Rotates the secret in place (label regenerated)' }),
  ),
  ...commonFields,
});

export const ListByokQuery = Type.Object({
  ...PageQuery.properties,
  workspace_id: Type.Optional(Type.String({ description: 'UUID or slug; default workspace if omitted' })),
  provider: Type.Optional(Type.String({ description: 'Only credentials of this provider' })),
});
