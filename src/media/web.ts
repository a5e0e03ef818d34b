/**
 * The media service's web page: `GET /` is one self-contained HTML page (inline CSS and JS, no
 * external assets, no build step) where a person types a prompt, picks a route, sets that route's
 * parameters and sees the generated image or animation. `GET /api/routes` lists the configured
 * routes with their parameters (the page builds its controls from it). The page sends JSON, or
 * multipart/form-data when a file is chosen for an `image` parameter; an optional API key (kept in
 * sessionStorage) goes out as `Authorization: Bearer`.
 */

import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { MediaConfig } from './config.js';
import { PROMPT_MAX_LENGTH } from './config.js';
import type { MediaRoute, ParamSpec } from './types.js';

/** A route as `GET /api/routes` lists it. */
export interface RouteListing {
  kind: MediaRoute['kind'];
  name: string;
  path: string;
  description: string | null;
  requires_image: boolean;
  params: ({ name: string } & ParamSpec)[];
}

export function listRoutes(routes: readonly MediaRoute[]): RouteListing[] {
  return routes.map((r) => ({
    kind: r.kind,
    name: r.name,
    path: `/api/${r.kind}/${r.name}`,
    description: r.description ?? null,
    requires_image: r.requiresImage === true,
    params: Object.entries(r.params).map(([name, spec]) => ({ name, ...spec })),
  }));
}

const STYLE = `
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
main{max-width:980px;margin:0 auto;padding:20px}
h1{font-size:20px;margin:0 0 4px}
#status{font-size:13px;color:#555;margin-bottom:16px}
#status .dot{display:inline-block;width:9px;height:9px;border-radius:50%;background:#aaa;margin-right:6px}
#status.online .dot{background:#2a9d4b}
#status.offline .dot{background:#c0392b}
.grid{display:grid;grid-template-columns:minmax(280px,380px) 1fr;gap:20px}
@media (max-width:760px){.grid{grid-template-columns:1fr}}
form,.out{background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:16px}
label{display:block;font-size:13px;font-weight:600;margin:10px 0 4px}
label.check{display:flex;gap:6px;align-items:center;font-weight:600}
textarea,select,input[type=number],input[type=text],input[type=password],input[type=url]{width:100%;padding:7px 8px;border:1px solid #c6ccd5;border-radius:6px;font:inherit;background:#fff}
textarea{min-height:96px;resize:vertical}
.hint{font-size:12px;color:#667;font-weight:400}
[aria-invalid=true]{border-color:#c0392b!important;outline:2px solid #f3c1bb}
button{margin-top:14px;width:100%;padding:9px;border:0;border-radius:6px;background:#2456d6;color:#fff;font:inherit;font-weight:600;cursor:pointer}
button:disabled{background:#8ea4dc;cursor:wait}
#error{display:none;margin-top:12px;padding:8px 10px;border-radius:6px;background:#fdecea;color:#8e1f14;font-size:14px}
#error.shown{display:block}
#progress{font-size:13px;color:#555;min-height:1.2em}
#result img,#result video{max-width:100%;height:auto;display:block;margin:8px 0;border-radius:6px;background:#eee}
#result a{font-size:12px;word-break:break-all}
details{margin-top:12px;font-size:13px}
`;

