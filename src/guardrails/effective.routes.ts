import { Type } from '@sinclair/typebox';
import type { Router } from '../server/router.js';
import { errors } from '../server/schemas.js';
import type { Services } from '../services.js';
import { EffectivePolicy } from './schemas.js';

/** The effective policy of an API key: readable by every management key of its organization. */
export async function effectivePolicyRoutes(
  app: Router,
  { effectivePolicy }: Pick<Services, 'effectivePolicy'>,
) {
  app.addSchema(EffectivePolicy);
  app.get(
    '/keys/:hash/effective-policy',
    {
      config: { auth: 'management' },
      schema: {
        tags: ['Guardrails'],
        summary: 'The policy that applies to an API key: its guardrails, combined',
        description:
          'Allow lists intersect, ignore lists add up, and a protection (ZDR, no training) any guardrail ' +
          'asks for applies. Reflects guardrail and assignment changes at once.',
        params: Type.Object({ hash: Type.String() }),
        response: {
          200: Type.Object({ data: Type.Ref(EffectivePolicy) }),
          ...errors(401, 403, 404, 500),
        },
      },
    },
    async (req) => ({ data: await effectivePolicy.forKey(req.caller, req.params.hash) }),
  );
}
