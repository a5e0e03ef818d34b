import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { notFound } from '../lib/errors.js';
import type { Router } from '../server/router.js';
import { errors } from '../server/schemas.js';
import type { Services } from '../services.js';
import { GenerationContent } from './schemas.js';

export async function contentLogRoutes(
  app: Router,
  { contentLog, generations }: Pick<Services, 'contentLog' | 'generations'>,
) {
  app.addSchema(GenerationContent);

  app.get(
    '/generation/content',
    {
      config: { auth: 'key' },
      schema: {
        tags: ['Inference'],
        summary: "A generation's kept request and response content",
        description:
          "Only for workspaces with content logging on, within their retention. An API key reads its own workspace's generations, a management key its organization's.",
        querystring: Type.Object({ id: Type.String({ minLength: 1 }) }),
        response: { 200: Type.Object({ data: Type.Ref(GenerationContent) }), ...errors(400, 401, 404, 500) },
      },
    },
    async (req: FastifyRequest<{ Querystring: { id: string } }>) => {
      const { caller } = req;
      const scope = {
        organizationId: caller.organizationId,
        workspaceId: caller.isManagement ? null : caller.workspaceId,
      };
      let data = await contentLog.get(scope, req.query.id);
      if (!data) {
        // A pass-through caller knows its generation by the provider's id of the answer.
        const generation = await generations.get(caller.organizationId, req.query.id);
        if (generation && generation.id !== req.query.id) data = await contentLog.get(scope, generation.id);
      }
      if (!data) throw notFound('Generation content');
      return { data };
    },
  );
}
