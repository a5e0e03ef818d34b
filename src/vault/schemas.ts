import { type Static, Type } from '@sinclair/typebox';
import { Nullable } from '../server/schemas.js';
import { MAX_HOSTS } from './hosts.js';
import { SECRET_NAME_MAX, SECRET_NAME_PATTERN, SECRET_NAME_RULE } from './names.js';
import { COPY_MAX, VALUE_MAX, VALUE_MIN } from './service.js';
import { MAX_PORTS } from './transport.js';

/**
 * Wire schemas of the vault API (digest §7). Requests are checked by TypeBox's compiler (routes.ts),
 * which refuses unknown body properties instead of stripping them; the finer rules (names, hosts)
 * are the service's, so that their 400s say exactly what is wrong.
 */

const UUID = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

/** The VaultSecret wire object: metadata only, values are never returned. */
export const VaultSecret = Type.Object(
  {
    name: Type.String(),
    hosts: Nullable(
      Type.Array(Type.String(), {
        description: 'Exact hostnames the value may be sent to; null only on a legacy row',
      }),
    ),
    fingerprint: Nullable(
      Type.String({
        description:
          "Hex HMAC-SHA-256, under the vault's own key, of the value with the secret's name and the member who wrote it: the same member rewriting the same value keeps it, any other write differs; null only on a legacy row",
      }),
    ),
    created_at: Type.String({ format: 'date-time' }),
    allow_http: Type.Optional(
      Type.Literal(true, { description: 'Present when the value may also be sent over plain HTTP' }),
    ),
    ports: Type.Optional(
      Type.Array(Type.Integer(), {
        description: "Present when the value may be sent to ports beyond the scheme's default (443, or 80)",
      }),
    ),
  },
  { $id: 'VaultSecret', title: 'VaultSecret' },
);

export const SecretName = Type.String({
  minLength: 1,
  maxLength: SECRET_NAME_MAX,
  pattern: SECRET_NAME_PATTERN,
  description: `Secret name: ${SECRET_NAME_RULE}`,
});

const InternId = Type.String({ pattern: UUID, description: "UUID of an intern in the key's workspace" });

export const NameParams = Type.Object({ name: SecretName });
export const InternParams = Type.Object({ internId: InternId });

export const VaultListQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 100, default: 100, description: 'Secrets per page (1–100)' }),
  ),
  offset: Type.Optional(
    Type.Integer({ minimum: 0, maximum: 10_000, default: 0, description: 'Secrets to skip (0–10000)' }),
  ),
});
export type VaultListQuery = Static<typeof VaultListQuery>;

export const VaultSecretWriteRequest = Type.Object(
  {
    value: Type.String({
      minLength: VALUE_MIN,
      maxLength: VALUE_MAX,
      description: `The secret (${VALUE_MIN} to ${VALUE_MAX} characters); encrypted at rest, never returned`,
    }),
    hosts: Type.Array(Type.String(), {
      minItems: 1,
      maxItems: MAX_HOSTS,
      description:
        'Exact hostnames (or IPv4 addresses) the value may be released to: lowercased, one trailing dot removed, duplicates collapsed; no scheme, port, path or wildcard',
    }),
    allow_http: Type.Optional(
      Type.Boolean({
        description: 'Also release the value over plain http:// (default false: HTTPS only)',
      }),
    ),
    ports: Type.Optional(
      Type.Array(Type.Integer({ minimum: 1, maximum: 65_535 }), {
        maxItems: MAX_PORTS,
        description: `Ports beyond 443 (80 for http) the value may be sent to; at most ${MAX_PORTS}`,
      }),
    ),
  },
  { additionalProperties: false, title: 'VaultSecretWriteRequest' },
);
export type VaultSecretWriteRequest = Static<typeof VaultSecretWriteRequest>;

export const VaultSecretCopyRequest = Type.Object(
  {
    names: Type.Array(SecretName, {
      minItems: 1,
      maxItems: COPY_MAX,
      uniqueItems: true,
      description: 'Names of workspace secrets to copy into the intern vault',
    }),
  },
  { additionalProperties: false, title: 'VaultSecretCopyRequest' },
);
export type VaultSecretCopyRequest = Static<typeof VaultSecretCopyRequest>;
