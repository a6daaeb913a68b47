import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';

/** Where `npm run build:dashboard` writes the single-page app (the same place from src/ and dist/). */
export const DASHBOARD_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../dist/dashboard');

/**
 * The dashboard's pages may only load their own assets and talk to this origin; nothing may
 * frame them (clickjacking) and no URL leaks in a Referer (task and agent ids are in the paths).
 */
export const DASHBOARD_HEADERS: Record<string, string> = {
  'content-security-policy': [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; '),
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'cross-origin-opener-policy': 'same-origin',
};

function sendIndex(reply: FastifyReply, html: string | null) {
  if (html === null) {
    return reply
      .code(503)
      .type('text/plain; charset=utf-8')
      .send('The dashboard is not built: run `npm run build:dashboard` (npm ci does it).');
  }
  // The page names hashed assets: never cache it, so a new release is picked up at once.
  return reply.header('cache-control', 'no-cache').type('text/html; charset=utf-8').send(html);
}

/**
 * Serves the dashboard at /dashboard/: hashed assets with a long cache, and index.html for
 * every other path below it, so deep links (/dashboard/agents/<uuid>) load the app.
 */
export function dashboardRoutes(opts: { dir?: string } = {}) {
  const dir = opts.dir ?? DASHBOARD_DIR;
  return async function routes(app: FastifyInstance) {
    const indexFile = path.join(dir, 'index.html');
    const html = existsSync(indexFile) ? readFileSync(indexFile, 'utf8') : null;
    app.addHook('onSend', async (_request, reply, payload) => {
      reply.headers(DASHBOARD_HEADERS);
      return payload;
    });
    if (existsSync(path.join(dir, 'assets'))) {
      await app.register(fastifyStatic, {
        root: path.join(dir, 'assets'),
        prefix: '/dashboard/assets/',
        wildcard: false,
        index: false,
        immutable: true,
        maxAge: '365d',
      });
    }
    app.get('/dashboard', { schema: { hide: true } }, (_request, reply) => reply.redirect('/dashboard/'));
    app.get('/dashboard/', { schema: { hide: true } }, (_request, reply) => sendIndex(reply, html));
    app.get('/dashboard/*', { schema: { hide: true } }, (request, reply) => {
      // A missing asset is a 404, not the page (a browser would try to run HTML as a script).
      if (request.url.startsWith('/dashboard/assets/')) return reply.callNotFound();
      return sendIndex(reply, html);
    });
  };
}
