/**
 * The authorization matrix (issue 8): every route of the gateway and of the media service (in its
 * `keys` auth mode), enumerated from the apps themselves through an `onRoute` hook, called with
 * every kind of credential — none, malformed, unknown, disabled, expired, another organization's,
 * another workspace's, the wrong kind of key, the operator token where a key belongs and keys where
 * the operator token belongs — and each answer compared with the one the table states.
 *
 * Expected answers (seeds first, src/accounts/http-auth.ts where they are silent): no, malformed, unknown,
 * disabled or expired credentials → 401; an API key on a management route → 403 (management seed,
 * "a non-management key on /credits yields 403"); a management key on inference and batches → 403,
 * on interns and vault → 401 (interns seed: "provisioning keys yield 401"), on media → 403; admin
 * routes without the right operator token → 401; another tenant's key on an object it does not own
 * → 404, never 403 (existence is not revealed; as test/isolation.test.ts asserts).
 *
 * Management keys act for their whole organization (the workspace is chosen per request), so
 * "another workspace" is an API-key notion: interns, vaults and batches belong to the key's workspace.
 */

import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RouteOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { AUDITED, NOT_AUDITED } from '../../src/audit/actions.js';
import { loadMediaConfig } from '../../src/media/config.js';
import { type MediaHandle, needsCredential, startMedia } from '../../src/media/server.js';
import type { GeneratedOutput, MediaGenerator } from '../../src/media/types.js';
import { ADMIN_TOKEN, databases, startTestGateway, type TestGateway } from '../support/gateway.js';
import { adminClient, client, makeOrganization } from '../support/http.js';
import { writeFigures } from './figures.js';

// ---------------------------------------------------------------------------------------------
// Credentials

/** Every credential the matrix tries; the owner's keys are `api` and `mgmt` (organization A, workspace A1). */
const CREDS = [
  'none', // no Authorization header
  'malformed', // Bearer <not a Gatehouse key>
  'basic', // the owner's valid API key, but in a Basic header
  'unknown', // well-formed, never issued
  'wrong_admin', // the operator token with its last character changed (same length)
  'disabled_api', // PATCH /keys/{hash} {disabled: true}
  'expired_api', // created with expires_at 2 s ahead, used after it passed
  'disabled_mgmt', // management key disabled in the database (no API disables management keys)
  'expired_mgmt', // management key whose expires_at was set in the past in the database
  'admin', // the operator token (GATEHOUSE_ADMIN_TOKEN)
  'api', // the owner's API key (A1)
  'mgmt', // the owner's management key (A)
  'ws_api', // an API key of workspace A2 of the same organization, same member
  'org_api', // organization B's API key
  'org_mgmt', // organization B's management key
] as const;
type Cred = (typeof CREDS)[number];
/** Credentials that never name a usable caller. */
const INVALID: Cred[] = [
  'none',
  'malformed',
  'basic',
  'unknown',
  'wrong_admin',
  'disabled_api',
  'expired_api',
  'disabled_mgmt',
  'expired_mgmt',
];
/** Credentials of another tenant: their answers must not carry the owner's private objects. */
const FOREIGN: Cred[] = ['ws_api', 'org_api', 'org_mgmt'];

// ---------------------------------------------------------------------------------------------
// The table

/** `optional`: public, a valid key only narrows what an Anthropic client is listed (any credential: `ok`). */
type Mode = 'none' | 'optional' | 'key' | 'api' | 'management' | 'admin' | 'runtime';
/** An expected answer: a status, and for errors the envelope's code when it is not the status. */
type Answer = number | { status: number; code: string | number };

interface Fx {
  otherOrg: string;
  ownerUser: string;
  guardrail: string;
  key: string;
  byok: string;
  destination: string;
  workspace: string; // W: no keys, a monthly budget
  batch: string;
  /** An uploaded batch file of workspace A1. */
  file: string;
  /** A message batch (Anthropic's view of a /v1/messages batch) of workspace A1. */
  messageBatch: string;
  intern: string;
  generation: string;
  /** A stored response of workspace A1. */
  response: string;
  /** A conversation of workspace A1, and one of its items. */
  conversation: string;
  conversationItem: string;
  /** A preset of workspace A1 (its slug). */
  preset: string;
  /** A video job of workspace A1. */
  videoJob: string;
  spare: {
    guardrail: string;
    key: string;
    byok: string;
    destination: string;
    workspace: string;
    intern: string;
    file: string;
    response: string;
    conversation: string;
    /** An item of `conversation` (the owner's DELETE of an item). */
    conversationItem: string;
    /** A message batch that has ended (cancelled): its results, and the owner's DELETE. */
    messageBatch: string;
    preset: string;
  };
}

interface Row {
  auth: Mode;
  /** The concrete path (default: the route's own, for routes without parameters). */
  path?: (fx: Fx, as: Cred) => string;
  body?: (fx: Fx, as: Cred) => unknown;
  /** The owner's answer (for public routes, everyone's). */
  ok: Answer;
  /** The owner's call of a destructive route targets a spare object, so the others stay to be checked. */
  ownerPath?: (fx: Fx) => string;
  /** Another organization's key of the right kind (default: 404 on a route naming an object, else `ok`). */
  org?: Answer;
  /** Workspace A2's API key (default: as `org`). */
  ws?: Answer;
  /** A management key on an API-key route (inference, batches: 403; interns, vault: 401). */
  mgmtOnApi?: Answer;
}

const chat = { model: 'gatehouse/echo', messages: [{ role: 'user', content: 'hi' }] };
const INTERN_404 = { status: 404, code: 'not_found' };
/** Short per-credential names for objects the foreign keys create in their own scope. */
const tag = (as: Cred) => as.replace(/_/g, '');
const SECRET = 'a1_secret';

