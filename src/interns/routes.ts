import type { TSchema } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { Value } from '@sinclair/typebox/value';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import { ApiError } from '../lib/errors.js';
import { sendError } from '../server/errors.js';
import type { Router } from '../server/router.js';
import type { Services } from '../services.js';
import { installInternsGuards } from './guards.js';
import { InternErrorCode } from './model.js';
import {
  CreateInternBody,
  DeleteInternBody,
  Deleting,
  Intern,
  InternList,
  InternParams,
  ListInternsQuery,
  lifecycleErrors,
  NoBody,
  Provisioning,
  Suspended,
  UpdateInternBody,
} from './schemas.js';

/** Create, update, delete, provision and suspend bodies are capped at 1 MiB (413 beyond). */
const BODY_LIMIT = 1_048_576;
const tags = ['Interns'];

interface SchemaIssue {
  message: string;
  instancePath: string;
}

/** The first issue of a value, descending into the variant a union value was most likely meant as. */
function firstIssue(check: ReturnType<typeof TypeCompiler.Compile>, value: unknown): SchemaIssue | null {
  const first = check.Errors(value).First();
  if (!first) return null;
  let error = first;
  // A union (`string | null`) reports only "Expected union value": show the non-null variant's issue.
  while (error.errors.length > 0) {
    const inner = error.errors
      .map((it) => it.First())
      .find((e) => e !== undefined && !/Expected null/.test(e.message));
    if (!inner) break;
    error = inner;
  }
  return { message: error.message, instancePath: error.path };
}

/**
 * Request validation with TypeBox's compiler: unknown body properties are refused (Fastify's Ajv
 * default would strip them), body values are never coerced, query strings are converted first.
 */
function typeboxValidator({ schema, httpPart }: { schema: unknown; httpPart?: string }) {
  const check = TypeCompiler.Compile(schema as TSchema);
  return (data: unknown) => {
    const value = httpPart === 'body' ? data : Value.Convert(schema as TSchema, data);
    if (check.Check(value)) return { value };
    const issue = firstIssue(check, value) ?? { message: 'is invalid', instancePath: '' };
    return { error: [issue] as unknown as Error };
  };
}

/** What the interns lifecycle API uses: the interns service, the programme, and the interns settings. */
export interface InternsRouteDeps extends Pick<Services, 'interns' | 'programme'> {
  config: Pick<Config, 'interns'>;
}

/**
 * The interns lifecycle API (digest §6.2): every route authenticates an API key, passes the
 * interns guards (regional host 403, programme 404, route deadline 408) and answers errors as
 * InternLifecycleError — named string codes, integer codes for transport errors (401, 408).
 */
