import { Type } from '@sinclair/typebox';
import { Nullable, PageQuery, StringEnum } from '../server/schemas.js';
import {
  APPLY_TO,
  BUILTIN_SLUGS,
  DATA_REGIONS,
  FILTER_ACTIONS,
  RESET_INTERVALS,
  SCAN_SCOPES,
  ZDR_VENDORS,
} from './fields.js';

const Strings = (description?: string) =>
  Nullable(Type.Array(Type.String(), description ? { description } : {}));
const Flag = (description?: string) => Type.Boolean(description ? { description } : {});
const zdrVendorFlags = <T>(schema: () => T) =>
  Object.fromEntries(ZDR_VENDORS.map((v) => [`enforce_zdr_${v}`, schema()])) as Record<
    `enforce_zdr_${(typeof ZDR_VENDORS)[number]}`,
    T
  >;

const APPLY_TO_HELP =
  "request (default): the caller's request | response: the model's answer | both; omitted when request";
const ApplyToOut = () => Type.Optional(Type.String({ description: APPLY_TO_HELP }));
const ApplyToIn = () => Type.Optional(StringEnum(APPLY_TO, { description: APPLY_TO_HELP }));

const ContentFilterOut = Type.Object({
  pattern: Type.String({ description: 'Regular expression (RE2 syntax: no backreferences or lookaround)' }),
  action: Type.String({ description: 'redact | block | flag' }),
  label: Type.Optional(Nullable(Type.String())),
  apply_to: ApplyToOut(),
});

const BuiltinFilterOut = Type.Object({
  slug: Type.String({ description: BUILTIN_SLUGS.join(' | ') }),
  action: Type.String({ description: 'redact | block | flag' }),
  label: Type.Optional(Type.String({ description: 'Human label derived from the slug' })),
  scan_scope: Type.Optional(
    Type.String({ description: 'user_only | all_messages (regex-prompt-injection only)' }),
  ),
  apply_to: ApplyToOut(),
});

/** The Guardrail object, always in its extended form. */
export const Guardrail = Type.Object(
  {
    id: Type.String(),
    workspace_id: Nullable(Type.String()),
    name: Type.String(),
    description: Nullable(Type.String()),
    created_at: Type.String(),
    updated_at: Nullable(Type.String()),
    limit_usd: Nullable(Type.Number({ description: 'Budget in USD; null = no budget' })),
    reset_interval: Nullable(Type.String({ description: 'daily | weekly | monthly' })),
    allowed_data_regions: Strings('global | europe | us; null = unrestricted'),
    allowed_models: Strings('null = no restriction'),
    allowed_providers: Strings(),
    ignored_models: Strings(),
    ignored_providers: Strings(),
    include_byok_in_budgets: Type.Boolean(),
    rpm_limit: Nullable(
      Type.Integer({ description: 'Requests per minute of the keys it covers, together; null = none' }),
    ),
    tpm_limit: Nullable(
      Type.Integer({ description: 'Tokens per minute of the keys it covers, together; null = none' }),
    ),
    concurrency_limit: Nullable(
      Type.Integer({ description: 'Calls in flight of the keys it covers, together; null = none' }),
    ),
    content_filters: Nullable(Type.Array(ContentFilterOut)),
    content_filter_builtins: Nullable(Type.Array(BuiltinFilterOut)),
    enable_free_model_publication: Flag(),
    enable_free_model_training: Flag(),
    enable_paid_model_training: Flag(),
    enforce_zdr: Nullable(Type.Boolean({ description: 'Deprecated; seeds the per-vendor flags on write' })),
    ...zdrVendorFlags(() => Flag()),
  },
  { $id: 'Guardrail', title: 'Guardrail' },
);

const NullableFlag = () => Type.Optional(Nullable(Type.Boolean()));
const StringList = () => Type.Optional(Nullable(Type.Array(Type.String({ minLength: 1 }))));

const ContentFilterIn = Type.Object({
  pattern: Type.String({
    minLength: 1,
    description: 'Regular expression (RE2 syntax: no backreferences or lookaround)',
  }),
  action: StringEnum(FILTER_ACTIONS),
  label: Type.Optional(Nullable(Type.String())),
  apply_to: ApplyToIn(),
});

const BuiltinFilterIn = Type.Object({
  slug: StringEnum(BUILTIN_SLUGS),
  action: StringEnum(FILTER_ACTIONS),
  label: Type.Optional(Type.String({ description: 'Deprecated and ignored' })),
  scan_scope: Type.Optional(
    StringEnum(SCAN_SCOPES, { description: 'regex-prompt-injection only; default all_messages' }),
  ),
  apply_to: ApplyToIn(),
});

