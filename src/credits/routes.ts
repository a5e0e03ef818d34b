import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { errors } from '../server/schemas.js';
import type { Services } from '../services.js';

export async function creditsRoutes(app: FastifyInstance, { credits }: Services) {
  app.get(
    '/credits',
    {
      config: { auth: 'management' },
      schema: {
        tags: ['Credits'],
        summary: 'Total credits purchased and used',
        response: {
          200: Type.Object({
            data: Type.Object({ total_credits: Type.Number(), total_usage: Type.Number() }),
          }),
          ...errors(401, 403, 500),
        },
      },
    },
    async (req) => ({ data: await credits.totals(req.caller.organizationId) }),
  );

  app.post(
    '/credits/crypto-charge',
    {
      schema: {
        tags: ['Credits'],
        summary: 'Removed: crypto-payment charge',
        description:
          'Deprecated and removed. Always answers 410 Gone; buy credits through the credits purchase flow.',
        deprecated: true,
        response: errors(410),
      },
    },
    async (_req, reply) =>
      reply.code(410).send({
        error: {
          code: 410,
          message: 'This endpoint has been removed. Use the credits purchase flow instead.',
        },
      }),
  );
}
