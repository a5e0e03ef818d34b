import { type TSchema, Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import { WIRES } from '../inference/wires/index.js';
import { ApiError, notFound } from '../lib/errors.js';
import type { Catalog, ModelEntry } from '../routing/catalog.js';
import { type ErrorRenderer, envelope } from '../server/errors.js';
import type { Router } from '../server/router.js';
import { errors, Nullable } from '../server/schemas.js';
import type { Services } from '../services.js';
import {
  anthropicListQuery,
  anthropicModelPage,
  anthropicModelView,
  speaksAnthropic,
} from './anthropic-models.js';
import { DiscoveryLoop, refreshCatalog } from './refresh.js';
import { type ModelQuery, modelsForPolicy, page, queryModels } from './service.js';
import { endpointView, modelEndpointsView, modelView, providerView } from './views.js';

const tags = ['Models'];
const Str = Type.String();
const NullStr = Nullable(Type.String());
const NullInt = Nullable(Type.Integer());

const Pricing = Type.Object({
  prompt: Str,
  completion: Str,
  request: Type.Optional(Str),
  image: Type.Optional(Str),
  input_cache_read: Type.Optional(Str),
  input_cache_write: Type.Optional(Str),
});
const Architecture = Type.Object({
  modality: NullStr,
  input_modalities: Type.Array(Str),
  output_modalities: Type.Array(Str),
  tokenizer: NullStr,
  instruct_type: NullStr,
});
const ModelProvider = Type.Object({
  slug: Str,
  upstream_model: Str,
  development: Type.Boolean(),
  zdr: Type.Boolean(),
  trains_on_data: Type.Boolean(),
  region: Str,
  context_length: Type.Integer(),
  pricing: Pricing,
});
const Model = Type.Object(
  {
    id: Str,
    canonical_slug: Str,
    name: Str,
    created: Type.Integer(),
    description: Str,
    context_length: NullInt,
    architecture: Architecture,
    pricing: Pricing,
    top_provider: Type.Object({
      context_length: NullInt,
      max_completion_tokens: NullInt,
      is_moderated: Type.Boolean(),
    }),
    per_request_limits: Type.Null(),
    supported_parameters: Type.Array(Str),
    default_parameters: Type.Null(),
    supported_voices: Type.Null(),
    links: Type.Object({ details: Str }),
    pricing_known: Type.Boolean({ description: 'False when no price is known: calls cost 0' }),
    development: Type.Boolean({ description: 'Served only by the built-in development provider' }),
    providers: Type.Array(ModelProvider),
    // OpenAI's model object (the openai client's models.list and models.retrieve).
    object: Type.Literal('model'),
    owned_by: Type.String({ description: "The id's author (the part before '/')" }),
  },
  { $id: 'Model', title: 'Model' },
);
const ModelList = Type.Object({
  data: Type.Array(Type.Ref('Model')),
  links: Type.Object({ next: NullStr }),
  total_count: Type.Integer(),
});
const PublicEndpoint = Type.Object(
  {
    name: Str,
    model_id: Str,
    model_name: Str,
    context_length: Type.Integer(),
    pricing: Pricing,
    provider_name: Str,
    tag: Str,
    quantization: NullStr,
    max_completion_tokens: NullInt,
    max_prompt_tokens: NullInt,
    supported_parameters: Type.Array(Str),
    status: Type.Integer(),
    uptime_last_30m: Type.Null(),
    uptime_last_5m: Type.Null(),
    uptime_last_1d: Type.Null(),
    latency_last_30m: Type.Null(),
    throughput_last_30m: Type.Null(),
    supports_implicit_caching: Type.Boolean(),
    supports_tool_choice: Type.Object({
      auto: Type.Boolean(),
      function: Type.Boolean(),
      none: Type.Boolean(),
      required: Type.Boolean(),
    }),
    supports_voice_cloning: Type.Boolean(),
  },
  { $id: 'PublicEndpoint', title: 'PublicEndpoint' },
);
const Provider = Type.Object({
  name: Str,
  slug: Str,
  privacy_policy_url: NullStr,
  terms_of_service_url: NullStr,
  status_page_url: NullStr,
  kind: Str,
  zdr: Type.Boolean(),
  trains_on_data: Type.Boolean(),
  region: Str,
  development: Type.Boolean(),
});

const Paging = {
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 500 })),
};
const Filters = {
  output_modalities: Type.Optional(
    Type.String({ description: 'text, embeddings, rerank or all (comma-separated)' }),
  ),
  input_modalities: Type.Optional(Type.String()),
  supported_parameters: Type.Optional(
    Type.String({ description: 'All must be supported (comma-separated)' }),
  ),
  q: Type.Optional(Type.String({ maxLength: 200 })),
  context: Type.Optional(Type.Integer({ minimum: 0 })),
  providers: Type.Optional(Type.String({ description: 'Provider slugs (comma-separated)' })),
  model_authors: Type.Optional(Type.String({ description: 'Id prefixes (comma-separated)' })),
  zdr: Type.Optional(Type.String()),
  sort: Type.Optional(Type.String()),
};
// Filters of the official client that Gatehouse has no data for are accepted and ignored.
const ListQuery = Type.Object({ ...Paging, ...Filters }, { additionalProperties: true });
type ListQuery = ModelQuery & { offset?: number; limit?: number };