export async function internsRoutes(app: Router, deps: InternsRouteDeps): Promise<void> {
  const { interns, config } = deps;
  await app.register(async (api: Router) => {
    // Bodies are JSON only (415 otherwise); an empty body is no body (DELETE defaults, provision).
    api.removeAllContentTypeParsers();
    const json = api.getDefaultJsonParser('error', 'error');
    api.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
      const text = typeof body === 'string' ? body : body.toString('utf8');
      if (text.trim() === '') return done(null, undefined);
      json(request, text, done);
    });
    api.setValidatorCompiler(typeboxValidator as Parameters<typeof api.setValidatorCompiler>[0]);
    api.setSchemaErrorFormatter((errors, dataVar) => {
      const e = errors[0] as unknown as SchemaIssue | undefined;
      const where = `${dataVar}${e?.instancePath ?? ''}`;
      return new Error(`${where}: ${e?.message ?? 'is invalid'}`);
    });

    // Management ("provisioning") keys do not act on interns: 401 like a missing key.
    api.addHook('onRequest', async (request, reply) => {
      if (request.caller?.isManagement) {
        return sendError(reply, 401, 'Management keys cannot use the interns API; use an API key');
      }
    });
    installInternsGuards(api, { config: config.interns, programme: deps.programme }, { codes: 'named' });

    api.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
      if (err instanceof ApiError) {
        const m = err.metadata;
        const metadata =
          m && typeof m.reason === 'string' && typeof m.retryable === 'boolean'
            ? { reason: m.reason, retryable: m.retryable }
            : undefined;
        return sendError(reply, err.status, err.message, metadata, err.code);
      }
      if (err.validation) {
        return sendError(
          reply,
          400,
          `Invalid request: ${err.message}`,
          undefined,
          InternErrorCode.invalidBody,
        );
      }
      const status = err.statusCode ?? 500;
      if (status === 413) {
        return sendError(
          reply,
          413,
          `The body is larger than ${BODY_LIMIT} bytes`,
          undefined,
          InternErrorCode.payloadTooLarge,
        );
      }
      if (status === 415) {
        return sendError(
          reply,
          415,
          'Bodies must be sent as Content-Type: application/json',
          undefined,
          InternErrorCode.unsupportedMediaType,
        );
      }
      if (status === 400) {
        return sendError(reply, 400, err.message || 'Invalid body', undefined, InternErrorCode.invalidBody);
      }
      if (status > 400 && status < 500) return sendError(reply, status, err.message || 'Request refused');
      request.log.error({ err }, 'interns request failed');
      return sendError(
        reply,
        500,
        'The request could not be completed',
        undefined,
        InternErrorCode.internalError,
      );
    });

    /** Lifecycle writes switched off (GATEHOUSE_INTERNS_WRITES=off) look like a missing route. */
    const writes = async (_request: FastifyRequest, reply: FastifyReply) => {
      if (!config.interns.writes)
        return sendError(reply, 404, 'Not found', undefined, InternErrorCode.notFound);
    };
    /** A missing body is an empty object (provision, suspend, delete). */
    const emptyBody = async (request: FastifyRequest) => {
      if (request.body === undefined) request.body = {};
    };
    /** After the route deadline has answered 408, a late outcome is dropped. */
    const settled = (reply: FastifyReply, err: unknown) => {
      if (reply.sent) return reply;
      throw err;
    };
    const auth = { auth: 'api' as const };

    api.post(
      '/interns',
      {
        config: auth,
        bodyLimit: BODY_LIMIT,
        onRequest: writes,
        schema: {
          tags,
          summary: 'Create an intern (idempotent; with provision: true, provisioning starts in the call)',
          body: CreateInternBody,
          response: {
            200: Intern,
            201: Intern,
            ...lifecycleErrors(400, 401, 403, 404, 408, 409, 413, 415, 500, 502),
          },
        },
      },
      async (request, reply) => {
        const header = request.headers['idempotency-key'];
        const key = Array.isArray(header) ? header.join(', ') : header;
        try {
          const result = await interns.create(request.caller, request.body, key, request.deadline);
          return reply.code(result.status).send(interns.view(result.row));
        } catch (err) {
          return settled(reply, err);
        }
      },
    );

    api.get(
      '/interns',
      {
        config: auth,
        schema: {
          tags,
          summary: "List the workspace's interns, newest first",
          querystring: ListInternsQuery,
          response: { 200: InternList, ...lifecycleErrors(400, 401, 403, 404, 408, 500) },
        },
      },
      async (request) => interns.list(request.caller, request.query),
    );

    api.get(
      '/interns/:internId',
      {
        config: auth,
        schema: {
          tags,
          summary: 'Get an intern',
          params: InternParams,
          response: { 200: Intern, ...lifecycleErrors(401, 403, 404, 408, 500) },
        },
      },
      async (request) => interns.view(await interns.visible(request.caller, request.params.internId)),
    );

    api.patch(
      '/interns/:internId',
      {
        config: auth,
        bodyLimit: BODY_LIMIT,
        onRequest: writes,
        schema: {
          tags,
          summary: 'Update an intern (a model change takes effect on the next provision)',
          params: InternParams,
          body: UpdateInternBody,
          response: { 200: Intern, ...lifecycleErrors(400, 401, 403, 404, 408, 409, 413, 415, 500) },
        },
      },
      async (request, reply) => {
        try {
          return interns.view(await interns.update(request.caller, request.params.internId, request.body));
        } catch (err) {
          return settled(reply, err);
        }
      },
    );

    api.delete(
      '/interns/:internId',
      {
        config: auth,
        bodyLimit: BODY_LIMIT,
        onRequest: writes,
        preValidation: emptyBody,
        schema: {
          tags,
          summary: 'Delete an intern (202; the destroy runs in the background)',
          params: InternParams,
          body: DeleteInternBody,
          response: { 202: Deleting, ...lifecycleErrors(400, 401, 403, 404, 408, 409, 413, 415, 500, 502) },
        },
      },
      async (request, reply) => {
        try {
          await interns.delete(
            request.caller,
            request.params.internId,
            request.body.acknowledge_workspace_loss === true,
          );
          return reply.code(202).send({ deleting: true as const });
        } catch (err) {
          return settled(reply, err);
        }
      },
    );

    api.post(
      '/interns/:internId/provision',
      {
        config: auth,
        bodyLimit: BODY_LIMIT,
        onRequest: writes,
        preValidation: emptyBody,
        schema: {
          tags,
          summary: 'Provision an intern (first boot or resume after suspend or failure)',
          params: InternParams,
          body: NoBody,
          response: {
            202: Provisioning,
            ...lifecycleErrors(400, 401, 403, 404, 408, 409, 413, 415, 500, 502),
          },
        },
      },
      async (request, reply) => {
        try {
          await interns.provision(request.caller, request.params.internId);
          return reply.code(202).send({ provisioning: true as const });
        } catch (err) {
          return settled(reply, err);
        }
      },
    );

    api.post(
      '/interns/:internId/suspend',
      {
        config: auth,
        bodyLimit: BODY_LIMIT,
        onRequest: writes,
        preValidation: emptyBody,
        schema: {
          tags,
          summary: 'Suspend an intern: stops its runtime, keeps its disk and configuration',
          params: InternParams,
          body: NoBody,
          response: { 200: Suspended, ...lifecycleErrors(400, 401, 403, 404, 408, 409, 413, 415, 500, 502) },
        },
      },
      async (request, reply) => {
        try {
          await interns.suspend(request.caller, request.params.internId);
          return reply.code(200).send({ suspended: true as const });
        } catch (err) {
          return settled(reply, err);
        }
      },
    );
  });
}
