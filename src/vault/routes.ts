import { type TSchema, Type } from '@sinclair/typebox';
import { TypeCompiler, type ValueError } from '@sinclair/typebox/compiler';
import { ValueErrorType } from '@sinclair/typebox/errors';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import { installInternsGuards } from '../interns/guards.js';
import { sendError } from '../server/errors.js';
import type { Router } from '../server/router.js';
import { errors } from '../server/schemas.js';
import type { Services } from '../services.js';
import { MAX_HOSTS } from './hosts.js';
import { secretNameProblem } from './names.js';
import {
  InternParams,
  NameParams,
  VaultListQuery,
  VaultSecret,
  VaultSecretCopyRequest,
  VaultSecretWriteRequest,
} from './schemas.js';
import { COPY_MAX, VALUE_MAX, VALUE_MIN, VALUE_TOO_SHORT, type VaultScope } from './service.js';
import { MAX_PORTS } from './transport.js';

const tags = ['Vault'];
const config = { auth: 'api' as const };
/** Write bodies are capped at 1 MiB (413 beyond); a maximal valid one is well under half of it. */
const BODY_LIMIT = 1_048_576;

/** A 400 message for the first issue of a request part; never quotes a body value. */
function issueMessage(part: string, e: ValueError): string {
  const field = e.path.replace(/^\//, '').replaceAll('/', '.');
  if (part === 'params') {
    if (field === 'name') return `name ${secretNameProblem(String(e.value)) ?? 'is invalid'}`;
    if (field === 'internId') return 'internId must be a UUID';
  }
  if (part === 'querystring') {
    if (field === 'limit') return 'limit must be an integer from 1 to 100';
    if (field === 'offset') return 'offset must be an integer from 0 to 10000';
  }
  if (field === '') return `The ${part} must be a JSON object`;
  if (e.type === ValueErrorType.ObjectAdditionalProperties) return `Unknown field ${field} in the ${part}`;
  if (e.type === ValueErrorType.ObjectRequiredProperty) return `${field} is required`;
  if (part === 'body') {
    const item = /^(hosts|names|ports)\.(\d+)$/.exec(field);
    if (field === 'value') {
      if (typeof e.value === 'string' && e.value.length < VALUE_MIN) return VALUE_TOO_SHORT;
      return `value must be a string of ${VALUE_MIN} to ${VALUE_MAX} characters`;
    }
    if (field === 'hosts') return `hosts must be an array of 1 to ${MAX_HOSTS} hostnames`;
    if (field === 'names') {
      if (e.type === ValueErrorType.ArrayUniqueItems && Array.isArray(e.value)) {
        const names = e.value as unknown[];
        const repeated = names.find((n, i) => names.indexOf(n) !== i);
        return `names lists ${String(repeated)} more than once`;
      }
      return `names must be an array of 1 to ${COPY_MAX} secret names`;
    }
    if (item?.[1] === 'names' && typeof e.value === 'string') {
      return `names[${item[2]}] ${secretNameProblem(e.value) ?? 'is invalid'}`;
    }
    if (field === 'allow_http') return 'allow_http must be true or false';
    if (field === 'ports') return `ports must be an array of at most ${MAX_PORTS} port numbers`;
    if (item?.[1] === 'ports') return `ports[${item[2]}] must be an integer from 1 to 65535`;
    if (item) return `${item[1]}[${item[2]}] must be a string`;
  }
  return `${field}: ${e.message}`;
}

/** Query values as integers where the schema wants one, only when they are plain decimal digits. */
function integersOf(schema: TSchema, data: unknown): unknown {
  if (data === null || typeof data !== 'object') return data;
  const props = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  const out: Record<string, unknown> = { ...(data as Record<string, unknown>) };
  for (const [key, prop] of Object.entries(props)) {
    const v = out[key];
    if (prop.type === 'integer' && typeof v === 'string' && /^-?\d{1,15}$/.test(v)) out[key] = Number(v);
  }
  return out;
}

/**
 * Request validation with TypeBox's compiler: unknown body properties are refused (Fastify's Ajv
 * default would strip them), body values are never coerced, and query integers must be written as
 * plain digits (TypeBox's own conversion would read `1.5` or `true` as 1).
 */
function validatorFor({ schema, httpPart }: { schema: unknown; httpPart?: string }) {
  const check = TypeCompiler.Compile(schema as TSchema);
  const part = httpPart ?? 'request';
  return (data: unknown) => {
    const value = part === 'querystring' ? integersOf(schema as TSchema, data) : data;
    if (check.Check(value)) return { value };
    const first = check.Errors(value).First();
    // A plain Error with a status: Fastify stamps `code` on it, which an ApiError would then send.
    const error = new Error(first ? issueMessage(part, first) : `The ${part} is invalid`);
    return { error: Object.assign(error, { statusCode: 400 }) };
  };
}

/**
 * What a handler answers with the outcome of `work`; once the route deadline has answered 408, a
 * late outcome (or error) is dropped by returning the reply that was already sent.
 */
async function settled<T, R>(reply: FastifyReply, work: Promise<T>, answer: (value: T) => R) {
  try {
    const value = await work;
    return reply.sent ? reply : answer(value);
  } catch (err) {
    if (reply.sent) return reply;
    throw err;
  }
}

/** What the vault API uses: the vault, and the programme and interns settings of the interns guards. */
export interface VaultRouteDeps extends Pick<Services, 'vault' | 'programme'> {
  config: Pick<Config, 'interns'>;
}

/**
 * The vault API (digest §7): a workspace's secrets and each intern's private vault. API keys only;
 * the interns guards apply (regional host 403, programme 404, route deadline 408); writes answer
 * 503 while GATEHOUSE_VAULT_WRITES=off. Responses carry metadata, never values.
 */
export async function vaultRoutes(app: Router, deps: VaultRouteDeps): Promise<void> {
  const { vault } = deps;
  await app.register(async (api: Router) => {
    api.setValidatorCompiler(validatorFor as Parameters<typeof api.setValidatorCompiler>[0]);
    api.addSchema(VaultSecret);
    const SecretRef = Type.Ref(VaultSecret);
    const One = Type.Object({ data: SecretRef });
    const Page = Type.Object({ data: Type.Array(SecretRef), has_more: Type.Boolean() });

    // Management (provisioning) keys are 401 on the interns API, vault included (seed, Authentication).
    api.addHook('onRequest', async (request, reply) => {
      if (request.caller?.isManagement) {
        return sendError(reply, 401, 'Management keys cannot use the vault API; use an API key');
      }
    });
    installInternsGuards(
      api,
      { config: deps.config.interns, programme: deps.programme },
      { codes: 'status' },
    );
    /** Writes switched off answer 503, and writes past the member's rate 429, before their body is looked at. */
    const writes = async (req: FastifyRequest) => {
      vault.assertWritable();
      await vault.consumeWrite(req.caller);
    };
    const page = (q: VaultListQuery) => ({ limit: q.limit ?? 100, offset: q.offset ?? 0 });
    const workspace = { kind: 'workspace' } as const;
    const intern = (internId: string) => ({ kind: 'intern', internId }) as const;

    /** PUT and DELETE of one secret under `base` (names up to 255 characters: see maxParamLength in app.ts). */
    function nameRoutes(base: string, scopeOf: (p: Record<string, string>) => VaultScope, what: string) {
      const scoped = base.includes(':internId');
      const params = Type.Object({ ...(scoped ? InternParams.properties : {}), ...NameParams.properties });
      const nameOf = (p: Record<string, string>) => p.name ?? '';
      api.put(
        `${base}/:name`,
        {
          config,
          bodyLimit: BODY_LIMIT,
          onRequest: writes,
          schema: {
            tags,
            summary: `Store ${what}, bound to the hosts it may be sent to (create or replace)`,
            params,
            body: VaultSecretWriteRequest,
            response: {
              200: One,
              ...errors(400, 401, 403, 404, 408, ...(scoped ? [409] : []), 413, 429, 500, 503),
            },
          },
        },
        async (req, reply) => {
          const p = req.params as Record<string, string>;
          return settled(reply, vault.put(req.caller, scopeOf(p), nameOf(p), req.body), (data) => ({
            data,
          }));
        },
      );
      api.delete(
        `${base}/:name`,
        {
          config,
          onRequest: writes,
          schema: {
            tags,
            summary: `Delete ${what}`,
            params,
            response: { 204: Type.Null(), ...errors(400, 401, 403, 404, 408, 429, 500, 503) },
          },
        },
        async (req, reply) => {
          const p = req.params as Record<string, string>;
          return settled(reply, vault.remove(req.caller, scopeOf(p), nameOf(p)), () =>
            reply.code(204).send(null),
          );
        },
      );
    }

    api.get(
      '/vault/secrets',
      {
        config,
        schema: {
          tags,
          summary: "List the workspace's secrets, by name (metadata only)",
          querystring: VaultListQuery,
          response: { 200: Page, ...errors(400, 401, 403, 404, 408, 500) },
        },
      },
      async (req, reply) => settled(reply, vault.list(req.caller, workspace, page(req.query)), (p) => p),
    );

    nameRoutes('/vault/secrets', () => workspace, 'a workspace secret');

    api.get(
      '/vault/interns/:internId/secrets',
      {
        config,
        schema: {
          tags,
          summary: "List an intern's own secrets, by name (metadata only)",
          params: InternParams,
          querystring: VaultListQuery,
          response: { 200: Page, ...errors(400, 401, 403, 404, 408, 500) },
        },
      },
      async (req, reply) =>
        settled(reply, vault.list(req.caller, intern(req.params.internId), page(req.query)), (p) => p),
    );

    nameRoutes(
      '/vault/interns/:internId/secrets',
      (p) => intern(p.internId ?? ''),
      "a secret of an intern's own vault",
    );

    api.post(
      '/vault/interns/:internId/secrets/copy',
      {
        config,
        bodyLimit: BODY_LIMIT,
        onRequest: writes,
        schema: {
          tags,
          summary: "Copy workspace secrets (value and hosts) into an intern's own vault, all or nothing",
          params: InternParams,
          body: VaultSecretCopyRequest,
          response: {
            200: Type.Object({ data: Type.Array(SecretRef) }),
            ...errors(400, 401, 403, 404, 408, 409, 413, 429, 500, 503),
          },
        },
      },
      async (req, reply) =>
        settled(reply, vault.copyToIntern(req.caller, req.params.internId, req.body.names), (data) => ({
          data,
        })),
    );
  });
}