const SCRIPT = `
(() => {
  const $ = (id) => document.getElementById(id);
  const KEY = 'gatehouse-media-api-key';
  let routes = [];
  const keyInput = $('apikey');
  keyInput.value = sessionStorage.getItem(KEY) || '';
  keyInput.addEventListener('input', () => {
    if (keyInput.value) sessionStorage.setItem(KEY, keyInput.value);
    else sessionStorage.removeItem(KEY);
  });
  const authHeaders = () => (keyInput.value ? { authorization: 'Bearer ' + keyInput.value } : {});
  const needKey = (msg) => {
    $('auth').open = true;
    keyInput.setAttribute('aria-invalid', 'true');
    showError(msg || 'This service needs an API key: enter it under "API key".');
  };

  function showError(message, field) {
    const box = $('error');
    box.textContent = field ? message + ' (field: ' + field + ')' : message;
    box.dataset.field = field || '';
    box.className = 'shown';
    if (field) {
      const el = document.querySelector('[name="' + CSS.escape(field) + '"]');
      if (el) { el.setAttribute('aria-invalid', 'true'); el.focus(); }
    }
  }
  function clearError() {
    const box = $('error');
    box.textContent = '';
    box.dataset.field = '';
    box.className = '';
    for (const el of document.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
  }

  async function refreshStatus() {
    const el = $('status');
    try {
      const res = await fetch('api/status', { headers: authHeaders() });
      const s = await res.json();
      if (!res.ok) throw new Error(s && s.message ? s.message : 'HTTP ' + res.status);
      el.className = s.status === 'online' ? 'online' : 'offline';
      const median = s.median_generation_ms == null ? 'no generations yet'
        : 'median generation ' + (s.median_generation_ms / 1000).toFixed(1) + ' s over the last ' + Math.min(s.generations, 100);
      el.lastChild.textContent = (s.status || 'unknown') + ' · ' + median;
    } catch (err) {
      el.className = 'offline';
      el.lastChild.textContent = 'offline (' + err.message + ')';
    }
  }

  function control(p) {
    const wrap = document.createElement('div');
    const label = document.createElement('label');
    const id = 'p-' + p.name;
    label.htmlFor = id;
    label.textContent = p.name + (p.required ? ' *' : '');
    let input;
    if (p.type === 'boolean') {
      input = document.createElement('input');
      input.type = 'checkbox';
      input.checked = p.default === true;
      label.className = 'check';
      label.textContent = '';
      label.append(input, document.createTextNode(p.name));
      input.id = id;
      input.name = p.name;
      input.dataset.type = p.type;
      wrap.append(label);
      return wrap;
    }
    if (p.enum) {
      input = document.createElement('select');
      if (p.default === undefined) {
        const none = document.createElement('option');
        none.value = '';
        none.textContent = p.required ? '(choose)' : '(not set)';
        input.append(none);
      }
      for (const v of p.enum) {
        const o = document.createElement('option');
        o.value = String(v);
        o.textContent = String(v) + (v === p.default ? ' (default)' : '');
        if (v === p.default) o.selected = true;
        input.append(o);
      }
    } else if (p.type === 'integer') {
      input = document.createElement('input');
      input.type = 'number';
      input.step = '1';
      if (p.min !== undefined) input.min = String(p.min);
      if (p.max !== undefined) input.max = String(p.max);
      if (p.default !== undefined) input.value = String(p.default);
    } else if (p.type === 'image') {
      input = document.createElement('input');
      input.type = 'file';
      input.accept = 'image/png,image/jpeg,image/webp,image/gif';
      const hint = document.createElement('span');
      hint.className = 'hint';
      hint.textContent = p.name === 'mask' ? ' PNG with transparency: where the picture is edited' : ' PNG, JPEG, WebP or GIF';
      label.append(hint);
    } else if (p.type === 'image_urls') {
      input = document.createElement('textarea');
      input.rows = 2;
      input.placeholder = 'https://… one image URL per line';
      const hint = document.createElement('span');
      hint.className = 'hint';
      hint.textContent = ' ' + (p.minItems ? 'at least ' + p.minItems + ', ' : '') + (p.maxItems ? 'at most ' + p.maxItems : '');
      label.append(hint);
    } else {
      input = document.createElement('input');
      input.type = 'text';
      if (p.maxLength) input.maxLength = p.maxLength;
      if (p.default !== undefined) input.value = String(p.default);
    }
    input.id = id;
    input.name = p.name;
    input.dataset.type = p.type;
    wrap.append(label, input);
    return wrap;
  }

  function showRoute() {
    const r = routes[Number($('route').value)];
    const box = $('params');
    box.replaceChildren();
    $('route-desc').textContent = r ? (r.description || '') : '';
    if (!r) return;
    for (const p of r.params) box.append(control(p));
  }

  async function loadRoutes() {
    try {
      const res = await fetch('api/routes', { headers: authHeaders() });
      const body = await res.json();
      if (res.status === 401) return needKey(body.message);
      if (!res.ok) throw new Error(body && body.message ? body.message : 'HTTP ' + res.status);
      routes = body.routes;
      const select = $('route');
      select.replaceChildren();
      routes.forEach((r, i) => {
        const o = document.createElement('option');
        o.value = String(i);
        o.dataset.path = r.path;
        o.textContent = r.kind + ' / ' + r.name;
        select.append(o);
      });
      showRoute();
      document.body.dataset.ready = 'true';
    } catch (err) {
      showError('Could not load the routes: ' + err.message);
    }
  }

  /** The request body: JSON, or FormData when a file was chosen. */
  function body(r) {
    const prompt = $('prompt').value;
    const values = [];
    let file = false;
    for (const p of r.params) {
      const el = document.querySelector('#params [name="' + CSS.escape(p.name) + '"]');
      if (!el) continue;
      if (p.type === 'boolean') values.push([p.name, el.checked]);
      else if (p.type === 'image') {
        if (el.files && el.files[0]) { values.push([p.name, el.files[0]]); file = true; }
      } else if (p.type === 'image_urls') {
        const urls = el.value.split(/[\\s,]+/).filter(Boolean);
        if (urls.length) values.push([p.name, urls]);
      } else if (el.value !== '') values.push([p.name, p.type === 'integer' ? Number(el.value) : el.value]);
    }
    if (file) {
      const form = new FormData();
      form.append('prompt', prompt);
      for (const [k, v] of values) {
        if (Array.isArray(v)) for (const u of v) form.append(k, u);
        else if (v instanceof File) form.append(k, v, v.name);
        else form.append(k, String(v));
      }
      return { body: form, headers: {} };
    }
    const json = { prompt };
    for (const [k, v] of values) json[k] = v;
    return { body: JSON.stringify(json), headers: { 'content-type': 'application/json' } };
  }

  function showOutputs(outputs) {
    const box = $('result');
    box.replaceChildren();
    for (const o of outputs) {
      const ext = (o.key.split('.').pop() || '').toLowerCase();
      let media;
      if (['mp4', 'webm', 'mov', 'ogv'].includes(ext)) {
        media = document.createElement('video');
        media.controls = true; media.autoplay = true; media.loop = true; media.muted = true; media.playsInline = true;
      } else {
        media = document.createElement('img');
        media.alt = $('prompt').value;
      }
      media.src = o.url;
      const link = document.createElement('a');
      link.href = o.url;
      link.target = '_blank';
      link.rel = 'noopener';
      link.textContent = o.key;
      box.append(media, link);
    }
  }

  $('route').addEventListener('change', () => { clearError(); showRoute(); });
  $('form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const r = routes[Number($('route').value)];
    if (!r) return;
    clearError();
    const button = $('generate');
    button.disabled = true;
    const started = performance.now();
    const tick = setInterval(() => {
      $('progress').textContent = 'Generating… ' + ((performance.now() - started) / 1000).toFixed(0) + ' s';
    }, 500);
    $('progress').textContent = 'Generating…';
    // What the progress line says once the request is over: the outcome, or nothing after an error
    // (which the error box shows).
    let outcome = '';
    try {
      const req = body(r);
      const res = await fetch(r.path.slice(1), { method: 'POST', body: req.body, headers: { ...req.headers, ...authHeaders() } });
      let answer = null;
      try { answer = await res.json(); } catch {}
      if (res.status === 401) return needKey(answer && answer.message);
      if (!answer || answer.success !== true) {
        const msg = answer && answer.message ? answer.message : 'HTTP ' + res.status;
        return showError(msg, answer && answer.error ? answer.error.field : undefined);
      }
      showOutputs(answer.data.outputs);
      outcome = answer.message + ' in ' + ((performance.now() - started) / 1000).toFixed(1) + ' s';
    } catch (err) {
      showError('The request failed: ' + err.message);
    } finally {
      clearInterval(tick);
      $('progress').textContent = outcome;
      button.disabled = false;
      refreshStatus();
    }
  });
  keyInput.addEventListener('change', () => { if (!routes.length) { clearError(); loadRoutes(); } refreshStatus(); });

  loadRoutes();
  refreshStatus();
  setInterval(refreshStatus, 30000);
})();
`;

