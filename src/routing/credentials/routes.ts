import { Type } from '@sinclair/typebox';
import type { Router } from '../../server/router.js';
import { errors, Nullable, StringEnum } from '../../server/schemas.js';
import type { Services } from '../../services.js';

const CredentialHealth = Type.Object({
  provider: Type.String(),
  kind: StringEnum(['operator', 'byok'] as const),
  name: Type.String({ description: "The operator key's name, or the BYOK credential's id" }),
  fingerprint: Nullable(
    Type.String({
      description: 'Operator keys: sha256 prefix of the secret (tells keys apart, reveals nothing)',
    }),
  ),
  weight: Nullable(Type.Number()),
  state: StringEnum(['closed', 'open', 'half-open', 'disabled'] as const),
  consecutive_failures: Type.Integer(),
  last_status: Nullable(
    Type.Integer({ description: 'Upstream status of the last failure (0: timeout or connection error)' }),
  ),
  last_error_at: Nullable(Type.String()),
  open_until: Nullable(Type.String({ description: 'Open: when the next probe call may go' })),
});

/** The operator's view of the provider credentials' circuit breakers (this node's). */
export async function credentialRoutes(app: Router, { credentials }: Pick<Services, 'credentials'>) {
  app.get(
    '/admin/credentials',
    {
      config: { auth: 'admin' },
      schema: {
        tags: ['Operator'],
        summary:
          "Provider credentials' health on this node: every operator key, and the BYOK credentials that failed lately",
        response: { 200: Type.Object({ data: Type.Array(CredentialHealth) }), ...errors(401, 404) },
      },
    },
    async () => ({ data: credentials.list() }),
  );
}
