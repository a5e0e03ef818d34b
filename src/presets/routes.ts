import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { forbidden } from '../lib/errors.js';
import type { Router } from '../server/router.js';
import { Deleted, errors, PageQuery, toPage } from '../server/schemas.js';
import type { Services } from '../services.js';
import type { Skin } from './config.js';
import {
  PresetList,
  PresetVersion,
  PresetVersionList,
  PresetWithVersion,
  SlugParams,
  VersionParams,
} from './schemas.js';

const tags = ['Presets'];
const AnyBody = Type.Object({}, { additionalProperties: true });
const Data = <T extends ReturnType<typeof Type.Object> | ReturnType<typeof Type.Union>>(t: T) =>
  Type.Object({ data: t });

type SlugReq = FastifyRequest<{ Params: { slug: string } }>;

/** Presets belong to an API key's workspace; management keys get 403 (as on inference). */
function apiCaller(req: FastifyRequest) {
  if (req.caller.isManagement) throw forbidden('Management keys have no presets; use an API key');
  return req.caller;
}

/**
 * Presets (OpenRouter's `presets` operations): an API key's workspace's named request
 * configurations. Saved from an inference body of any format; used by naming `@preset/<slug>`
 * as the model (presets/service.ts `resolve`).
 */
export async function presetsRoutes(app: Router, { presets }: Pick<Services, 'presets'>) {
  app.get(
    '/presets',
    {
      config: { auth: 'api' },
      schema: {
        tags,
        summary: "The workspace's presets, most recently updated first",
        querystring: PageQuery,
        response: { 200: PresetList, ...errors(400, 401, 403, 500) },
      },
    },
    async (req) => presets.list(apiCaller(req), toPage(req.query)),
  );

  app.get(
    '/presets/:slug',
    {
      config: { auth: 'api' },
      schema: {
        tags,
        summary: 'A preset, with its designated (newest) version',
        params: SlugParams,
        response: { 200: Data(PresetWithVersion), ...errors(400, 401, 403, 404, 500) },
      },
    },
    async (req) => presets.get(apiCaller(req), req.params.slug),
  );

  app.get(
    '/presets/:slug/versions',
    {
      config: { auth: 'api' },
      schema: {
        tags,
        summary: "A preset's versions, oldest first (the newest 100 are kept)",
        params: SlugParams,
        querystring: PageQuery,
        response: { 200: PresetVersionList, ...errors(400, 401, 403, 404, 500) },
      },
    },
    async (req) => presets.versions(apiCaller(req), req.params.slug, toPage(req.query)),
  );

  app.get(
    '/presets/:slug/versions/:version',
    {
      config: { auth: 'api' },
      schema: {
        tags,
        summary: 'One version of a preset',
        params: VersionParams,
        response: { 200: Data(PresetVersion), ...errors(400, 401, 403, 404, 500) },
      },
    },
    async (req) => presets.version(apiCaller(req), req.params.slug, req.params.version),
  );

  // One save route per inference format: the same body as the inference call, of which the preset
  // keeps its configuration fields and system prompt (messages, input and stream are ignored).
  const saving: [string, Skin, string][] = [
    ['chat/completions', 'chat', 'a chat completions'],
    ['messages', 'messages', 'an Anthropic Messages'],
    ['responses', 'responses', 'a Responses'],
  ];
  for (const [path, skin, what] of saving)
    app.post(
      `/presets/:slug/${path}`,
      {
        config: { auth: 'api' },
        schema: {
          tags,
          summary: `Save a preset (a new version; created if new) from ${what} request body`,
          params: SlugParams,
          body: AnyBody,
          response: { 200: Data(PresetWithVersion), ...errors(400, 401, 403, 409, 500) },
        },
      },
      async (req: SlugReq) =>
        presets.save(apiCaller(req), req.params.slug, skin, req.body as Record<string, unknown>),
    );

  app.delete(
    '/presets/:slug',
    {
      config: { auth: 'api' },
      schema: {
        tags,
        summary: 'Delete a preset and its versions (calls naming it then get a 404)',
        params: SlugParams,
        response: { 200: Deleted, ...errors(401, 403, 404, 500) },
      },
    },
    async (req) => presets.delete(apiCaller(req), req.params.slug),
  );
}