const policyFields = {
  description: Type.Optional(Nullable(Type.String())),
  limit_usd: Type.Optional(Nullable(Type.Number({ minimum: 0, description: 'USD; needs reset_interval' }))),
  reset_interval: Type.Optional(Nullable(StringEnum(RESET_INTERVALS))),
  allowed_data_regions: Type.Optional(Nullable(Type.Array(StringEnum(DATA_REGIONS)))),
  allowed_models: StringList(),
  allowed_providers: StringList(),
  ignored_models: StringList(),
  ignored_providers: StringList(),
  content_filters: Type.Optional(Nullable(Type.Array(ContentFilterIn))),
  content_filter_builtins: Type.Optional(Nullable(Type.Array(BuiltinFilterIn))),
  include_byok_in_budgets: Type.Optional(Type.Boolean()),
  rpm_limit: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
  tpm_limit: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
  concurrency_limit: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
  enable_free_model_publication: NullableFlag(),
  enable_free_model_training: NullableFlag(),
  enable_paid_model_training: NullableFlag(),
  enforce_zdr: NullableFlag(),
  ...zdrVendorFlags(NullableFlag),
};

export const CreateGuardrailBody = Type.Object({
  name: Type.String({ minLength: 1 }),
  workspace_id: Type.Optional(Type.String({ description: 'UUID or slug; default workspace if omitted' })),
  ...policyFields,
});

export const UpdateGuardrailBody = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1 })),
  ...policyFields,
});

export const ListGuardrailsQuery = Type.Object({
  ...PageQuery.properties,
  workspace_id: Type.Optional(Type.String({ description: 'UUID or slug; default workspace if omitted' })),
});

export const KeyAssignment = Type.Object(
  {
    id: Type.String(),
    key_hash: Type.String(),
    key_name: Type.String(),
    key_label: Type.String(),
    guardrail_id: Type.String(),
    created_at: Type.String(),
    assigned_by: Nullable(Type.String()),
  },
  { $id: 'KeyAssignment', title: 'KeyAssignment' },
);

export const MemberAssignment = Type.Object(
  {
    id: Type.String(),
    user_id: Type.String(),
    organization_id: Type.String(),
    guardrail_id: Type.String(),
    created_at: Type.String(),
    assigned_by: Nullable(Type.String()),
  },
  { $id: 'MemberAssignment', title: 'MemberAssignment' },
);

const Ids = (description: string) => Type.Array(Type.String({ minLength: 1 }), { minItems: 1, description });
export const KeyHashesBody = Type.Object({ key_hashes: Ids('API key hashes') });
export const MemberIdsBody = Type.Object({ member_user_ids: Ids('User ids of organization members') });

const Names = (description: string) => Type.Array(Type.String(), { description });

/** What the gateway enforces on one API key: its guardrails, combined (GET /keys/{hash}/effective-policy). */
export const EffectivePolicy = Type.Object(
  {
    key_hash: Type.String(),
    guardrails: Type.Array(
      Type.Object({
        id: Type.String(),
        name: Type.String(),
        via: Type.Array(StringEnum(['key', 'member', 'default'] as const), {
          description:
            "key: assigned to the key | member: assigned to the key's creator | default: the workspace's default guardrail",
        }),
      }),
      { description: 'The guardrails that apply to the key; empty = no policy' },
    ),
    allowed_models: Nullable(Names('Intersection of the allow lists; null = unrestricted')),
    ignored_models: Names('Union of the ignore lists'),
    allowed_providers: Nullable(Names('Intersection of the allow lists; null = unrestricted')),
    ignored_providers: Names('Union of the ignore lists'),
    allowed_data_regions: Nullable(Names('Intersection; null = unrestricted')),
    enforce_zdr: Type.Object(
      Object.fromEntries(ZDR_VENDORS.map((v) => [v, Type.Boolean()])) as Record<
        (typeof ZDR_VENDORS)[number],
        ReturnType<typeof Type.Boolean>
      >,
      { description: 'Zero data retention required, per model vendor (any guardrail asking for it)' },
    ),
    allow_training: Type.Object({ free_models: Type.Boolean(), paid_models: Type.Boolean() }),
    allow_free_model_publication: Type.Boolean(),
    budgets: Type.Array(
      Type.Object({
        guardrail_id: Type.String(),
        guardrail_name: Type.String(),
        limit_usd: Type.Number(),
        reset_interval: Nullable(StringEnum(RESET_INTERVALS)),
        include_byok: Type.Boolean(),
        scope: StringEnum(['key', 'member'] as const, {
          description: "key: this key's spend | member: its creator's spend over all their keys",
        }),
      }),
    ),
    usage_limits: Type.Array(
      Type.Object({
        guardrail_id: Type.String(),
        guardrail_name: Type.String(),
        rpm_limit: Nullable(Type.Integer()),
        tpm_limit: Nullable(Type.Integer()),
        concurrency_limit: Nullable(Type.Integer()),
      }),
      { description: 'Counted over every key each guardrail covers, together' },
    ),
    content_filters: Type.Array(
      Type.Object({
        kind: StringEnum(['builtin', 'custom'] as const),
        label: Type.String(),
        action: StringEnum(FILTER_ACTIONS),
        apply_to: StringEnum(APPLY_TO),
        guardrail_id: Type.String(),
      }),
    ),
  },
  { $id: 'EffectivePolicy', title: 'EffectivePolicy' },
);
