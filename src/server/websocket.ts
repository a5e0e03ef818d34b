import websocket from '@fastify/websocket';
import type { FastifyInstance } from 'fastify';
import { sendError } from './errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route upgrades to a WebSocket (its `wsHandler`); an upgrade to any other route is a 404. */
    upgrade?: true;
  }
}

/**
 * WebSocket upgrades (`@fastify/websocket`) through the routes and their hooks, authentication
 * included, like any request: only a route declaring `config.upgrade` opens a socket. Installed
 * before the other hooks, so that every upgrade is marked before a hook answers it (a 401): the
 * socket of a refused upgrade is closed once that answer is sent. A message is bounded as the
 * route's HTTP body is (`maxPayload`: larger closes the socket, 1009). The routes close their own
 * sockets on shutdown.
 */
export async function installWebsocket(app: FastifyInstance, maxPayload: number): Promise<void> {
  await app.register(websocket, { options: { maxPayload }, preClose: (done) => done() });
  // Callback style (an async hook costs a promise per request).
  app.addHook('onRequest', (request, reply, done) => {
    if (!request.ws || request.routeOptions.config?.upgrade) return done();
    sendError(reply, 404, `Route ${request.method} ${request.url.split('?')[0]} does not open a WebSocket`);
  });
}