const ok = (schema: TSchema, ...codes: number[]) => ({ 200: schema, ...errors(...codes) });

/** Errors of the routes an Anthropic client calls too: in Anthropic's format when it is one. */
const eitherFormat: ErrorRenderer = (parts, req) =>
  speaksAnthropic(req.headers) ? WIRES.messages.renderError(parts, req) : envelope(parts, req);

/** Sends an Anthropic-shaped answer as it is, past the route's (OpenRouter-shaped) response schema. */
const anthropicAnswer = <T>(reply: FastifyReply, body: T): T => {
  reply.type('application/json; charset=utf-8').serializer(JSON.stringify);
  return body;
};
/** The error answers of those routes: the standard envelope, or Anthropic's error object. */
const eitherErrors = (...codes: number[]) =>
  Object.fromEntries(codes.map((c) => [c, Type.Union([Type.Ref('ErrorBody'), WIRES.messages.errorSchema])]));
const ANTHROPIC_NOTE =
  "With an `anthropic-version` header (any Anthropic client) the answer is Anthropic's instead";

/** A listed model by `author/slug` (aliases and `:variant` suffixes resolve; unlisted ids do not). */
function listed(catalog: Catalog, requested: string): ModelEntry {
  const id = catalog.lookup.get(requested) ?? catalog.lookup.get(requested.replace(/:[\w-]+$/, ''));
  const model = id ? catalog.models.get(id) : undefined;
  if (!model) throw notFound(`Model ${requested}`);
  return model;
}

/** What the catalog routes use: the catalog, the keys' guardrail policies, and discovery's settings. */
export interface CatalogRouteDeps extends Pick<Services, 'catalog' | 'policy'> {
  config: Pick<Config, 'env' | 'modelDiscoveryIntervalMs'>;
  /** Tells the other workers and nodes to reload their catalogs (the cluster bus). */
  cluster: { publish(event: { kind: 'catalog' }): void };
}

/**
 * The catalog API (the official client's `models`, `endpoints`, `providers` and
 * `embeddings.listModels` operations), the operator's reload, and the discovery of the models of
 * OpenAI-compatible servers while the gateway runs.
 */