const ROUTES: Record<string, Row> = {
  // Public: the same answer with or without (any) credential.
  'GET /': { auth: 'none', ok: 200 }, // the landing page
  'GET /health': { auth: 'none', ok: 200 },
  'GET /ready': { auth: 'none', ok: 200 },
  'GET /docs': { auth: 'none', ok: 301 }, // → /docs/
  'GET /docs/': { auth: 'none', ok: 200 },
  'GET /docs/js/scalar.js': { auth: 'none', ok: 200 },
  'GET /api/v1/openapi.json': { auth: 'none', ok: 200 },
  // The web console's files (test/console/ serves a built one; here it is not built: 503 page).
  'GET /console': { auth: 'none', ok: 301 }, // → /console/
  'GET /console/*': { auth: 'none', path: () => '/console/keys', ok: 503 },
  'GET /console/assets/*': { auth: 'none', path: () => '/console/assets/index.js', ok: 503 },
  // Console sign-in with an identity provider: not configured here (test/oidc.test.ts configures it).
  'GET /console/oidc/login': { auth: 'none', ok: 404 },
  'GET /console/oidc/callback': { auth: 'none', ok: 404 },
  'GET /api/v1/auth/config': { auth: 'none', ok: 200 },
  'GET /api/v1/models': { auth: 'optional', ok: 200 },
  'GET /api/v1/models/count': { auth: 'none', ok: 200 },
  'GET /api/v1/embeddings/models': { auth: 'none', ok: 200 },
  'GET /api/v1/model/:author/:slug': { auth: 'none', path: () => '/model/gatehouse/echo', ok: 200 },
  'GET /api/v1/models/:id': { auth: 'optional', path: () => '/models/gatehouse%2Fecho', ok: 200 },
  'GET /api/v1/models/:author/:slug/endpoints': {
    auth: 'none',
    path: () => '/models/gatehouse/echo/endpoints',
    ok: 200,
  },
  'GET /api/v1/endpoints/zdr': { auth: 'none', ok: 200 },
  // Image generation, forwarded to the media service (linked here), which answers OpenRouter's shapes.
  'GET /api/v1/images/models': { auth: 'none', ok: 200 },
  'GET /api/v1/images/models/:author/:slug/endpoints': {
    auth: 'none',
    path: () => '/images/models/media/model-a/endpoints',
    ok: 200,
  },
  'POST /api/v1/images': {
    auth: 'api',
    body: () => ({ model: 'media/model-a', prompt: 'a lighthouse' }),
    ok: 200,
    mgmtOnApi: 403,
  },
  'POST /api/v1/images/edits': {
    auth: 'api',
    body: () => ({
      model: 'media/model-a',
      prompt: 'x',
      images: [{ image_url: `data:image/png;base64,${PNG.toString('base64')}` }],
    }),
    ok: 200,
    mgmtOnApi: 403,
  },
  'POST /api/v1/images/generations': {
    auth: 'api',
    body: () => ({ model: 'media/model-a', prompt: 'a lighthouse' }),
    ok: 200,
    mgmtOnApi: 403,
  },
  // Video jobs, forwarded as well: a job is its workspace's alone.
  'GET /api/v1/videos/models': { auth: 'none', ok: 200 },
  'POST /api/v1/videos': {
    auth: 'api',
    body: () => ({ model: 'media/video-model', prompt: 'a lighthouse' }),
    ok: 202,
    mgmtOnApi: 403,
  },
  'GET /api/v1/videos/:id': { auth: 'api', path: (fx) => `/videos/${fx.videoJob}`, ok: 200, mgmtOnApi: 403 },
  // The fixed generator's output is stored as a PNG; the job completes at once.
  'GET /api/v1/videos/:id/content': {
    auth: 'api',
    path: (fx) => `/videos/${fx.videoJob}/content`,
    ok: 200,
    mgmtOnApi: 403,
  },
  'GET /api/v1/providers': { auth: 'none', ok: 200 },
  'POST /api/v1/credits/crypto-charge': { auth: 'none', ok: 410 }, // removed: always 410 (seed)
  // Interns' runtimes call back with their own runtime token; no key or operator token opens them.
  'POST /internal/runtime/chat/completions': { auth: 'runtime', ok: 401, body: () => chat },
  'POST /internal/runtime/egress': { auth: 'runtime', ok: 401, body: () => ({}) },

  // Any key.
  'GET /api/v1/key': { auth: 'key', ok: 200, org: 200 }, // the calling key itself
  'GET /api/v1/models/user': { auth: 'key', ok: 200, org: 200 }, // the models the calling key may use
  'GET /api/v1/generation': {
    auth: 'key',
    path: (fx) => `/generation?id=${fx.generation}`,
    ok: 200,
    org: 404,
    ws: 200, // generations are the organization's (its management key reads them too)
  },
  // Kept content: an API key reads its own workspace's, a management key its organization's.
  'GET /api/v1/generation/content': {
    auth: 'key',
    path: (fx) => `/generation/content?id=${fx.generation}`,
    ok: 200,
    org: 404,
    ws: 404,
  },
  // An API key lists only its own generations; a management key its organization's.
  'GET /api/v1/generations': { auth: 'key', ok: 200, org: 200, ws: 200 },
  // Feedback: an API key on its own workspace's generations, a management key on its organization's.
  'POST /api/v1/generation/feedback': {
    auth: 'key',
    body: (fx, as) => ({ generation_id: fx.generation, category: 'other', comment: `from ${tag(as)}` }),
    ok: 200,
    org: 404,
    ws: 404,
  },

  // Management keys.
  'POST /api/v1/guardrails': {
    auth: 'management',
    body: (_fx, as) => ({ name: `g-${tag(as)}`, allowed_models: ['a/b'] }),
    ok: 201,
  },
  'GET /api/v1/guardrails': { auth: 'management', ok: 200 },
  'GET /api/v1/guardrails/assignments/keys': { auth: 'management', ok: 200 },
  'GET /api/v1/guardrails/assignments/members': { auth: 'management', ok: 200 },
  'GET /api/v1/guardrails/:id': { auth: 'management', path: (fx) => `/guardrails/${fx.guardrail}`, ok: 200 },
  'PATCH /api/v1/guardrails/:id': {
    auth: 'management',
    path: (fx) => `/guardrails/${fx.guardrail}`,
    body: () => ({ name: 'renamed' }),
    ok: 200,
  },
  'DELETE /api/v1/guardrails/:id': {
    auth: 'management',
    path: (fx) => `/guardrails/${fx.guardrail}`,
    ownerPath: (fx) => `/guardrails/${fx.spare.guardrail}`,
    ok: 200,
  },
  'GET /api/v1/guardrails/:id/assignments/keys': {
    auth: 'management',
    path: (fx) => `/guardrails/${fx.guardrail}/assignments/keys`,
    ok: 200,
  },
  'GET /api/v1/guardrails/:id/assignments/members': {
    auth: 'management',
    path: (fx) => `/guardrails/${fx.guardrail}/assignments/members`,
    ok: 200,
  },
  'POST /api/v1/guardrails/:id/assignments/keys': {
    auth: 'management',
    path: (fx) => `/guardrails/${fx.guardrail}/assignments/keys`,
    body: (fx) => ({ key_hashes: [fx.key] }),
    ok: 200,
  },
  'POST /api/v1/guardrails/:id/assignments/keys/remove': {
    auth: 'management',
    path: (fx) => `/guardrails/${fx.guardrail}/assignments/keys/remove`,
    body: (fx) => ({ key_hashes: [fx.key] }),
    ok: 200,
  },
  'POST /api/v1/guardrails/:id/assignments/members': {
    auth: 'management',
    path: (fx) => `/guardrails/${fx.guardrail}/assignments/members`,
    body: (fx) => ({ member_user_ids: [fx.ownerUser] }),
    ok: 200,
  },
  'POST /api/v1/guardrails/:id/assignments/members/remove': {
    auth: 'management',
    path: (fx) => `/guardrails/${fx.guardrail}/assignments/members/remove`,
    body: (fx) => ({ member_user_ids: [fx.ownerUser] }),
    ok: 200,
  },
  'GET /api/v1/keys': { auth: 'management', ok: 200 },
  // Deletes the calling key only when a console sign-in created it: the fixtures' keys stay (409).
  'POST /api/v1/auth/sign-out': { auth: 'management', ok: 409 },
  'POST /api/v1/keys': { auth: 'management', body: (_fx, as) => ({ name: `k-${tag(as)}` }), ok: 201 },
  'GET /api/v1/keys/:hash': { auth: 'management', path: (fx) => `/keys/${fx.key}`, ok: 200 },
  'GET /api/v1/keys/:hash/effective-policy': {
    auth: 'management',
    path: (fx) => `/keys/${fx.key}/effective-policy`,
    ok: 200,
  },
  'PATCH /api/v1/keys/:hash': {
    auth: 'management',
    path: (fx) => `/keys/${fx.key}`,
    body: () => ({ disabled: true }),
    ok: 200,
  },
  'DELETE /api/v1/keys/:hash': {
    auth: 'management',
    path: (fx) => `/keys/${fx.key}`,
    ownerPath: (fx) => `/keys/${fx.spare.key}`,
    ok: 200,
  },
  'GET /api/v1/workspaces': { auth: 'management', ok: 200 },
  'POST /api/v1/workspaces': {
    auth: 'management',
    body: (_fx, as) => ({ name: `W ${as}`, slug: `probe-${tag(as)}` }),
    ok: 201,
  },
  'GET /api/v1/workspaces/:id': { auth: 'management', path: (fx) => `/workspaces/${fx.workspace}`, ok: 200 },
  'PATCH /api/v1/workspaces/:id': {
    auth: 'management',
    path: (fx) => `/workspaces/${fx.workspace}`,
    body: () => ({ name: 'renamed' }),
    ok: 200,
  },
  'DELETE /api/v1/workspaces/:id': {
    auth: 'management',
    path: (fx) => `/workspaces/${fx.workspace}`,
    ownerPath: (fx) => `/workspaces/${fx.spare.workspace}`,
    ok: 200,
  },
  'GET /api/v1/workspaces/:id/members': {
    auth: 'management',
    path: (fx) => `/workspaces/${fx.workspace}/members`,
    ok: 200,
  },
  'POST /api/v1/workspaces/:id/members/add': {
    auth: 'management',
    path: (fx) => `/workspaces/${fx.workspace}/members/add`,
    body: (fx) => ({ user_ids: [fx.ownerUser] }),
    ok: 200,
  },
  'POST /api/v1/workspaces/:id/members/remove': {
    auth: 'management',
    path: (fx) => `/workspaces/${fx.workspace}/members/remove`,
    body: (fx) => ({ user_ids: [fx.ownerUser] }),
    ok: 200,
  },
  'POST /api/v1/workspaces/:id/webhook-secret': {
    auth: 'management',
    path: (fx) => `/workspaces/${fx.workspace}/webhook-secret`,
    ok: 201,
  },
  // After the row above made one.
  'DELETE /api/v1/workspaces/:id/webhook-secret': {
    auth: 'management',
    path: (fx) => `/workspaces/${fx.workspace}/webhook-secret`,
    ok: 200,
  },
  'GET /api/v1/workspaces/:workspace_ref/budgets': {
    auth: 'management',
    path: (fx) => `/workspaces/${fx.workspace}/budgets`,
    ok: 200,
  },
  'GET /api/v1/workspaces/:workspace_ref/budgets/:interval': {
    auth: 'management',
    path: (fx) => `/workspaces/${fx.workspace}/budgets/monthly`,
    ok: 200,
  },
  'PUT /api/v1/workspaces/:workspace_ref/budgets/:interval': {
    auth: 'management',
    path: (fx) => `/workspaces/${fx.workspace}/budgets/monthly`,
    body: () => ({ limit_usd: 1 }),
    ok: 200,
  },
  'DELETE /api/v1/workspaces/:workspace_ref/budgets/:interval': {
    auth: 'management',
    path: (fx) => `/workspaces/${fx.workspace}/budgets/monthly`,
    ok: 200,
  },
  'GET /api/v1/organization/members': { auth: 'management', ok: 200 },
  'GET /api/v1/byok': { auth: 'management', ok: 200 },
  'POST /api/v1/byok': {
    auth: 'management',
    body: () => ({ provider: 'anthropic', key: 'sk-probe-provider-secret-0000' }),
    ok: 201,
  },
  'GET /api/v1/byok/:id': { auth: 'management', path: (fx) => `/byok/${fx.byok}`, ok: 200 },
  'PATCH /api/v1/byok/:id': {
    auth: 'management',
    path: (fx) => `/byok/${fx.byok}`,
    body: () => ({ name: 'renamed' }),
    ok: 200,
  },
  'DELETE /api/v1/byok/:id': {
    auth: 'management',
    path: (fx) => `/byok/${fx.byok}`,
    ownerPath: (fx) => `/byok/${fx.spare.byok}`,
    ok: 200,
  },
  'GET /api/v1/observability/destinations': { auth: 'management', ok: 200 },
  'POST /api/v1/observability/destinations': {
    auth: 'management',
    body: () => ({ type: 'webhook', name: 'probe', config: { url: 'https://hooks.example.com/probe' } }),
    ok: 201,
  },
  'GET /api/v1/observability/destinations/:id': {
    auth: 'management',
    path: (fx) => `/observability/destinations/${fx.destination}`,
    ok: 200,
  },
  'PATCH /api/v1/observability/destinations/:id': {
    auth: 'management',
    path: (fx) => `/observability/destinations/${fx.destination}`,
    body: () => ({ name: 'renamed' }),
    ok: 200,
  },
  'DELETE /api/v1/observability/destinations/:id': {
    auth: 'management',
    path: (fx) => `/observability/destinations/${fx.destination}`,
    ownerPath: (fx) => `/observability/destinations/${fx.spare.destination}`,
    ok: 200,
  },
  'GET /api/v1/credits': { auth: 'management', ok: 200 },
  'GET /api/v1/credits/ledger': { auth: 'management', ok: 200 },
  'GET /api/v1/activity': { auth: 'management', ok: 200 },
  'GET /api/v1/analytics/series': { auth: 'management', ok: 200 },
  'GET /api/v1/analytics/meta': { auth: 'management', ok: 200 },
  // The caller's organization's events. Another organization's log holds the owner's ids its own
  // refused calls sent (its attempts are audited too), so it is read narrowed to its creations;
  // test/audit.test.ts and the audit sweep below check that no event crosses organizations.
  'GET /api/v1/audit-log': {
    auth: 'management',
    path: () => '/audit-log?action=guardrail.create',
    ok: 200,
  },
  'POST /api/v1/analytics/query': { auth: 'management', body: () => ({ metrics: ['requests'] }), ok: 200 },

  // The operator API.
  'POST /api/v1/admin/organizations': { auth: 'admin', body: () => ({ name: 'Probe' }), ok: 201 },
  'GET /api/v1/admin/organizations': { auth: 'admin', ok: 200 },
  'POST /api/v1/admin/catalog/reload': { auth: 'admin', ok: 200 },
  'GET /api/v1/admin/credentials': { auth: 'admin', ok: 200 },
  'POST /api/v1/admin/users': {
    auth: 'admin',
    body: (fx, as) => ({
      email: `probe-${tag(as)}-${randomBytes(4).toString('hex')}@example.com`,
      organization_id: fx.otherOrg,
      role: 'member',
    }),
    ok: 201,
  },
  'GET /api/v1/admin/users': {
    auth: 'admin',
    path: (fx) => `/admin/users?organization_id=${fx.otherOrg}`,
    ok: 200,
  },
  'POST /api/v1/admin/keys': {
    auth: 'admin',
    body: (fx) => ({ name: 'probe', organization_id: fx.otherOrg }),
    ok: 201,
  },
  'GET /api/v1/admin/audit-log': { auth: 'admin', ok: 200 },
  'GET /api/v1/admin/credits': {
    auth: 'admin',
    path: (fx) => `/admin/credits?organization_id=${fx.otherOrg}`,
    ok: 200,
  },
  'POST /api/v1/admin/credits': {
    auth: 'admin',
    body: (fx) => ({ organization_id: fx.otherOrg, amount_usd: 1 }),
    ok: 201,
  },

  // API keys: inference (a management key is refused in the handler, so bodies are valid).
  'POST /api/v1/chat/completions': { auth: 'api', body: () => chat, ok: 200, mgmtOnApi: 403 },
  'POST /api/v1/completions': {
    auth: 'api',
    body: () => ({ model: chat.model, prompt: 'hi' }),
    ok: 200,
    mgmtOnApi: 403,
  },
  'POST /api/v1/messages': {
    auth: 'api',
    body: () => ({ ...chat, max_tokens: 16 }),
    ok: 200,
    mgmtOnApi: 403,
  },
  'POST /api/v1/messages/count_tokens': { auth: 'api', body: () => chat, ok: 200, mgmtOnApi: 403 },
  'POST /api/v1/responses': {
    auth: 'api',
    body: () => ({ model: 'gatehouse/echo', input: 'hi' }),
    ok: 200,
    mgmtOnApi: 403,
  },
  // The Responses WebSocket mode: authenticated before the upgrade; a plain GET is a 426.
  'GET /api/v1/responses': { auth: 'api', ok: 426, mgmtOnApi: 403 },
  'POST /api/v1/responses/compact': {
    auth: 'api',
    body: () => ({ model: 'gatehouse/echo', input: 'hi' }),
    ok: 200,
    mgmtOnApi: 403,
  },
  'POST /api/v1/responses/input_tokens': {
    auth: 'api',
    body: () => ({ model: 'gatehouse/echo', input: 'hi' }),
    ok: 200,
    mgmtOnApi: 403,
  },
  // Stored responses: the key's workspace's.
  'GET /api/v1/responses/:id': {
    auth: 'api',
    path: (fx) => `/responses/${fx.response}`,
    ok: 200,
    mgmtOnApi: 403,
  },
  'GET /api/v1/responses/:id/input_items': {
    auth: 'api',
    path: (fx) => `/responses/${fx.response}/input_items`,
    ok: 200,
    mgmtOnApi: 403,
  },
  'DELETE /api/v1/responses/:id': {
    auth: 'api',
    path: (fx) => `/responses/${fx.response}`,
    ownerPath: (fx) => `/responses/${fx.spare.response}`,
    ok: 200,
    mgmtOnApi: 403,
  },
  // Conversations: the key's workspace's.
  'POST /api/v1/conversations': { auth: 'api', body: () => ({}), ok: 200, mgmtOnApi: 403 },
  'GET /api/v1/conversations/:id': {
    auth: 'api',
    path: (fx) => `/conversations/${fx.conversation}`,
    ok: 200,
    mgmtOnApi: 403,
  },
  'POST /api/v1/conversations/:id': {
    auth: 'api',
    path: (fx) => `/conversations/${fx.conversation}`,
    // The owner sets what it had: the snapshot stays the same.
    body: (_fx, as) => ({ metadata: as === 'api' ? {} : { stolen: 'yes' } }),
    ok: 200,
    mgmtOnApi: 403,
  },
  'DELETE /api/v1/conversations/:id': {
    auth: 'api',
    path: (fx) => `/conversations/${fx.conversation}`,
    ownerPath: (fx) => `/conversations/${fx.spare.conversation}`,
    ok: 200,
    mgmtOnApi: 403,
  },
  'GET /api/v1/conversations/:id/items': {
    auth: 'api',
    path: (fx) => `/conversations/${fx.conversation}/items`,
    ok: 200,
    mgmtOnApi: 403,
  },
  'POST /api/v1/conversations/:id/items': {
    auth: 'api',
    path: (fx) => `/conversations/${fx.conversation}/items`,
    body: () => ({ items: [{ role: 'user', content: 'added' }] }),
    ok: 200,
    mgmtOnApi: 403,
  },
  'GET /api/v1/conversations/:id/items/:item_id': {
    auth: 'api',
    path: (fx) => `/conversations/${fx.conversation}/items/${fx.conversationItem}`,
    ok: 200,
    mgmtOnApi: 403,
  },
  'DELETE /api/v1/conversations/:id/items/:item_id': {
    auth: 'api',
    path: (fx) => `/conversations/${fx.conversation}/items/${fx.conversationItem}`,
    ownerPath: (fx) => `/conversations/${fx.conversation}/items/${fx.spare.conversationItem}`,
    ok: 200,
    mgmtOnApi: 403,
  },
  // Presets: the key's workspace's. Saving names a slug in the caller's own workspace, so another
  // tenant's save (of a slug of its own) makes its own preset.
  'GET /api/v1/presets': { auth: 'api', ok: 200, mgmtOnApi: 403 },
  'GET /api/v1/presets/:slug': {
    auth: 'api',
    path: (fx) => `/presets/${fx.preset}`,
    ok: 200,
    mgmtOnApi: 403,
  },
  'GET /api/v1/presets/:slug/versions': {
    auth: 'api',
    path: (fx) => `/presets/${fx.preset}/versions`,
    ok: 200,
    mgmtOnApi: 403,
  },
  'GET /api/v1/presets/:slug/versions/:version': {
    auth: 'api',
    path: (fx) => `/presets/${fx.preset}/versions/1`,
    ok: 200,
    mgmtOnApi: 403,
  },
  ...Object.fromEntries(
    ['chat/completions', 'messages', 'responses'].map((skin) => [
      `POST /api/v1/presets/:slug/${skin}`,
      {
        auth: 'api',
        path: (fx: Fx, as: Cred) => `/presets/${as === 'api' ? fx.preset : `p-${tag(as)}`}/${skin}`,
        body: () => chat,
        ok: 200,
        org: 200,
        mgmtOnApi: 403,
      } satisfies Row,
    ]),
  ),
  'DELETE /api/v1/presets/:slug': {
    auth: 'api',
    path: (fx) => `/presets/${fx.preset}`,
    ownerPath: (fx) => `/presets/${fx.spare.preset}`,
    ok: 200,
    mgmtOnApi: 403,
  },
  'POST /api/v1/embeddings': {
    auth: 'api',
    body: () => ({ model: 'gatehouse/embed', input: 'hi' }),
    ok: 200,
    mgmtOnApi: 403,
  },
  'POST /api/v1/rerank': {
    auth: 'api',
    body: () => ({ model: 'gatehouse/rerank', query: 'hi', documents: ['hi there', 'bye'] }),
    ok: 200,
    mgmtOnApi: 403,
  },
  'POST /api/v1/audio/speech': {
    auth: 'api',
    body: () => ({ model: 'gatehouse/speech', input: 'hi', voice: 'alloy' }),
    ok: 200,
    mgmtOnApi: 403,
  },
  'POST /api/v1/audio/transcriptions': {
    auth: 'api',
    body: () => ({ model: 'gatehouse/transcribe', input_audio: { data: 'UklGRg==', format: 'wav' } }),
    ok: 200,
    mgmtOnApi: 403,
  },

  // Batches: the key's workspace's.
  'POST /api/v1/batches': {
    auth: 'api',
    body: () => ({
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      requests: [{ custom_id: 'a', body: chat }],
    }),
    ok: 202,
    mgmtOnApi: 403,
  },
  'GET /api/v1/batches': { auth: 'api', ok: 200, mgmtOnApi: 403 },
  'GET /api/v1/batches/:id': { auth: 'api', path: (fx) => `/batches/${fx.batch}`, ok: 200, mgmtOnApi: 403 },
  'GET /api/v1/batches/:id/results': {
    auth: 'api',
    path: (fx) => `/batches/${fx.batch}/results`,
    ok: 200,
    mgmtOnApi: 403,
  },
  'POST /api/v1/batches/:id/cancel': {
    auth: 'api',
    path: (fx) => `/batches/${fx.batch}/cancel`,
    ok: 200,
    mgmtOnApi: 403,
  },

  // Batch files (OpenAI's Files API): the key's workspace's, errors in OpenAI's error object.
  // The matrix sends JSON, not a multipart form: the 415 shows a valid key got past authentication.
  'POST /api/v1/files': { auth: 'api', body: () => ({}), ok: 415, mgmtOnApi: 403 },
  'GET /api/v1/files': { auth: 'api', ok: 200, mgmtOnApi: 403 },
  'GET /api/v1/files/:id': { auth: 'api', path: (fx) => `/files/${fx.file}`, ok: 200, mgmtOnApi: 403 },
  'GET /api/v1/files/:id/content': {
    auth: 'api',
    path: (fx) => `/files/${fx.file}/content`,
    ok: 200,
    mgmtOnApi: 403,
  },
  'DELETE /api/v1/files/:id': {
    auth: 'api',
    path: (fx) => `/files/${fx.file}`,
    ownerPath: (fx) => `/files/${fx.spare.file}`,
    ok: 200,
    mgmtOnApi: 403,
  },

  // Anthropic's Message Batches: the key's workspace's, errors in Anthropic's format.
  'POST /api/v1/messages/batches': {
    auth: 'api',
    body: () => ({ requests: [{ custom_id: 'a', params: { ...chat, max_tokens: 16 } }] }),
    ok: 200,
    mgmtOnApi: 403,
  },
  'GET /api/v1/messages/batches': { auth: 'api', ok: 200, mgmtOnApi: 403 },
  'GET /api/v1/messages/batches/:id': {
    auth: 'api',
    path: (fx) => `/messages/batches/${fx.messageBatch}`,
    ok: 200,
    mgmtOnApi: 403,
  },
  'GET /api/v1/messages/batches/:id/results': {
    auth: 'api',
    path: (fx) => `/messages/batches/${fx.spare.messageBatch}/results`,
    ok: 200,
    mgmtOnApi: 403,
  },
  'POST /api/v1/messages/batches/:id/cancel': {
    auth: 'api',
    path: (fx) => `/messages/batches/${fx.messageBatch}/cancel`,
    ok: 200,
    mgmtOnApi: 403,
  },
  'DELETE /api/v1/messages/batches/:id': {
    auth: 'api',
    path: (fx) => `/messages/batches/${fx.messageBatch}`,
    ownerPath: (fx) => `/messages/batches/${fx.spare.messageBatch}`,
    ok: 200,
    mgmtOnApi: 403,
  },

  // Interns: the key's workspace's (404 with a named code when hidden).
  'POST /api/v1/interns': {
    auth: 'api',
    body: (_fx, as) => ({ name: `probe-${tag(as)}` }),
    ok: 201,
    mgmtOnApi: 401,
  },
  'GET /api/v1/interns': { auth: 'api', ok: 200, mgmtOnApi: 401 },
  'GET /api/v1/interns/:internId': {
    auth: 'api',
    path: (fx) => `/interns/${fx.intern}`,
    ok: 200,
    org: INTERN_404,
    mgmtOnApi: 401,
  },
  'PATCH /api/v1/interns/:internId': {
    auth: 'api',
    path: (fx) => `/interns/${fx.intern}`,
    body: () => ({ description: 'changed' }),
    ok: 200,
    org: INTERN_404,
    mgmtOnApi: 401,
  },
  'DELETE /api/v1/interns/:internId': {
    auth: 'api',
    path: (fx) => `/interns/${fx.intern}`,
    ownerPath: (fx) => `/interns/${fx.spare.intern}`,
    ok: 202,
    org: INTERN_404,
    mgmtOnApi: 401,
  },
  'POST /api/v1/interns/:internId/provision': {
    auth: 'api',
    path: (fx) => `/interns/${fx.intern}/provision`,
    ok: 202,
    org: INTERN_404,
    mgmtOnApi: 401,
  },
  'POST /api/v1/interns/:internId/suspend': {
    auth: 'api',
    path: (fx) => `/interns/${fx.intern}/suspend`,
    ok: 200,
    org: INTERN_404,
    mgmtOnApi: 401,
  },
  'POST /api/v1/interns/:internId/chat/completions': {
    auth: 'api',
    path: (fx) => `/interns/${fx.intern}/chat/completions`,
    body: () => ({ stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    // The owner's intern is not running (it is never left provisioned): 409, past every check.
    ok: { status: 409, code: 409 },
    mgmtOnApi: 401,
  },

  // Vaults: `/vault/secrets` is the caller's own workspace's vault, so a foreign key writes its own
  // (200) and cannot delete A1's secret of the same name (404).
  'GET /api/v1/vault/secrets': { auth: 'api', ok: 200, mgmtOnApi: 401 },
  'PUT /api/v1/vault/secrets/:name': {
    auth: 'api',
    path: (_fx, as) => `/vault/secrets/${as === 'api' ? SECRET : `probe_${tag(as)}`}`,
    body: () => ({ value: 'v-probe-value', hosts: ['probe.example.com'] }),
    ok: 200,
    org: 200,
    mgmtOnApi: 401,
  },
  'DELETE /api/v1/vault/secrets/:name': {
    auth: 'api',
    path: () => `/vault/secrets/${SECRET}`,
    ok: 204,
    mgmtOnApi: 401,
  },
  'GET /api/v1/vault/interns/:internId/secrets': {
    auth: 'api',
    path: (fx) => `/vault/interns/${fx.intern}/secrets`,
    ok: 200,
    mgmtOnApi: 401,
  },
  'POST /api/v1/vault/interns/:internId/secrets/copy': {
    auth: 'api',
    path: (fx) => `/vault/interns/${fx.intern}/secrets/copy`,
    body: () => ({ names: [SECRET] }),
    ok: 200,
    mgmtOnApi: 401,
  },
  'PUT /api/v1/vault/interns/:internId/secrets/:name': {
    auth: 'api',
    path: (fx) => `/vault/interns/${fx.intern}/secrets/${SECRET}`,
    body: () => ({ value: 'overwritten', hosts: ['evil.example.com'] }),
    ok: 200,
    mgmtOnApi: 401,
  },
  'DELETE /api/v1/vault/interns/:internId/secrets/:name': {
    auth: 'api',
    path: (fx) => `/vault/interns/${fx.intern}/secrets/${SECRET}`,
    ok: 204,
    mgmtOnApi: 401,
  },
};

/** The answer the table states for `cred` on `row` (route `id`). */
function expected(id: string, row: Row, cred: Cred): Answer {
  const named = id.includes('/:');
  const foreign = row.org ?? (named ? 404 : row.ok);
  switch (row.auth) {
    case 'none':
    case 'optional':
      return row.ok;
    case 'runtime':
      return 401;
    case 'admin':
      return cred === 'admin' ? row.ok : 401;
  }
  if (INVALID.includes(cred) || cred === 'admin') return 401;
  if (row.auth === 'key') {
    if (cred === 'api' || cred === 'mgmt') return row.ok;
    return cred === 'ws_api' ? (row.ws ?? foreign) : foreign;
  }
  if (row.auth === 'management') {
    if (cred === 'mgmt') return row.ok;
    return cred === 'org_mgmt' ? foreign : 403;
  }
  // api
  if (cred === 'api') return row.ok;
  if (cred === 'mgmt' || cred === 'org_mgmt') return row.mgmtOnApi ?? 403;
  return cred === 'ws_api' ? (row.ws ?? foreign) : foreign;
}

// ---------------------------------------------------------------------------------------------
// Media (GATEHOUSE_MEDIA_AUTH=keys): POST /api/* and a video job's GETs need an API key; the rest is public.

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const fixedGenerator: MediaGenerator = {
  async generate(): Promise<GeneratedOutput[]> {
    return [{ data: PNG, contentType: 'image/png', extension: 'png' }];
  },
};

const MEDIA_PUBLIC: Record<string, Answer> = {
  'GET /': 200,
  'GET /health': 200,
  'GET /api/status': 200,
  'GET /api/routes': 200,
  'GET /openapi.json': 200,
  'GET /docs': 301, // → /docs/
  'GET /docs/': 200,
  'GET /docs/js/scalar.js': 200,
  'GET /files/*': { status: 404, code: 'not_found' }, // public; no such file
  'GET /api/v1/images/models': 200,
  'GET /api/v1/images/models/:author/:slug/endpoints': 200,
  'GET /api/v1/videos/models': 200,
};

/** A media answer for `cred` on a generation route. An empty body proves a valid key got past auth (400, no prompt). */
function mediaExpected(route: string, cred: Cred): Answer {
  if (MEDIA_PUBLIC[route] !== undefined) return MEDIA_PUBLIC[route];
  if (cred === 'mgmt' || cred === 'org_mgmt') return { status: 403, code: 'forbidden' };
  if (INVALID.includes(cred) || cred === 'admin') return { status: 401, code: 'unauthorized' };
  // The catch-all answers unknown models, and a video poll unknown jobs, behind authentication.
  return route === 'POST /api/:kind/:model' || route.startsWith('GET /api/v1/videos/:id')
    ? { status: 404, code: 'not_found' }
    : { status: 400, code: 'missing_parameter' };
}
const mediaPath = (route: string) =>
  route
    .split(' ')[1]!
    .replace(':kind/:model', 't2i/no-such-model')
    .replace(':author/:slug', 'media/model-a')
    .replace(':id', 'gen-vid-1-nosuchjob')
    .replace('*', 'no-such-file.png');

// ---------------------------------------------------------------------------------------------

interface Answered {
  status: number;
  body: any;
  text: string;
}

async function send(base: string, method: string, path: string, auth: string | null, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    redirect: 'manual',
    headers: {
      ...(auth ? { authorization: auth } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(text);
  } catch {}
  return { status: res.status, body: parsed, text } satisfies Answered;
}

/** Runs `tasks` at most `n` at a time. */
async function inChunks<T>(tasks: (() => Promise<T>)[], n = 24): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < tasks.length; i += n)
    out.push(...(await Promise.all(tasks.slice(i, i + n).map((t) => t()))));
  return out;
}

/** What is wrong with `got` against `want`, or null: status, then the error envelope of that service. */
function mismatch(
  got: Answered,
  want: Answer,
  media: boolean,
  anthropic: boolean,
  openai = false,
  path = '',
): string | null {
  const status = typeof want === 'number' ? want : want.status;
  const code = typeof want === 'number' ? want : want.code;
  if (got.status !== status) return `${got.status} (want ${status}) ${got.text.slice(0, 160)}`;
  if (status < 400) return null;
  const e = got.body?.error;
  // Anthropic-format routes answer Anthropic's error object: its type names the refusal.
  if (anthropic) {
    const type = { 401: 'authentication_error', 403: 'permission_error', 404: 'not_found_error' }[status];
    if (got.body?.type !== 'error' || e?.type !== type || typeof e?.message !== 'string' || e.message === '')
      return `Anthropic error object (want ${type}) ${got.text.slice(0, 160)}`;
    return null;
  }
  // OpenAI's Files API answers OpenAI's error object: its type names the refusal.
  if (openai) {
    const type = { 401: 'authentication_error', 403: 'permission_error', 404: 'invalid_request_error' }[
      status
    ];
    if ((type && e?.type !== type) || typeof e?.message !== 'string' || e.message === '' || !('param' in e))
      return `OpenAI error object (want ${type}) ${got.text.slice(0, 160)}`;
    return null;
  }
  // The media service's OpenRouter-shaped routes: OpenRouter's envelope, its own code in the metadata.
  if (media && path.startsWith('/api/v1/')) {
    if (e?.code !== status || typeof e?.message !== 'string' || e.metadata?.error_code !== code)
      return `OpenRouter envelope (want ${code}) ${got.text.slice(0, 160)}`;
    return null;
  }
  if (media) {
    if (got.body?.success !== false || typeof got.body?.message !== 'string' || e?.code !== code)
      return `media envelope ${got.text.slice(0, 160)}`;
    return null;
  }
  if (!e || e.code !== code || typeof e.message !== 'string' || e.message === '')
    return `envelope (want code ${code}) ${got.text.slice(0, 160)}`;
  const extra = Object.keys(e).filter((k) => !['code', 'message', 'metadata'].includes(k));
  if (extra.length) return `envelope has ${extra.join(', ')}`;
  // Authentication refusals carry exactly code and message.
  if ((status === 401 || status === 403) && Object.keys(e).length !== 2) return `auth envelope ${got.text}`;
  return null;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

// Figures over every database the matrix ran on, written once.
const figures = {
  routes: 0,
  mediaRoutes: 0,
  calls: 0,
  asserted: 0,
  unexpected: 0,
  crossWrites: 0,
  leaks: 0,
  objects: 0,
  foreignOnOwned: 0,
  dbs: [] as string[],
  ms: 0,
};

afterAll(() => {
  if (figures.calls === 0) return;
  writeFigures({
    area: 'authorization',
    title: `Every gateway and media route × ${CREDS.length} credentials, on ${figures.dbs.join(' and ')}`,
    rows: [
      ['gateway routes covered (all registered, HEAD aside)', figures.routes],
      ['media routes covered (keys auth mode)', figures.mediaRoutes],
      ['credentials per route', CREDS.length],
      ['calls made (routes × credentials × databases, with owner controls)', figures.calls],
      ['answers asserted (status and error envelope)', figures.asserted],
      ['unexpected answers', figures.unexpected],
      ['calls by other tenants on the owner’s objects (all 404)', figures.foreignOnOwned],
      ['owner objects read back before and after', figures.objects],
      ['cross-tenant writes that changed anything', figures.crossWrites],
      ['foreign answers carrying the owner’s ids', figures.leaks],
      ['run time with fixtures and the 2 s expiry wait (ms)', figures.ms],
    ],
    notes: [
      'Routes are enumerated from the apps (onRoute), so a route added without a row fails the test.',
      'Invalid credentials (none, malformed, Basic scheme, unknown, near-miss operator token, disabled and expired API and management keys) → 401 everywhere but public routes.',
      'API key on a management route → 403; management key on inference and batches → 403, on interns and vault → 401, on media → 403; operator routes without the operator token → 401.',
      'Another organization’s (or, for interns, vaults and batches, another workspace’s) key on an owner’s object → 404, and a snapshot of every targeted object read back by the owner is unchanged.',
      'The expired API key expired in real time (created 2 s ahead); the disabled and expired management keys were written to the database (no API disables a management key, and expires_at must be in the future).',
    ],
  });
});

describe.each(databases)('authorization matrix (%s)', (db) => {
  let gw: TestGateway;
  let media: MediaHandle;
  let mediaDir: string;
  const routes = new Map<string, RouteOptions>();
  const mediaRoutes = new Map<string, RouteOptions>();
  const record = (into: Map<string, RouteOptions>) => (r: RouteOptions) => {
    for (const m of [r.method].flat()) if (m !== 'HEAD') into.set(`${m} ${r.url}`, r);
  };

  beforeAll(async () => {
    gw = await startTestGateway(db, {
      // No worker: the owner's batch stays `validating`, so a cancel by anyone else would show.
      // Slow provisioning: the owner's provision control never starts a runtime before its suspend.
      // No console build, whatever dist/ holds: its routes answer the same 503 on every run.
      env: {
        GATEHOUSE_WORKER: 'off',
        GATEHOUSE_INTERNS_STEP_DELAY_MS: '20000',
        GATEHOUSE_CONSOLE_DIR: join(tmpdir(), 'gatehouse-no-console'),
      },
      onRoute: record(routes),
    });
    mediaDir = await mkdtemp(join(tmpdir(), 'authz-media-'));
    media = await startMedia(
      loadMediaConfig({ MEDIA_PORT: '0', MEDIA_HOST: '127.0.0.1', GATEHOUSE_MEDIA_STORE_DIR: mediaDir }),
      {
        log: false,
        generator: fixedGenerator,
        keys: gw.services.keys,
        videoJobs: gw.services.mediaVideoJobs,
        onRoute: record(mediaRoutes),
      },
    );
    gw.services.mediaLink.url = media.url;
  });
  afterAll(async () => {
    await media?.close();
    await gw?.stop();
    if (mediaDir) await rm(mediaDir, { recursive: true, force: true });
  });

  it('has a row for every route, and each row declares the route’s own auth mode', () => {
    const declared = (r: RouteOptions) =>
      r.url.startsWith('/internal/runtime/')
        ? 'runtime'
        : ((r.config as { auth?: Mode } | undefined)?.auth ?? 'none');
    expect(
      [...routes.keys()].filter((id) => !ROUTES[id]),
      'routes without a row',
    ).toEqual([]);
    expect(
      Object.keys(ROUTES).filter((id) => !routes.has(id)),
      'rows without a route',
    ).toEqual([]);
    for (const [id, r] of routes) expect(declared(r), id).toBe(ROUTES[id]!.auth);
    const generation = [...mediaRoutes.keys()].filter((id) => MEDIA_PUBLIC[id] === undefined);
    // Keyed media routes: generations, and the video jobs they leave (a key's own to read).
    expect(
      generation.every((id) => needsCredential(id.split(' ')[0]!, id.split(' ')[1])),
      generation.join(),
    ).toBe(true);
    expect(generation).toContain('POST /api/:kind/:model');
    expect(
      Object.keys(MEDIA_PUBLIC).filter((id) => !mediaRoutes.has(id)),
      'media rows without a route',
    ).toEqual([]);
  });

  it('answers every credential on every route as the table says, and no other tenant changes a thing', async () => {
    const t0 = Date.now();
    const admin = adminClient(gw.url);
    const mgmt = client(gw.url, gw.managementKey);
    const api = client(gw.url, gw.apiKey);
    const created = <T = any>(res: { status: number; body: T; text: string }, status = 201): T => {
      expect(res.status, res.text).toBe(status);
      return res.body;
    };

    // Credentials. The expiring key first: its 2 s run while the rest is built.
    const expiring = created(
      await mgmt('POST', '/keys', {
        name: 'expiring',
        expires_at: new Date(Date.now() + 2000).toISOString(),
      }),
    );
    expect((await client(gw.url, expiring.key)('GET', '/key')).status).toBe(200);
    const disabled = created(await mgmt('POST', '/keys', { name: 'disabled' }));
    expect((await client(gw.url, disabled.key)('GET', '/key')).status).toBe(200);
    created(await mgmt('PATCH', `/keys/${disabled.data.hash}`, { disabled: true }), 200);
    const mgmtKey = async (name: string, change: { disabled: number } | { expires_at: string }) => {
      const k = created(
        await admin('POST', '/admin/keys', { name, user_id: gw.ownerUserId, management: true }),
      );
      expect((await client(gw.url, k.key)('GET', '/credits')).status).toBe(200);
      await gw.services.db.updateTable('api_keys').set(change).where('hash', '=', sha256(k.key)).execute();
      gw.services.keys.invalidate(sha256(k.key));
      return k.key as string;
    };
    const disabledMgmt = await mgmtKey('disabled-mgmt', { disabled: 1 });
    const expiredMgmt = await mgmtKey('expired-mgmt', { expires_at: '2000-01-01T00:00:00.000Z' });
    const a2 = created(await mgmt('POST', '/workspaces', { name: 'A2', slug: 'a2' })).data;
    const wsKey = created(
      await mgmt('POST', '/keys', { name: 'a2-api', workspace_id: a2.id, creator_user_id: gw.ownerUserId }),
    );
    const other = await makeOrganization(gw.url, `Org B ${db}`, { internsProgramme: true });
    for (const org of [gw.organizationId, other.organizationId])
      created(await admin('POST', '/admin/credits', { organization_id: org, amount_usd: 10 }));

    // The owner's objects (organization A, workspace A1), and spares for the owner's own deletes.
    // Assigned to the owner (as a member) below, so it must let the owner's own inference through.
    const models = [
      'gatehouse/echo',
      'gatehouse/embed',
      'gatehouse/rerank',
      'gatehouse/speech',
      'gatehouse/transcribe',
    ];
    const guardrail = created(await mgmt('POST', '/guardrails', { name: 'g', allowed_models: models })).data;
    const key = created(await mgmt('POST', '/keys', { name: 'k' })).data;
    created(
      await mgmt('POST', `/guardrails/${guardrail.id}/assignments/keys`, { key_hashes: [key.hash] }),
      200,
    );
    created(
      await mgmt('POST', `/guardrails/${guardrail.id}/assignments/members`, {
        member_user_ids: [gw.ownerUserId],
      }),
      200,
    );
    const byok = created(
      await mgmt('POST', '/byok', { provider: 'openai', key: 'sk-private-provider-secret' }),
    ).data;
    const destination = created(
      await mgmt('POST', '/observability/destinations', {
        type: 'webhook',
        name: 'private',
        config: {
          url: 'https://hooks.example.com/a1',
          headers: { authorization: 'Bearer sk-private-hook-secret' },
        },
      }),
    ).data;
    const workspace = created(await mgmt('POST', '/workspaces', { name: 'Private', slug: 'private' })).data;
    created(await mgmt('PUT', `/workspaces/${workspace.id}/budgets/monthly`, { limit_usd: 5 }), 200);
    const batch = created(
      await api('POST', '/batches', ROUTES['POST /api/v1/batches']!.body!({} as Fx, 'api')),
      202,
    );
    const uploadFile = async (name: string) => {
      const form = new FormData();
      const line = { custom_id: name, method: 'POST', url: '/v1/chat/completions', body: chat };
      form.append('file', new Blob([`${JSON.stringify(line)}\n`]), `${name}.jsonl`);
      form.append('purpose', 'batch');
      const res = await fetch(`${gw.url}/api/v1/files`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.apiKey}` },
        body: form,
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { id: string }).id;
    };
    const file = await uploadFile('a1-private-file');
    const spareFile = await uploadFile('a1-spare-file');
    const messageBatchBody = ROUTES['POST /api/v1/messages/batches']!.body!({} as Fx, 'api');
    const messageBatch = created(await api('POST', '/messages/batches', messageBatchBody), 200).id as string;
    // No worker runs here: a batch cancelled before any request started has ended at once.
    const spareMessageBatch = created(await api('POST', '/messages/batches', messageBatchBody), 200).id;
    expect(
      created(await api('POST', `/messages/batches/${spareMessageBatch}/cancel`), 200).processing_status,
    ).toBe('ended');
    const intern = created(await api('POST', '/interns', { name: 'private-intern' }));
    const spareIntern = created(await api('POST', '/interns', { name: 'spare-intern' }));
    const host = `a1-${randomBytes(4).toString('hex')}.example.com`; // unique: a marker of leaks
    const secret = { value: 'sk-private-intern-secret', hosts: [host] };
    created(await api('PUT', `/vault/interns/${intern.id}/secrets/${SECRET}`, secret), 200);
    created(await api('PUT', `/vault/secrets/${SECRET}`, secret), 200);
    // Workspace A1 keeps content, so the generation below has some to read.
    const a1 = created(await api('GET', '/key'), 200).data.workspace_id;
    created(await mgmt('PATCH', `/workspaces/${a1}`, { content_logging: true }), 200);
    const generation = created(await api('POST', '/chat/completions', chat), 200);
    await vi.waitFor(async () => {
      await gw.services.contentLog.flush();
      expect((await api('GET', `/generation/content?id=${generation.id}`)).status).toBe(200);
    });
    const storedResponse = () =>
      api('POST', '/responses', { model: 'gatehouse/echo', input: 'a1 private answer' }).then(
        (res) => created(res, 200).id as string,
      );
    const response = await storedResponse();
    const conversation = created(
      await api('POST', '/conversations', {
        items: [
          { role: 'user', content: 'a1 private conversation' },
          { role: 'user', content: 'a1 spare item' },
        ],
      }),
      200,
    ).id as string;
    const [conversationItem, spareConversationItem] = created(
      await api('GET', `/conversations/${conversation}/items?order=asc`),
      200,
    ).data.map((i: { id: string }) => i.id);
    const preset = async (slug: string) => {
      created(await api('POST', `/presets/${slug}/chat/completions`, chat), 200);
      return slug;
    };
    const videoJob = created(
      await api('POST', '/videos', { model: 'media/video-model', prompt: 'a1 video' }),
      202,
    ).id as string;
    await vi.waitFor(async () =>
      expect(created(await api('GET', `/videos/${videoJob}`), 200).status).toBe('completed'),
    );
    await gw.services.accountant.flush();
    const fx: Fx = {
      otherOrg: other.organizationId,
      ownerUser: gw.ownerUserId,
      guardrail: guardrail.id,
      key: key.hash,
      byok: byok.id,
      destination: destination.id,
      workspace: workspace.id,
      batch: batch.id,
      file,
      messageBatch,
      intern: intern.id,
      generation: generation.id,
      response,
      conversation,
      conversationItem,
      preset: await preset('a1-preset'),
      videoJob,
      spare: {
        guardrail: created(await mgmt('POST', '/guardrails', { name: 'spare' })).data.id,
        key: created(await mgmt('POST', '/keys', { name: 'spare' })).data.hash,
        byok: created(await mgmt('POST', '/byok', { provider: 'openai', key: 'sk-spare-provider-secret' }))
          .data.id,
        destination: created(
          await mgmt('POST', '/observability/destinations', {
            type: 'webhook',
            name: 'spare',
            config: { url: 'https://hooks.example.com/spare' },
          }),
        ).data.id,
        workspace: created(await mgmt('POST', '/workspaces', { name: 'Spare', slug: 'spare' })).data.id,
        intern: spareIntern.id,
        file: spareFile,
        response: await storedResponse(),
        conversation: created(await api('POST', '/conversations', {}), 200).id,
        conversationItem: spareConversationItem,
        messageBatch: spareMessageBatch,
        preset: await preset('a1-spare-preset'),
      },
    };
    const markers = [
      guardrail.id,
      key.hash,
      byok.id,
      destination.id,
      workspace.id,
      batch.id,
      messageBatch,
      spareMessageBatch,
      'a1-preset',
      intern.id,
      host,
      secret.value,
      response,
      conversation,
      videoJob,
    ];

    // What the owner reads of every object others target, before and after.
    const snapshotPaths: [typeof api, string][] = [
      [mgmt, `/guardrails/${guardrail.id}`],
      [mgmt, `/guardrails/${guardrail.id}/assignments/keys`],
      [mgmt, `/guardrails/${guardrail.id}/assignments/members`],
      [mgmt, `/keys/${key.hash}`],
      [mgmt, `/byok/${byok.id}`],
      [mgmt, `/observability/destinations/${destination.id}`],
      [mgmt, `/workspaces/${workspace.id}`],
      [mgmt, `/workspaces/${workspace.id}/members`],
      [mgmt, `/workspaces/${workspace.id}/budgets`],
      [api, `/batches/${batch.id}`],
      [api, `/files/${file}`],
      [api, `/messages/batches/${messageBatch}`],
      [api, `/interns/${intern.id}`],
      [api, `/vault/interns/${intern.id}/secrets`],
      [api, '/vault/secrets'],
      [api, `/responses/${response}`],
      [api, `/conversations/${conversation}`],
      [api, `/conversations/${conversation}/items/${conversationItem}`],
    ];
    const snapshot = () =>
      Promise.all(
        snapshotPaths.map(async ([as, path]) => {
          const res = await as('GET', path);
          expect(res.status, `${path} ${res.text}`).toBe(200);
          return res.body;
        }),
      );
    const before = await snapshot();

    // The expiring key must have expired by now.
    const wait = Date.parse(expiring.data.expires_at) - Date.now();
    if (wait > -50) await new Promise((r) => setTimeout(r, wait + 50));

    const headers: Record<Cred, string | null> = {
      none: null,
      malformed: 'Bearer not-a-gatehouse-key',
      basic: `Basic ${gw.apiKey}`,
      unknown: `Bearer sk-gh-v1-${randomBytes(32).toString('hex')}`,
      wrong_admin: `Bearer ${ADMIN_TOKEN.slice(0, -1)}${ADMIN_TOKEN.endsWith('x') ? 'y' : 'x'}`,
      disabled_api: `Bearer ${disabled.key}`,
      expired_api: `Bearer ${expiring.key}`,
      disabled_mgmt: `Bearer ${disabledMgmt}`,
      expired_mgmt: `Bearer ${expiredMgmt}`,
      admin: `Bearer ${ADMIN_TOKEN}`,
      api: `Bearer ${gw.apiKey}`,
      mgmt: `Bearer ${gw.managementKey}`,
      ws_api: `Bearer ${wsKey.key}`,
      org_api: `Bearer ${other.apiKey}`,
      org_mgmt: `Bearer ${other.managementKey}`,
    };

    interface Call {
      label: string;
      base: string;
      method: string;
      path: string;
      cred: Cred;
      body?: unknown;
      want: Answer;
      media: boolean;
    }
    const calls: Call[] = [];
    const owner: Call[] = [];
    for (const [id, row] of Object.entries(ROUTES)) {
      const [method, pattern] = id.split(' ') as [string, string];
      for (const cred of CREDS) {
        const want = expected(id, row, cred);
        const ownerCall =
          (cred === 'mgmt' && row.auth === 'management') ||
          (cred === 'api' && row.auth === 'api') ||
          (cred === 'admin' && row.auth === 'admin');
        const path =
          ownerCall && row.ownerPath
            ? row.ownerPath(fx)
            : (row.path?.(fx, cred) ?? pattern.replace('/api/v1', ''));
        const call: Call = {
          label: `${id} as ${cred}`,
          base: pattern.startsWith('/api/v1') ? `${gw.url}/api/v1` : gw.url,
          method,
          path,
          cred,
          body: row.body?.(fx, cred),
          want,
          media: false,
        };
        // The owner's writes run after the snapshot comparison; its reads run with the rest.
        (ownerCall && method !== 'GET' ? owner : calls).push(call);
      }
    }
    for (const id of mediaRoutes.keys()) {
      const [method] = id.split(' ') as [string, string];
      for (const cred of CREDS)
        calls.push({
          label: `media ${id} as ${cred}`,
          base: media.url,
          method,
          path: mediaPath(id),
          cred,
          body: method === 'POST' ? {} : undefined,
          want: mediaExpected(id, cred),
          media: true,
        });
    }

    const problems: string[] = [];
    const run = async (c: Call) => {
      const got = await send(c.base, c.method, c.path, headers[c.cred], c.body);
      const wrong = mismatch(
        got,
        c.want,
        c.media,
        // Anthropic-format routes (not saving a preset from a Messages body: a management answer).
        /^\/messages(\/|$)/.test(c.path),
        !c.media && /^\/files(\/|$)/.test(c.path),
        c.path,
      );
      if (wrong) problems.push(`${c.label}: ${wrong}`);
      if (FOREIGN.includes(c.cred)) {
        // An id the caller sent may come back in its own error message; any other is a leak.
        const sent = c.path + JSON.stringify(c.body ?? null);
        const leaked = markers.filter((m) => got.text.includes(m) && !sent.includes(m));
        if (leaked.length) {
          figures.leaks++;
          problems.push(`${c.label}: answer carries the owner's ${leaked.join(', ')}`);
        }
      }
    };
    await inChunks(calls.map((c) => () => run(c)));

    // Nothing another tenant (or an invalid credential) did changed the owner's objects.
    const after = await snapshot();
    const changed = snapshotPaths.filter((_, i) => JSON.stringify(before[i]) !== JSON.stringify(after[i]));
    // Feedback on the owner's generation came from the owner's two keys only (the owner's own calls
    // of a route any key may use run with the rest, so it is checked here rather than by snapshot).
    const feedbackBy = await gw.services.db
      .selectFrom('generation_feedback')
      .select('key_hash')
      .where('generation_id', '=', fx.generation)
      .execute();
    expect(feedbackBy.map((r) => r.key_hash).sort()).toEqual(
      [sha256(gw.apiKey), sha256(gw.managementKey)].sort(),
    );

    // Owner controls: each write route does succeed for its owner (reads ran above). Deletes last,
    // on spares; the rest in registration order (assign before remove, provision before suspend).
    const deletes = owner.filter((c) => c.method === 'DELETE');
    for (const c of [...owner.filter((c) => c.method !== 'DELETE'), ...deletes]) await run(c);

    figures.dbs.push(db);
    figures.routes = routes.size;
    figures.mediaRoutes = mediaRoutes.size;
    figures.calls += calls.length + owner.length;
    figures.asserted += calls.length + owner.length;
    figures.unexpected += problems.length;
    figures.crossWrites += changed.length;
    figures.objects = snapshotPaths.length;
    figures.foreignOnOwned += calls.filter(
      (c) =>
        !c.media && FOREIGN.includes(c.cred) && (typeof c.want === 'number' ? c.want : c.want.status) === 404,
    ).length;
    figures.ms += Date.now() - t0;
    expect(problems, 'unexpected answers').toEqual([]);
    expect(
      changed.map(([, p]) => p),
      'objects changed by other tenants',
    ).toEqual([]);
  }, 60_000);

  // The audit sweep, over the calls the matrix above just made: every management, operator and
  // vault write route is in src/audit/actions.ts, and the owner's call of each left its event —
  // the right action, actor and status — with no secret of any call in any event.
  it('left an audit event for the owner’s call of every write route, with every secret masked', async () => {
    const audited = (id: string, r: RouteOptions) => {
      const auth = (r.config as { auth?: string } | undefined)?.auth;
      return (
        !id.startsWith('GET ') &&
        (auth === 'management' || auth === 'admin' || r.url.startsWith('/api/v1/vault/'))
      );
    };
    const writes = [...routes].filter(([id, r]) => audited(id, r)).map(([id]) => id);
    expect(writes.length).toBeGreaterThanOrEqual(30);
    expect(
      writes.filter((id) => !AUDITED[id] && !NOT_AUDITED[id]),
      'write routes missing from src/audit/actions.ts',
    ).toEqual([]);
    expect(
      Object.keys({ ...AUDITED, ...NOT_AUDITED }).filter((id) => !routes.has(id)),
      'src/audit/actions.ts entries without a route',
    ).toEqual([]);

    const rows = await gw.services.db.selectFrom('audit_events').selectAll().execute();
    const actors = {
      management: { kind: 'management_key', id: sha256(gw.managementKey) },
      admin: { kind: 'operator', id: null },
      api: { kind: 'api_key', id: sha256(gw.apiKey) },
    } as const;
    const missing: string[] = [];
    for (const id of writes.filter((w) => AUDITED[w])) {
      const spec = AUDITED[id]!;
      const row = ROUTES[id]!;
      const status = typeof row.ok === 'number' ? row.ok : row.ok.status;
      const actor = actors[row.auth as keyof typeof actors];
      const found = rows.some(
        (e) =>
          e.action === spec.action &&
          e.resource_type === spec.resource &&
          e.actor_kind === actor.kind &&
          e.actor_id === actor.id &&
          e.status === status,
      );
      if (!found) missing.push(`${id}: no ${spec.action} event by ${actor.kind} with status ${status}`);
    }
    expect(missing).toEqual([]);

    // Secrets sent or answered by any call (keys, provider keys, vault values, the operator token).
    const text = JSON.stringify(rows);
    for (const secret of [
      'sk-private-provider-secret',
      'sk-spare-provider-secret',
      'sk-private-intern-secret',
      'v-probe-value',
      'overwritten',
      ADMIN_TOKEN,
      gw.managementKey,
      gw.apiKey,
    ])
      expect(text, 'a secret in the audit log').not.toContain(secret);
    expect(text).not.toMatch(/sk-gh-v1-[0-9a-f]{8}/);
    // Masked, not merely absent: the vault values and provider keys were there to mask.
    const requests = rows.map((e) => JSON.parse(e.request_json ?? 'null'));
    expect(requests.filter((r) => r?.value === '[redacted]').length).toBeGreaterThan(0);
    expect(requests.filter((r) => r?.key === '[redacted]').length).toBeGreaterThan(0);
    // No event of one organization names the other's actor.
    const orgOf = (hash: string) => rows.filter((e) => e.actor_id === hash).map((e) => e.organization_id);
    expect(new Set(orgOf(sha256(gw.managementKey)))).toEqual(new Set([gw.organizationId]));
  });
});

