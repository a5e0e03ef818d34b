import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { Nullable } from '../server/schemas.js';
import { INTERN_STATUSES } from './model.js';

/**
 * Wire schemas of the interns lifecycle API (seed "Gateway Interns API", digest §6.1, §6.2, §8.3).
 * Request schemas are checked by TypeBox's own compiler (routes.ts), which refuses unknown
 * properties instead of stripping them and never coerces body values; so nullable request fields
 * are unions, not Nullable() (a JSON-Schema type array TypeBox cannot compile).
 */

const UUID = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
/** Lowercase letters, digits, single hyphens between segments, starting with a letter. */
export const NAME_PATTERN = '^[a-z][a-z0-9]*(-[a-z0-9]+)*$';
/** `author/slug[:variant]`. */
export const MODEL_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*(:[A-Za-z0-9._-]+)?$';

const orNull = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

const Name = Type.String({ minLength: 2, maxLength: 17, pattern: NAME_PATTERN });
const Description = orNull(Type.String({ maxLength: 2000 }));
const Instructions = orNull(Type.String({ maxLength: 100_000 }));

export const CreateInternBody = Type.Object(
  {
    name: Name,
    workspace_id: Type.Optional(
      Type.String({ pattern: UUID, description: "Must be the API key's workspace" }),
    ),
    description: Type.Optional(Description),
    instructions: Type.Optional(Instructions),
    provision: Type.Optional(
      Type.Boolean({ description: 'Start provisioning during the call (default false)' }),
    ),
    vault_id: Type.Optional(
      Type.String({
        pattern: UUID,
        description: 'Private vault of another intern of this workspace to borrow',
      }),
    ),
  },
  { additionalProperties: false },
);
export type CreateInternBody = Static<typeof CreateInternBody>;

export const UpdateInternBody = Type.Object(
  {
    name: Type.Optional(Name),
    description: Type.Optional(Description),
    instructions: Type.Optional(Instructions),
    model: Type.Optional(
      orNull(
        Type.String({
          maxLength: 200,
          pattern: MODEL_PATTERN,
          description:
            '`author/slug[:variant]`; null = the workspace default. Effective on the next provision.',
        }),
      ),
    ),
  },
  { additionalProperties: false },
);
export type UpdateInternBody = Static<typeof UpdateInternBody>;

export const DeleteInternBody = Type.Object(
  {
    acknowledge_workspace_loss: Type.Optional(
      Type.Boolean({ description: 'Allows deleting a destroy_failed intern whose archive failed' }),
    ),
  },
  { additionalProperties: false },
);
export type DeleteInternBody = Static<typeof DeleteInternBody>;

/** Provision and suspend take no body (an empty object at most). */
export const NoBody = Type.Object({}, { additionalProperties: false });

export const ListInternsQuery = Type.Object({
  status: Type.Optional(
    Type.Union(
      [Type.String({ maxLength: 400 }), Type.Array(Type.String({ maxLength: 400 }), { maxItems: 8 })],
      {
        description: `Comma-separated statuses (at most 8): ${INTERN_STATUSES.join(', ')}`,
      },
    ),
  ),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
  starting_after: Type.Optional(
    Type.String({ maxLength: 1000, description: 'next_cursor of the previous page' }),
  ),
  workspace_id: Type.Optional(Type.String({ description: "Must be the API key's workspace" })),
});
export type ListInternsQuery = Static<typeof ListInternsQuery>;

export const InternParams = Type.Object({ internId: Type.String({ minLength: 1, maxLength: 200 }) });

export const Intern = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    description: Nullable(Type.String()),
    instructions: Nullable(Type.String()),
    model: Nullable(Type.String()),
    status: Type.String({ enum: [...INTERN_STATUSES] }),
    last_failure_message: Nullable(Type.String()),
    progress: Type.Union([
      Type.Object({ step_label: Type.String(), step_number: Type.Integer(), total_steps: Type.Integer() }),
      Type.Null(),
    ]),
    hostname: Nullable(Type.String()),
    workspace_id: Type.String(),
    vault_id: Nullable(Type.String()),
    attached_vault_id: Nullable(Type.String()),
    created_at: Type.String(),
    updated_at: Type.String(),
  },
  { title: 'Intern' },
);

export const InternList = Type.Object({
  data: Type.Array(Intern),
  has_more: Type.Boolean(),
  next_cursor: Type.Optional(Type.String()),
});

export const Deleting = Type.Object({ deleting: Type.Literal(true) });
export const Provisioning = Type.Object({ provisioning: Type.Literal(true) });
export const Suspended = Type.Object({ suspended: Type.Literal(true) });

/** InternLifecycleError (digest §8.3): a named string code, or the integer status for transport errors. */
export const LifecycleError = Type.Object(
  {
    error: Type.Object({
      code: Type.Union([Type.String(), Type.Integer()]),
      message: Type.String(),
      metadata: Type.Optional(Type.Object({ reason: Type.String(), retryable: Type.Boolean() })),
    }),
  },
  { title: 'InternLifecycleError' },
);

export const lifecycleErrors = (...codes: number[]) =>
  Object.fromEntries(codes.map((c) => [c, LifecycleError])) as Record<number, typeof LifecycleError>;