const sha256 = (s: string) => `'sha256-${createHash('sha256').update(s).digest('base64')}'`;

/** The page's Content-Security-Policy: only its own inline script and style; outputs may live on any http(s) host (S3). */
const CSP = [
  "default-src 'none'",
  `script-src ${sha256(SCRIPT)}`,
  `style-src ${sha256(STYLE)}`,
  "connect-src 'self'",
  "img-src 'self' http: https: data: blob:",
  "media-src 'self' http: https: blob:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export function renderPage(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>Gatehouse media</title>
<style>${STYLE}</style>
</head>
<body>
<main>
<h1>Gatehouse media</h1>
<div id="status" role="status"><span class="dot"></span><span>checking…</span></div>
<div class="grid">
<form id="form" novalidate>
<label for="prompt">Prompt</label>
<textarea id="prompt" name="prompt" maxlength="${PROMPT_MAX_LENGTH}" placeholder="A lighthouse at dusk, oil painting"></textarea>
<label for="route">Route</label>
<select id="route" name="route"></select>
<div id="route-desc" class="hint"></div>
<div id="params"></div>
<details id="auth"><summary>API key</summary>
<label for="apikey">API key <span class="hint">(only if the service requires one; kept for this tab only)</span></label>
<input id="apikey" type="password" autocomplete="off" spellcheck="false">
</details>
<button id="generate" type="submit">Generate</button>
<div id="error" role="alert"></div>
</form>
<section class="out">
<div id="progress" aria-live="polite"></div>
<div id="result"></div>
</section>
</div>
<p class="hint">API reference: <a href="docs">/docs</a> · <a href="openapi.json">/openapi.json</a></p>
</main>
<script>${SCRIPT}</script>
</body>
</html>
`;
}

/** Registers `GET /` (the page) and `GET /api/routes`. */
export async function mediaWebPage(app: FastifyInstance, deps: { config: MediaConfig }): Promise<void> {
  const html = renderPage();
  const routes = { routes: listRoutes(deps.config.routes) };
  app.get('/', { schema: { hide: true } }, async (_req, reply) =>
    reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', CSP)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', 'no-cache')
      .send(html),
  );
  app.get(
    '/api/routes',
    {
      schema: {
        summary: 'The configured routes and their parameters (what the web page at / builds its form from)',
        response: {
          200: {
            type: 'object',
            properties: {
              routes: {
                type: 'array',
                items: { type: 'object', additionalProperties: true },
              },
            },
          },
        },
      },
    },
    async () => routes,
  );
}
