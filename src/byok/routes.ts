import { Type } from '@sinclair/typebox';
import type { Router } from '../server/router.js';
import { Deleted, errors, IdParams, toPage } from '../server/schemas.js';
import type { Services } from '../services.js';
import { ByokKey, CreateByokBody, ListByokQuery, UpdateByokBody } from './schemas.js';
import { byokView } from './service.js';

const tags = ['BYOK'];
const config = { auth: 'management' as const };
/** Writes: organization owners and admins only (members read). */
const adminConfig = { auth: 'management' as const, role: 'admin' as const };

/** Bring-your-own-key provider credentials (metadata only; the secret is write-only). */
export async function byokRoutes(app: Router, { byok }: Pick<Services, 'byok'>) {
  app.addSchema(ByokKey);
  const KeyRef = Type.Ref(ByokKey);

  app.get(
    '/byok',
    {
      config,
      schema: {
        tags,
        summary: 'List BYOK credentials of a workspace, by provider then sort_order',
        querystring: ListByokQuery,
        response: {
          200: Type.Object({ data: Type.Array(KeyRef), total_count: Type.Integer() }),
          ...errors(400, 401, 403, 500),
        },
      },
    },
    async (req) => byok.list(req.caller, { ...req.query, ...toPage(req.query) }),
  );

  app.post(
    '/byok',
    {
      config: adminConfig,
      schema: {
        tags,
        summary: 'Store a provider credential (encrypted at rest, never returned)',
        body: CreateByokBody,
        response: { 201: Type.Object({ data: KeyRef }), ...errors(400, 401, 403, 500) },
      },
    },
    async (req, reply) => reply.code(201).send({ data: byokView(await byok.create(req.caller, req.body)) }),
  );

  app.get(
    '/byok/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Get a BYOK credential',
        params: IdParams,
        response: { 200: Type.Object({ data: KeyRef }), ...errors(401, 403, 404, 500) },
      },
    },
    async (req) => ({ data: byokView(await byok.get(req.caller, req.params.id)) }),
  );

  app.patch(
    '/byok/:id',
    {
      config: adminConfig,
      schema: {
        tags,
        summary: 'Update a BYOK credential; `key` rotates the secret in place',
        params: IdParams,
        body: UpdateByokBody,
        response: { 200: Type.Object({ data: KeyRef }), ...errors(400, 401, 403, 404, 500) },
      },
    },
    async (req) => ({ data: byokView(await byok.update(req.caller, req.params.id, req.body)) }),
  );

  app.delete(
    '/byok/:id',
    {
      config: adminConfig,
      schema: {
        tags,
        summary: 'Delete a BYOK credential (its secret is wiped)',
        params: IdParams,
        response: { 200: Deleted, ...errors(401, 403, 404, 500) },
      },
    },
    async (req) => {
      await byok.delete(req.caller, req.params.id);
      return { deleted: true as const };
    },
  );
}