// ---------------------------------------------------------------------------------------------
// Organization roles (owner, admin, member management keys × management writes on own vs others'
// objects). Members manage only the API keys they created; every other management write is for
// owners, admins and keys acting as the organization; nobody attributes a key to another user.

/** Management reads that take their query as a POST body (OpenRouter's analytics query): no write. */
const READS_BY_POST = new Set(['POST /api/v1/analytics/query']);

describe.each(databases)('organization roles on management writes (%s)', (db) => {
  let gw: TestGateway;
  const writes = new Map<string, RouteOptions>();

  beforeAll(async () => {
    gw = await startTestGateway(db, {
      env: { GATEHOUSE_WORKER: 'off' },
      onRoute: (r) => {
        const auth = (r.config as { auth?: string } | undefined)?.auth;
        for (const m of [r.method].flat())
          if (auth === 'management' && m !== 'GET' && m !== 'HEAD' && !READS_BY_POST.has(`${m} ${r.url}`))
            writes.set(`${m} ${r.url}`, r);
      },
    });
  });
  afterAll(() => gw?.stop());

  /** A user of the organization with the role, and a management key of theirs (from the operator). */
  const userWithKey = async (role: 'admin' | 'member') => {
    const admin = adminClient(gw.url);
    const user = await admin('POST', '/admin/users', {
      email: `${role}-${randomBytes(4).toString('hex')}@example.com`,
      organization_id: gw.organizationId,
      role,
    });
    expect(user.status, user.text).toBe(201);
    const key = await admin('POST', '/admin/keys', {
      name: `${role}-mgmt`,
      user_id: user.body.data.id,
      management: true,
    });
    expect(key.status, key.text).toBe(201);
    return { id: user.body.data.id as string, call: client(gw.url, key.body.key) };
  };

  it('declares every management write other than /keys as owners and admins only', () => {
    const open = [...writes]
      .filter(([id]) => !id.includes('/keys') || id.includes('/assignments/'))
      // Sign-out deletes only the calling key, a console sign-in's: every role signs out.
      .filter(([id]) => id !== 'POST /api/v1/auth/sign-out')
      .filter(([, r]) => (r.config as { role?: string }).role !== 'admin')
      .map(([id]) => id);
    expect(writes.size).toBeGreaterThan(15);
    expect(open, 'management writes open to members').toEqual([]);
  });

  it('lets a member manage only the keys they created, attributed to themselves', async () => {
    const owner = client(gw.url, gw.managementKey);
    const api = client(gw.url, gw.apiKey);
    const admin = await userWithKey('admin');
    const member = await userWithKey('member');
    const ownerKey = (await owner('POST', '/keys', { name: 'owner-key', creator_user_id: gw.ownerUserId }))
      .body.data;
    expect(ownerKey.creator_user_id).toBe(gw.ownerUserId);

    // A member's key is theirs, whether creator_user_id is omitted or names them.
    const mine = await member.call('POST', '/keys', { name: 'mine' });
    expect(mine.status, mine.text).toBe(201);
    expect(mine.body.data.creator_user_id).toBe(member.id);
    const named = await member.call('POST', '/keys', { name: 'mine-2', creator_user_id: member.id });
    expect(named.status, named.text).toBe(201);
    expect(named.body.data.creator_user_id).toBe(member.id);

    // Nobody mints a key attributed to someone else, or (as a member) one acting as the organization.
    const orgKey = await adminClient(gw.url)('POST', '/admin/keys', {
      name: 'org-mgmt',
      organization_id: gw.organizationId,
      management: true,
    });
    const asOrg = client(gw.url, orgKey.body.key);
    for (const [as, body] of [
      [member.call, { name: 'x', creator_user_id: gw.ownerUserId }],
      [member.call, { name: 'x', creator_user_id: null }],
      [admin.call, { name: 'x', creator_user_id: member.id }],
      [owner, { name: 'x', creator_user_id: member.id }],
      [asOrg, { name: 'x', creator_user_id: member.id }],
    ] as const) {
      const res = await as('POST', '/keys', body);
      expect(res.status, `${JSON.stringify(body)} ${res.text}`).toBe(403);
      expect(res.body.error).toMatchObject({ code: 403 });
    }
    const orgActing = await admin.call('POST', '/keys', { name: 'org-acting', creator_user_id: null });
    expect(orgActing.status, orgActing.text).toBe(201);
    expect(orgActing.body.data.creator_user_id).toBeNull();
    expect((await asOrg('POST', '/keys', { name: 'by-org' })).body.data.creator_user_id).toBeNull();

    // Not in a workspace the member does not belong to.
    const ws = (await owner('POST', '/workspaces', { name: 'Owners', slug: 'owners-only' })).body.data;
    expect((await member.call('POST', '/keys', { name: 'x', workspace_id: ws.id })).status).toBe(403);
    const keysBefore = (await owner('GET', `/keys?workspace_id=${ws.id}`)).body.data.length;
    expect(keysBefore).toBe(0);

    // The owner's keys (and the organization's) are out of a member's reach: state unchanged.
    for (const hash of [ownerKey.hash, orgActing.body.data.hash, sha256(gw.apiKey)]) {
      expect((await member.call('PATCH', `/keys/${hash}`, { disabled: true })).status).toBe(403);
      expect((await member.call('PATCH', `/keys/${hash}`, { limit: 0 })).status).toBe(403);
      expect((await member.call('DELETE', `/keys/${hash}`)).status).toBe(403);
      const still = await owner('GET', `/keys/${hash}`);
      expect(still.status).toBe(200);
      expect(still.body.data).toMatchObject({ disabled: false, limit: null });
    }
    expect((await api('GET', '/key')).status).toBe(200); // the owner's API key still works

    // Their own keys: yes.
    const patched = await member.call('PATCH', `/keys/${mine.body.data.hash}`, { name: 'renamed', limit: 1 });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.data).toMatchObject({ name: 'renamed', limit: 1 });
    expect((await member.call('DELETE', `/keys/${named.body.data.hash}`)).status).toBe(200);

    // Owners and admins manage others' keys.
    expect((await admin.call('PATCH', `/keys/${mine.body.data.hash}`, { disabled: true })).status).toBe(200);
    expect((await admin.call('PATCH', `/keys/${ownerKey.hash}`, { name: 'by-admin' })).status).toBe(200);
    expect((await owner('DELETE', `/keys/${mine.body.data.hash}`)).status).toBe(200);
    expect((await owner('DELETE', `/keys/${orgActing.body.data.hash}`)).status).toBe(200);
  });

  it('refuses members every other management write, and lets admins make them', async () => {
    const owner = client(gw.url, gw.managementKey);
    const admin = await userWithKey('admin');
    const member = await userWithKey('member');
    const other = await userWithKey('member');
    const g = (await owner('POST', '/guardrails', { name: 'team', allowed_models: ['gatehouse/echo'] })).body
      .data.id;
    const k = (await owner('POST', '/keys', { name: 'assigned' })).body.data.hash;
    await owner('POST', `/guardrails/${g}/assignments/keys`, { key_hashes: [k] });
    await owner('POST', `/guardrails/${g}/assignments/members`, { member_user_ids: [member.id] });
    const w = (await owner('POST', '/workspaces', { name: 'Team', slug: 'team' })).body.data.id;
    await owner('PUT', `/workspaces/${w}/budgets/monthly`, { limit_usd: 5 });
    const b = (await owner('POST', '/byok', { provider: 'openai', key: 'sk-role-test-provider-key' })).body
      .data.id;

    const calls: [string, string, unknown, number][] = [
      ['POST', '/guardrails', { name: 'mine' }, 201],
      ['PATCH', `/guardrails/${g}`, { allowed_models: null }, 200],
      ['POST', `/guardrails/${g}/assignments/keys/remove`, { key_hashes: [k] }, 200],
      ['POST', `/guardrails/${g}/assignments/keys`, { key_hashes: [k] }, 200],
      ['POST', `/guardrails/${g}/assignments/members/remove`, { member_user_ids: [member.id] }, 200],
      ['POST', `/guardrails/${g}/assignments/members`, { member_user_ids: [other.id] }, 200],
      ['POST', '/workspaces', { name: 'Mine', slug: 'mine' }, 201],
      ['PATCH', `/workspaces/${w}`, { name: 'Renamed' }, 200],
      ['POST', `/workspaces/${w}/members/add`, { user_ids: [member.id] }, 200],
      ['POST', `/workspaces/${w}/members/remove`, { user_ids: [gw.ownerUserId] }, 200],
      ['POST', `/workspaces/${w}/webhook-secret`, undefined, 201],
      ['DELETE', `/workspaces/${w}/webhook-secret`, undefined, 200],
      ['PUT', `/workspaces/${w}/budgets/monthly`, { limit_usd: 1000 }, 200],
      ['POST', '/byok', { provider: 'anthropic', key: 'sk-member-provider-key' }, 201],
      ['PATCH', `/byok/${b}`, { disabled: true }, 200],
      ['DELETE', `/workspaces/${w}/budgets/monthly`, undefined, 200],
      ['DELETE', `/byok/${b}`, undefined, 200],
      ['DELETE', `/guardrails/${g}`, undefined, 200],
      ['DELETE', `/workspaces/${w}`, undefined, 200],
    ];
    const state = async () =>
      Promise.all(
        [
          `/guardrails/${g}`,
          `/guardrails/${g}/assignments/keys`,
          `/guardrails/${g}/assignments/members`,
          '/guardrails',
          `/workspaces/${w}`,
          `/workspaces/${w}/members`,
          `/workspaces/${w}/budgets`,
          '/workspaces',
          `/byok/${b}`,
          '/byok',
        ].map(async (p) => (await owner('GET', p)).text),
      );
    const before = await state();
    for (const [method, path, body] of calls) {
      const res = await member.call(method, path, body);
      expect(res.status, `member ${method} ${path}: ${res.text}`).toBe(403);
      expect(res.body).toEqual({
        error: { code: 403, message: 'Only organization owners and admins can perform this operation' },
      });
    }
    expect(await state()).toEqual(before);
    // Members still read.
    for (const p of ['/guardrails', '/workspaces', '/byok', `/workspaces/${w}/budgets`])
      expect((await member.call('GET', p)).status).toBe(200);
    for (const [method, path, body, status] of calls) {
      const res = await admin.call(method, path, body);
      expect(res.status, `admin ${method} ${path}: ${res.text}`).toBe(status);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Intern ownership: inside one workspace, an intern is its owner's. Its owner and the workspace's
// administrators (organization owners and admins) act on it; another member gets 404 on every
// route naming it (existence not revealed) and does not see it listed; a key acting as the
// organization (no user) reads it but every write is 403 `no_acting_user`.

describe.each(databases)('intern ownership matrix (%s)', (db) => {
  let gw: TestGateway;

  beforeAll(async () => {
    // Slow provisioning: provision/suspend controls never start a runtime.
    gw = await startTestGateway(db, { env: { GATEHOUSE_INTERNS_STEP_DELAY_MS: '20000' } });
  });
  afterAll(async () => {
    await gw?.stop();
  });

  type Actor = 'owner' | 'member' | 'admin' | 'userless';
  const ACTORS: Actor[] = ['member', 'userless', 'admin', 'owner'];

  it('lets only the owner and administrators act on an intern; others get 404, userless keys 403 no_acting_user', async () => {
    const admin = adminClient(gw.url);
    const userKey = async (name: string, role: 'member' | 'admin') => {
      const user = await admin('POST', '/admin/users', {
        email: `${name}-${randomBytes(3).toString('hex')}@example.com`,
        organization_id: gw.organizationId,
        role,
        interns_programme: true,
      });
      expect(user.status, user.text).toBe(201);
      const key = await admin('POST', '/admin/keys', { name, user_id: user.body.data.id });
      expect(key.status, key.text).toBe(201);
      return key.body.key as string;
    };
    const orgKey = await admin('POST', '/admin/keys', { name: 'org', organization_id: gw.organizationId });
    expect(orgKey.status, orgKey.text).toBe(201);
    const as: Record<Actor, ReturnType<typeof client>> = {
      owner: client(gw.url, await userKey('alice', 'member')),
      member: client(gw.url, await userKey('bob', 'member')),
      admin: client(gw.url, await userKey('dave', 'admin')),
      userless: client(gw.url, orgKey.body.key),
    };

    const intern = (await as.owner('POST', '/interns', { name: 'alices', description: 'mine' })).body;
    expect(intern.status).toBe('stopped');
    const secret = { value: 'sk-alice-only', hosts: ['alice.example.com'] };
    expect((await as.owner('PUT', `/vault/interns/${intern.id}/secrets/alice_key`, secret)).status).toBe(200);
    expect((await as.owner('PUT', '/vault/secrets/shared_key', secret)).status).toBe(200);

    const NO_USER = { status: 403, code: 'no_acting_user' };
    const HIDDEN = { status: 404, code: 'not_found' };
    const CHAT_HIDDEN = { status: 404, code: 404 };
    const VAULT_HIDDEN = { status: 404, code: 404 };
    const VAULT_NO_USER = { status: 403, code: 403 };
    const chatBody = { stream: true, messages: [{ role: 'user', content: 'hi' }] };
    // [label, method, path, body, answer per actor]; run in order, each actor in ACTORS order.
    const rows: [
      string,
      string,
      string,
      unknown,
      Record<Actor, { status: number; code: string | number }>,
    ][] = [
      [
        'get',
        'GET',
        `/interns/${intern.id}`,
        undefined,
        {
          owner: { status: 200, code: 200 },
          member: HIDDEN,
          admin: { status: 200, code: 200 },
          userless: { status: 200, code: 200 },
        },
      ],
      [
        'patch',
        'PATCH',
        `/interns/${intern.id}`,
        { description: 'changed' },
        {
          owner: { status: 200, code: 200 },
          member: HIDDEN,
          admin: { status: 200, code: 200 },
          userless: NO_USER,
        },
      ],
      [
        'provision',
        'POST',
        `/interns/${intern.id}/provision`,
        undefined,
        {
          owner: { status: 202, code: 202 },
          member: HIDDEN,
          admin: { status: 202, code: 202 },
          userless: NO_USER,
        },
      ],
      [
        'suspend',
        'POST',
        `/interns/${intern.id}/suspend`,
        undefined,
        {
          owner: { status: 200, code: 200 },
          member: HIDDEN,
          admin: { status: 200, code: 200 },
          userless: NO_USER,
        },
      ],
      // Not running: 409 intern_not_ready once past the ownership checks.
      [
        'chat',
        'POST',
        `/interns/${intern.id}/chat/completions`,
        chatBody,
        {
          owner: { status: 409, code: 409 },
          member: CHAT_HIDDEN,
          admin: { status: 409, code: 409 },
          userless: { status: 403, code: 403 },
        },
      ],
      [
        'vault list',
        'GET',
        `/vault/interns/${intern.id}/secrets`,
        undefined,
        {
          owner: { status: 200, code: 200 },
          member: VAULT_HIDDEN,
          admin: { status: 200, code: 200 },
          userless: { status: 200, code: 200 },
        },
      ],
      [
        'vault put',
        'PUT',
        `/vault/interns/${intern.id}/secrets/alice_key`,
        secret,
        {
          owner: { status: 200, code: 200 },
          member: VAULT_HIDDEN,
          admin: { status: 200, code: 200 },
          userless: VAULT_NO_USER,
        },
      ],
      [
        'vault copy',
        'POST',
        `/vault/interns/${intern.id}/secrets/copy`,
        { names: ['shared_key'] },
        {
          owner: { status: 200, code: 200 },
          member: VAULT_HIDDEN,
          admin: { status: 200, code: 200 },
          userless: VAULT_NO_USER,
        },
      ],
      [
        'workspace vault put',
        'PUT',
        '/vault/secrets/shared_key',
        secret,
        {
          owner: { status: 200, code: 200 },
          member: { status: 200, code: 200 },
          admin: { status: 200, code: 200 },
          userless: VAULT_NO_USER,
        },
      ],
      [
        'vault delete',
        'DELETE',
        `/vault/interns/${intern.id}/secrets/shared_key`,
        undefined,
        {
          owner: { status: 404, code: 404 }, // the admin deleted it just before
          member: VAULT_HIDDEN,
          admin: { status: 204, code: 204 },
          userless: VAULT_NO_USER,
        },
      ],
    ];
    const problems: string[] = [];
    const check = (
      label: string,
      res: { status: number; body: any; text: string },
      want: { status: number; code: string | number },
    ) => {
      const code = res.status >= 400 ? res.body?.error?.code : res.status;
      if (res.status !== want.status || code !== want.code)
        problems.push(`${label}: ${res.status} ${res.text.slice(0, 160)} (want ${want.status} ${want.code})`);
      // No refusal reveals the intern's secrets or the owner's description.
      if (res.status >= 400 && /alice\.example\.com|sk-alice-only/.test(res.text))
        problems.push(`${label}: leak`);
    };
    for (const [label, method, path, body, want] of rows) {
      for (const actor of ACTORS)
        check(`${label} as ${actor}`, await as[actor](method, path, body), want[actor]);
    }

    // The list: the owner's own for members, everything for administrators and the organization.
    const listed = async (actor: Actor) =>
      ((await as[actor]('GET', '/interns')).body.data as { id: string }[]).map((i) => i.id);
    expect(await listed('owner')).toContain(intern.id);
    expect(await listed('member')).not.toContain(intern.id);
    expect(await listed('admin')).toContain(intern.id);
    expect(await listed('userless')).toContain(intern.id);

    // Another member cannot lend themselves the owner's vault (its secrets) through vault_id.
    const borrow = await as.member('POST', '/interns', { name: 'borrower', vault_id: intern.vault_id });
    expect(borrow.status, borrow.text).toBe(409);
    expect(borrow.body.error.code).toBe('vault_not_attachable');

    // Nothing the member or the userless key tried changed the intern; delete goes last.
    for (const actor of ['member', 'userless'] as const) {
      const del = await as[actor]('DELETE', `/interns/${intern.id}`, {});
      check(`delete as ${actor}`, del, actor === 'member' ? HIDDEN : NO_USER);
    }
    const after = await as.owner('GET', `/interns/${intern.id}`);
    expect(after.body.description).toBe('changed'); // the owner's and the admin's PATCH only
    expect(after.body.status).toBe('stopped');
    expect(problems).toEqual([]);
    expect((await as.admin('DELETE', `/interns/${intern.id}`, {})).status).toBe(202);
  }, 60_000);
});