export async function catalogRoutes(app: Router, { catalog, policy, config, cluster }: CatalogRouteDeps) {
  const models = (q: ListQuery, path: string, outputs: string[] = []) => {
    const selected = queryModels(catalog, q, outputs);
    const p = page(selected, path, q.offset, q.limit);
    return { ...p, data: p.data.map((m) => modelView(catalog, m)) };
  };
  app.addSchema(Model);
  app.addSchema(PublicEndpoint);

  app.get(
    '/models',
    {
      // A key is read when one is presented: an Anthropic client is listed what its key may use.
      config: { auth: 'optional', renderError: eitherFormat },
      schema: {
        tags,
        summary: 'The model catalog, with pricing and providers',
        description: `${ANTHROPIC_NOTE}: its chat models as \`{data, has_more, first_id, last_id}\`, paged by \`limit\` (20 by default), \`after_id\` and \`before_id\`; with the client's API key, only those its guardrails allow.`,
        querystring: ListQuery,
        response: { 200: ModelList, ...eitherErrors(400) },
      },
    },
    async (req: FastifyRequest, reply) => {
      const q = req.query as ListQuery;
      if (!speaksAnthropic(req.headers)) return models(q, '/api/v1/models');
      // As Anthropic's API lists the models the key may use: a picker (Claude Code's gateway model
      // discovery) then offers none the key's guardrails refuse.
      const visible = req.caller
        ? modelsForPolicy(catalog, queryModels(catalog, q), await policy.forKey(req.caller))
        : queryModels(catalog, q);
      return anthropicAnswer(reply, anthropicModelPage(visible, anthropicListQuery(req.url)));
    },
  );

  app.get(
    '/models/count',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        summary: 'How many models the catalog lists (output_modalities filters)',
        querystring: Type.Object(Filters, { additionalProperties: true }),
        response: ok(Type.Object({ data: Type.Object({ count: Type.Integer() }) }), 400),
      },
    },
    async (req) => ({ data: { count: queryModels(catalog, req.query as ModelQuery).length } }),
  );

  app.get(
    '/models/user',
    {
      config: { auth: 'key' },
      schema: {
        tags,
        summary:
          'The models the calling key may use under its guardrails (text models unless output_modalities)',
        querystring: ListQuery,
        response: ok(ModelList, 400, 401),
      },
    },
    async (req) => {
      const q = req.query as ListQuery;
      const keyPolicy = await policy.forKey(req.caller);
      const allowed = modelsForPolicy(catalog, queryModels(catalog, q, ['text']), keyPolicy);
      const p = page(allowed, '/api/v1/models/user', q.offset, q.limit);
      return { ...p, data: p.data.map((m) => modelView(catalog, m)) };
    },
  );

  app.get(
    '/embeddings/models',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        summary: 'The embeddings models of the catalog',
        querystring: Type.Object(Paging),
        response: ok(ModelList, 400),
      },
    },
    async (req) =>
      models({ ...req.query, output_modalities: 'embeddings' }, '/api/v1/embeddings/models', ['embeddings']),
  );

  const AuthorSlug = Type.Object({
    author: Type.String({ minLength: 1, maxLength: 200 }),
    slug: Type.String({ minLength: 1, maxLength: 200 }),
  });

  app.get(
    '/model/:author/:slug',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        summary: 'One model by its slug (aliases and :variant suffixes resolve)',
        params: AuthorSlug,
        response: ok(Type.Object({ data: Type.Ref('Model') }), 404),
      },
    },
    async (req) => ({ data: modelView(catalog, listed(catalog, `${req.params.author}/${req.params.slug}`)) }),
  );

  // OpenAI's retrieve: the id in one path segment (the openai client sends `author%2Fslug`).
  app.get(
    '/models/:id',
    {
      // A key is read when one is presented: an Anthropic client retrieves only what its key may use.
      config: { auth: 'optional', renderError: eitherFormat },
      schema: {
        tags,
        summary:
          'One model by its id, as OpenAI answers models.retrieve (aliases and :variant suffixes resolve)',
        description: `${ANTHROPIC_NOTE} (\`ModelInfo\`, as its \`models.retrieve\` reads it); with the client's API key, a model its guardrails refuse is not found, as in the list.`,
        params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 400 }) }),
        response: { 200: Type.Ref('Model'), ...eitherErrors(404) },
      },
    },
    async (req, reply) => {
      const model = listed(catalog, req.params.id);
      if (!speaksAnthropic(req.headers)) return modelView(catalog, model);
      // As the list: a model the key's guardrails refuse is not one it can find.
      if (req.caller && modelsForPolicy(catalog, [model], await policy.forKey(req.caller)).length === 0)
        throw notFound(`Model ${req.params.id}`);
      return anthropicAnswer(reply, anthropicModelView(model));
    },
  );

  app.get(
    '/models/:author/:slug/endpoints',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        summary: 'The provider endpoints that serve a model',
        params: AuthorSlug,
        response: ok(
          Type.Object({
            data: Type.Object({
              id: Str,
              name: Str,
              created: Type.Integer(),
              description: Str,
              architecture: Architecture,
              endpoints: Type.Array(Type.Ref('PublicEndpoint')),
            }),
          }),
          404,
        ),
      },
    },
    async (req) => ({ data: modelEndpointsView(listed(catalog, `${req.params.author}/${req.params.slug}`)) }),
  );

  app.get(
    '/endpoints/zdr',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        summary: 'The endpoints of zero-data-retention providers',
        response: ok(Type.Object({ data: Type.Array(Type.Ref('PublicEndpoint')) })),
      },
    },
    async () => ({
      data: [...catalog.models.values()].flatMap((m) =>
        m.endpoints.filter((e) => catalog.providers.get(e.provider)?.zdr).map((e) => endpointView(m, e)),
      ),
    }),
  );

  app.get(
    '/providers',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        summary: 'The providers this gateway is configured with',
        response: ok(Type.Object({ data: Type.Array(Provider) })),
      },
    },
    async () => ({ data: [...catalog.providers.values()].map(providerView) }),
  );

  const refreshDeps = { catalog, env: config.env, log: app.log };
  app.post(
    '/admin/catalog/reload',
    {
      config: { auth: 'admin' },
      schema: {
        tags: ['Operator'],
        summary: 'Reload the model catalog (model data, GATEHOUSE_CONFIG, OpenAI-compatible servers)',
        response: ok(
          Type.Object({
            data: Type.Object({
              models: Type.Integer(),
              model_data_changed: Type.Boolean(),
              servers: Type.Array(Type.Object({ provider: Str, models: NullInt, error: Type.Optional(Str) })),
            }),
          }),
          401,
          404,
          422,
        ),
      },
    },
    async () => {
      let r: Awaited<ReturnType<typeof refreshCatalog>>;
      try {
        r = await refreshCatalog(refreshDeps);
      } catch (err) {
        // The configuration on disk does not load: the catalog in use is kept.
        throw new ApiError(
          422,
          `Catalog not reloaded (the previous one stays in use): ${(err as Error).message}`,
        );
      }
      // The other workers of `serve --workers` and the other nodes on the bus reload theirs too.
      cluster.publish({ kind: 'catalog' });
      return { data: { models: r.models, model_data_changed: r.modelDataChanged, servers: r.servers } };
    },
  );

  // OpenAI-compatible servers' models and Anthropic providers' model limits, asked in the
  // background from start (a provider that is down is retried; the gateway serves meanwhile).
  const discovery = new DiscoveryLoop(refreshDeps, config.modelDiscoveryIntervalMs);
  app.addHook('onReady', async () => discovery.start());
  app.addHook('onClose', async () => discovery.stop());
}
