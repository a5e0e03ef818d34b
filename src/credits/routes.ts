import { Type } from '@sinclair/typebox';
import type { Router } from '../server/router.js';
import { errors, PageQuery, toPage } from '../server/schemas.js';
import type { Services } from '../services.js';
import { CreditTotals, LedgerEntry } from './schemas.js';

export async function creditsRoutes(app: Router, { credits }: Pick<Services, 'credits'>) {
  app.get(
    '/credits',
    {
      config: { auth: 'management' },
      schema: {
        tags: ['Credits'],
        summary: 'Total credits purchased and used',
        response: {
          200: Type.Object({ data: CreditTotals }),
          ...errors(401, 403, 500),
        },
      },
    },
    async (req) => ({ data: await credits.totals(req.caller.organizationId) }),
  );

  app.get(
    '/credits/ledger',
    {
      config: { auth: 'management' },
      schema: {
        tags: ['Credits'],
        summary: "The organization's credits ledger (purchases and grants), newest first",
        querystring: PageQuery,
        response: {
          200: Type.Object({ data: Type.Array(LedgerEntry), total_count: Type.Integer() }),
          ...errors(400, 401, 403, 500),
        },
      },
    },
    async (req) => credits.ledger(req.caller.organizationId, toPage(req.query)),
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
