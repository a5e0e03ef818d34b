/**
 * `GET /`: what someone opening the gateway's address finds — one static HTML page (no script,
 * no external assets, a strict Content-Security-Policy) linking the console, the API reference, the
 * OpenAPI document, the health checks and the media service; or, for a client asking for
 * `application/json`, the same links as a small index.
 */

import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Router } from './router.js';

/** The paths the page links, also the JSON index's `links` (the media URL when known). */
export function landingLinks(mediaUrl: string | null) {
  return {
    console: '/console',
    api_reference: '/docs',
    openapi: '/api/v1/openapi.json',
    health: '/health',
    ready: '/ready',
    media: mediaUrl ? `${mediaUrl}/` : null,
    media_api_reference: mediaUrl ? `${mediaUrl}/docs` : null,
  };
}

const STYLE = `
*{box-sizing:border-box}
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
main{max-width:720px;margin:0 auto;padding:32px 20px}
h1{font-size:26px;margin:0 0 4px}
h2{font-size:17px;margin:28px 0 8px}
p{margin:0 0 12px}
ul{list-style:none;margin:0;padding:0}
li{background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:12px 14px;margin:0 0 10px}
a{color:#1f4fc4;font-weight:600}
a:focus-visible{outline:3px solid #1f4fc4;outline-offset:2px;border-radius:2px}
.what{display:block;color:#4a5160;font-size:14px;margin-top:2px}
code{font:14px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#eceff3;padding:1px 4px;border-radius:4px}
@media (prefers-color-scheme:dark){body{background:#14171c;color:#e6e8eb}li{background:#1d2128;border-color:#323844}a{color:#8fb3ff}a:focus-visible{outline-color:#8fb3ff}.what{color:#b3b9c4}code{background:#2a3039}}
`;

const sha256 = (s: string) => `'sha256-${createHash('sha256').update(s).digest('base64')}'`;

/** Nothing but the page's own inline style (and the empty data: icon, which spares a /favicon.ico 404). */
const CSP = [
  "default-src 'none'",
  `style-src ${sha256(STYLE)}`,
  'img-src data:',
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const escapeHtml = (s: string) =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  );

function item(href: string, label: string, what: string): string {
  return `<li><a href="${escapeHtml(href)}">${label}</a><span class="what">${what}</span></li>`;
}

export function renderLanding(mediaUrl: string | null): string {
  const links = landingLinks(mediaUrl);
  const media =
    links.media && links.media_api_reference
      ? item(
          links.media,
          'Media service',
          'Image and video generation: a page to try the routes, and its own ' +
            `<a href="${escapeHtml(links.media_api_reference)}">API reference</a>.`,
        )
      : '<li><strong>Media service</strong><span class="what">Image and video generation runs as a ' +
        'separate service on its own port (<code>MEDIA_PORT</code>, 8081 by default), with a page to ' +
        'try the routes at its <code>/</code> and its API reference at <code>/docs</code>. Set ' +
        '<code>GATEHOUSE_MEDIA_PUBLIC_URL</code> to link it here.</span></li>';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>Gatehouse</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>
<main>
<h1>Gatehouse</h1>
<p>A self-hosted model gateway: one API in front of many model providers, with keys, usage limits,
credits, guardrails, batches and interns around it.</p>
<nav aria-label="Gatehouse pages">
<h2>Start here</h2>
<ul>
${item(links.console, 'Console', 'Manage organizations, workspaces, API keys, credits and usage in the browser.')}
${item(links.api_reference, 'API reference', 'Every endpoint with its parameters, request bodies and answers.')}
${item(links.openapi, 'OpenAPI document', 'The same reference as an OpenAPI 3.1 JSON document, for client generators.')}
${media}
</ul>
<h2>Health</h2>
<ul>
${item(links.health, 'Liveness', 'Answers <code>{"status":"ok"}</code> while the process runs.')}
${item(links.ready, 'Readiness', 'Answers 200 when the database is reachable, 503 when not.')}
</ul>
</nav>
</main>
</body>
</html>
`;
}

/** A client that asks for JSON and not HTML (browsers always name text/html). */
function wantsJson(req: FastifyRequest): boolean {
  const accept = req.headers.accept ?? '';
  return /\bapplication\/json\b/i.test(accept) && !/\btext\/html\b/i.test(accept);
}

/** Registers `GET /` (public). */
export function landingPage(app: Router, mediaUrl: string | null): void {
  const html = renderLanding(mediaUrl);
  const index = { name: 'Gatehouse', links: landingLinks(mediaUrl) };
  app.get('/', { schema: { hide: true } }, async (req, reply) => {
    reply.header('vary', 'accept').header('cache-control', 'no-cache');
    if (wantsJson(req)) return reply.send(index);
    return reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', CSP)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .send(html);
  });
}
