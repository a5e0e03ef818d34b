import { Type } from '@sinclair/typebox';
import type { Router } from '../server/router.js';
import { Deleted, errors, IdParams, toPage } from '../server/schemas.js';
import type { Services } from '../services.js';
import {
  CreateDestinationBody,
  Destination,
  ListDestinationsQuery,
  UpdateDestinationBody,
} from './schemas.js';
import { destinationView } from './service.js';

const tags = ['Observability'];
const config = { auth: 'management' as const };
/** Writes: organization owners and admins only (members read). */
const adminConfig = { auth: 'management' as const, role: 'admin' as const };

/** Export destinations: where a workspace's generation records are sent (OpenRouter's observability). */
export async function observabilityRoutes(app: Router, { destinations }: Pick<Services, 'destinations'>) {
  app.addSchema(Destination);
  const Ref = Type.Ref(Destination);

  app.get(
    '/observability/destinations',
    {
      config,
      schema: {
        tags,
        summary: 'List the export destinations of a workspace',
        querystring: ListDestinationsQuery,
        response: {
          200: Type.Object({ data: Type.Array(Ref), total_count: Type.Integer() }),
          ...errors(400, 401, 403, 500),
        },
      },
    },
    async (req) => destinations.list(req.caller, { ...req.query, ...toPage(req.query) }),
  );

  app.post(
    '/observability/destinations',
    {
      config: adminConfig,
      schema: {
        tags,
        summary:
          'Create an export destination (webhook, otlp or langfuse); a webhook’s signing secret is returned once',
        body: CreateDestinationBody,
        response: {
          201: Type.Object({
            data: Ref,
            signing_secret: Type.Optional(
              Type.String({ description: 'Webhooks: verifies x-gatehouse-signature; shown only here' }),
            ),
          }),
          ...errors(400, 401, 403, 409, 500),
        },
      },
    },
    async (req, reply) => {
      const { row, signingSecret } = await destinations.create(req.caller, req.body);
      return reply
        .code(201)
        .send({ data: destinationView(row), ...(signingSecret ? { signing_secret: signingSecret } : {}) });
    },
  );

  app.get(
    '/observability/destinations/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Get an export destination',
        params: IdParams,
        response: { 200: Type.Object({ data: Ref }), ...errors(401, 403, 404, 500) },
      },
    },
    async (req) => ({ data: destinationView(await destinations.get(req.caller, req.params.id)) }),
  );

  app.patch(
    '/observability/destinations/:id',
    {
      config: adminConfig,
      schema: {
        tags,
        summary: 'Update an export destination (masked header values sent back keep their stored value)',
        params: IdParams,
        body: UpdateDestinationBody,
        response: { 200: Type.Object({ data: Ref }), ...errors(400, 401, 403, 404, 500) },
      },
    },
    async (req) => ({
      data: destinationView(await destinations.update(req.caller, req.params.id, req.body)),
    }),
  );

  app.delete(
    '/observability/destinations/:id',
    {
      config: adminConfig,
      schema: {
        tags,
        summary: 'Delete an export destination (records queued for it are still sent)',
        params: IdParams,
        response: { 200: Deleted, ...errors(401, 403, 404, 500) },
      },
    },
    async (req) => {
      await destinations.delete(req.caller, req.params.id);
      return { deleted: true as const };
    },
  );
}
