/**
 * The web console (console/, built by `npm run build:console` into dist/console) at /console/.
 * It lives in src/server rather than src/console so the server build (dist/) and the console build
 * (dist/console) never write into one folder.
 *
 * Every /console/* path that is not an asset answers index.html: the console routes in the browser,
 * so a deep link or a reload lands on the right page. Hashed assets are cached for good, index.html
 * never without asking. Public (the console asks for a key itself), and not in the OpenAPI document.
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sendError } from './errors.js';

/** No inline script or style, nothing from another origin, never framed. */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

/** dist/console of this checkout or package (src/server and dist/server are both two levels down). */
const DEFAULT_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../../dist/console');

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Console not built</title></head>
<body><h1>The console is not built</h1>
<p>This gateway was started without the console's files. Run <code>npm run build</code> (or
<code>npm start</code>, which builds first), then restart the gateway.</p></body></html>
`;

/** Serves the built console from `consoleDir` (GATEHOUSE_CONSOLE_DIR: another build; tests point it elsewhere). */
export async function installConsole(app: FastifyInstance, consoleDir: string | undefined) {
  const dir = resolve(consoleDir || DEFAULT_DIR);
  const built = existsSync(join(dir, 'index.html'));

  await app.register(async (scope) => {
    scope.addHook('onSend', (_req, reply, payload, done) => {
      reply.header('content-security-policy', CONSOLE_CSP);
      reply.header('x-content-type-options', 'nosniff');
      reply.header('referrer-policy', 'no-referrer');
      done(null, payload);
    });
    if (built) await scope.register(fastifyStatic, { root: dir, serve: false });
    const schema = { hide: true };

    scope.get('/console', { schema }, (_req, reply) => reply.redirect('/console/', 301));

    scope.get('/console/assets/*', { schema }, (req, reply) => {
      if (!built) return notBuilt(req, reply);
      const assets = join(dir, 'assets');
      const file = resolve(assets, (req.params as { '*': string })['*']);
      if (!file.startsWith(assets + sep) || !existsSync(file))
        return sendError(reply, 404, 'No such console file');
      // Names carry their content hash: a new build makes new names.
      return reply.sendFile(file.slice(assets.length + 1), assets, { maxAge: '365d', immutable: true });
    });

    scope.get('/console/*', { schema }, (req, reply) => {
      if (!built) return notBuilt(req, reply);
      reply.header('cache-control', 'no-cache');
      return reply.sendFile('index.html', dir, { cacheControl: false });
    });
  });
}

/** A page for a browser, the usual error envelope for anything else. */
function notBuilt(req: FastifyRequest, reply: FastifyReply) {
  reply.header('cache-control', 'no-store');
  if (!(req.headers.accept ?? '').includes('text/html'))
    return sendError(reply, 503, 'The console is not built: run `npm run build`, then restart the gateway');
  return reply.code(503).type('text/html; charset=utf-8').send(NOT_BUILT);
}
