import { Type } from '@sinclair/typebox';
import type { Router } from '../server/router.js';
import { Deleted, errors } from '../server/schemas.js';
import type { Services } from '../services.js';
import { ApiKey, CreateKeyBody, CurrentKey, UpdateKeyBody } from './keys.schemas.js';

const HashParams = Type.Object({ hash: Type.String() });
const tags = ['API keys'];

export async function keysRoutes(app: Router, { keys }: Pick<Services, 'keys'>) {
  app.addSchema(ApiKey);
  const KeyRef = Type.Ref(ApiKey);

  app.get(
    '/key',
    {
      config: { auth: 'key' },
      schema: {
        tags,
        summary: 'The calling key',
        response: { 200: Type.Object({ data: CurrentKey }), ...errors(401, 500) },
      },
    },
    async (req) => ({ data: await keys.current(req.caller) }),
  );

  app.get(
    '/keys',
    {
      config: { auth: 'management' },
      schema: {
        tags,
        summary: 'List API keys of a workspace (100 per page)',
        querystring: Type.Object({
          include_disabled: Type.Optional(Type.Boolean({ default: false })),
          offset: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0 })),
          workspace_id: Type.Optional(
            Type.String({ description: 'UUID or slug; default workspace if omitted' }),
          ),
        }),
        response: { 200: Type.Object({ data: Type.Array(KeyRef) }), ...errors(400, 401, 403, 500) },
      },
    },
    async (req) => ({ data: await keys.list(req.caller, { ...req.query, offset: req.query.offset ?? 0 }) }),
  );

  app.post(
    '/keys',
    {
      config: { auth: 'management' },
      schema: {
        tags,
        summary: 'Create an API key (the secret is returned once, in `key`)',
        body: CreateKeyBody,
        response: { 201: Type.Object({ data: KeyRef, key: Type.String() }), ...errors(400, 401, 403, 500) },
      },
    },
    async (req, reply) => {
      const { row, key } = await keys.createAs(req.caller, req.body);
      return reply.code(201).send({ data: await keys.view(row), key });
    },
  );

  app.get(
    '/keys/:hash',
    {
      config: { auth: 'management' },
      schema: {
        tags,
        summary: 'Get an API key',
        params: HashParams,
        response: { 200: Type.Object({ data: KeyRef }), ...errors(401, 403, 404, 500) },
      },
    },
    async (req) => ({ data: await keys.view(await keys.get(req.caller, req.params.hash)) }),
  );

  app.patch(
    '/keys/:hash',
    {
      config: { auth: 'management' },
      schema: {
        tags,
        summary: 'Update an API key',
        params: HashParams,
        body: UpdateKeyBody,
        response: { 200: Type.Object({ data: KeyRef }), ...errors(400, 401, 403, 404, 500) },
      },
    },
    async (req) => ({ data: await keys.view(await keys.update(req.caller, req.params.hash, req.body)) }),
  );

  app.delete(
    '/keys/:hash',
    {
      config: { auth: 'management' },
      schema: {
        tags,
        summary: 'Delete an API key',
        params: HashParams,
        response: { 200: Deleted, ...errors(401, 403, 404, 500) },
      },
    },
    async (req) => {
      await keys.delete(req.caller, req.params.hash);
      return { deleted: true as const };
    },
  );
}
