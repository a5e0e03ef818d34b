import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { conflict } from '../lib/errors.js';
import { sendError } from '../server/errors.js';
import type { Router } from '../server/router.js';
import { errors, Nullable } from '../server/schemas.js';
import type { Services } from '../services.js';
import { LOGIN_COOKIE, LOGIN_TTL_SECONDS, type OidcSignIn, SignInRefused } from './oidc.service.js';
import { SignInSweeper, signOutKey } from './oidc.sessions.js';

export interface OidcRouteDeps {
  /** null when GATEHOUSE_OIDC_ISSUER is not set: the browser routes answer 404. */
  oidc: OidcSignIn | null;
}

const LOGIN_PATH = '/console/oidc/login';
const COOKIE_PATH = '/console/oidc/';
/** The refusal pages are whole documents of their own: nothing to load, nothing to run. */
const PAGE_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};
const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ENTITIES[c] ?? c);

/** A short page for the browser (why the sign-in stopped, and the way back); the error envelope for anything else. */
function page(req: FastifyRequest, reply: FastifyReply, status: number, title: string, message: string) {
  reply.header('cache-control', 'no-store');
  if (!(req.headers.accept ?? '').includes('text/html')) return sendError(reply, status, message);
  return reply
    .code(status)
    .header('content-security-policy', PAGE_CSP)
    .header('referrer-policy', 'no-referrer')
    .type('text/html; charset=utf-8')
    .send(
      `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>\n` +
        `<body><h1>${escapeHtml(title)}</h1>\n<p>${escapeHtml(message)}</p>\n` +
        `<p><a href="../">Back to the console sign-in</a></p></body></html>\n`,
    );
}

function cookieOf(req: FastifyRequest, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

function loginCookie(oidc: OidcSignIn, value: string, maxAge: number) {
  // Lax: the provider's redirect back is a top-level GET, which carries it.
  const secure = oidc.secureCookie ? '; Secure' : '';
  return `${LOGIN_COOKIE}=${value}; Path=${COOKIE_PATH}; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${secure}`;
}

const notConfigured = (req: FastifyRequest, reply: FastifyReply) =>
  page(
    req,
    reply,
    404,
    'Not configured',
    'Sign-in with an identity provider is not configured on this gateway.',
  );

/**
 * The browser side of the sign-in, beside the console (not JSON, not in the API document):
 * `login` sends the browser to the provider, `callback` is where it comes back.
 */
export async function oidcBrowserRoutes(app: Router, { oidc }: OidcRouteDeps) {
  const schema = { hide: true };

  app.get(LOGIN_PATH, { schema }, async (req, reply) => {
    if (!oidc) return notConfigured(req, reply);
    try {
      const { url, cookie } = await oidc.begin();
      reply.header('set-cookie', loginCookie(oidc, cookie, LOGIN_TTL_SECONDS));
      reply.header('cache-control', 'no-store');
      return reply.redirect(url, 302);
    } catch (err) {
      if (err instanceof SignInRefused) return page(req, reply, err.status, 'Sign-in failed', err.message);
      throw err;
    }
  });

  app.get('/console/oidc/callback', { schema }, async (req, reply) => {
    if (!oidc) return notConfigured(req, reply);
    // The login cookie is spent whatever happens: a callback is answered once.
    reply.header('set-cookie', loginCookie(oidc, '', 0));
    const q = req.url.indexOf('?');
    try {
      const signed = await oidc.finish(q === -1 ? '' : req.url.slice(q + 1), cookieOf(req, LOGIN_COOKIE), {
        requestId: req.id,
        ip: req.ip,
      });
      // The key goes in the fragment: browsers never send it to a server, so no access log or
      // Referer holds it; the console reads it at once and removes it from the address bar.
      const fragment = new URLSearchParams({
        oidc_key: signed.key,
        email: signed.email,
        role: signed.role,
      });
      reply.header('cache-control', 'no-store');
      reply.header('referrer-policy', 'no-referrer');
      return reply.redirect(`${oidc.consoleUrl()}#${fragment}`, 302);
    } catch (err) {
      if (err instanceof SignInRefused) return page(req, reply, err.status, 'Sign-in refused', err.message);
      throw err;
    }
  });
}

const AuthConfig = Type.Object({
  oidc: Nullable(
    Type.Object({
      name: Type.String({ description: 'The identity provider, as the sign-in button names it' }),
      login_url: Type.String({ description: 'Where the browser starts the sign-in' }),
    }),
  ),
});

/** The JSON side: what the console's sign-in page offers, and sign-out. */
export async function authRoutes(
  app: Router,
  { oidc, db, keys, config, log }: Pick<Services, 'oidc' | 'db' | 'keys' | 'config' | 'log'>,
) {
  const tags = ['Console sign-in'];
  // Expired sign-in keys go even when no one signs in again (and when OIDC was turned off since).
  const sweeper = new SignInSweeper({ db, keys, log: log.child({ component: 'oidc' }) });
  sweeper.start();
  app.addHook('onClose', async () => sweeper.stop());
  app.get(
    '/auth/config',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        summary: 'How the console may sign in (public)',
        response: { 200: AuthConfig },
      },
    },
    async () => ({ oidc: oidc ? { name: oidc.name, login_url: LOGIN_PATH } : null }),
  );

  app.post(
    '/auth/sign-out',
    {
      config: { auth: 'management' },
      schema: {
        tags,
        summary: 'End a console sign-in: deletes the calling key, which must be one a sign-in created',
        response: {
          200: Type.Object({
            signed_out: Type.Literal(true),
            end_session_url: Nullable(
              Type.String({
                description:
                  "Where to send the browser to end the session at the identity provider too (its end_session_endpoint, which sends it back to the console); null when the provider has none, or this gateway's sign-out stands alone",
              }),
            ),
          }),
          ...errors(401, 403, 409),
        },
      },
    },
    async (req, reply) => {
      const out = await signOutKey(db, keys, config.masterKey, req.caller);
      if (!out) throw conflict('This key was not created by a console sign-in; it stays');
      reply.header('cache-control', 'no-store'); // the URL carries the sign-in's ID token
      return {
        signed_out: true as const,
        end_session_url: oidc ? await oidc.endSessionUrl(out.idToken) : null,
      };
    },
  );
}
