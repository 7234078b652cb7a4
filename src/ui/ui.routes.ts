/**
 * The dashboard at `/ui/`: static files built from `ui/src` into `ui/dist` (scripts/build-ui.ts),
 * committed, so a machine without internet (or without dev dependencies) serves it. The page is a
 * client of the public API only (`/v1/…` and SSE) with the token the user types in; this module
 * serves files and never touches the database.
 *
 * Headers: a strict Content-Security-Policy (own origin only: no inline script, no CDN), no
 * framing, no referrer (a token never travels in a URL anyway), and no caching of `index.html`
 * so a new build is picked up at the next load; the hashed bundle names are cached for a day.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';

/** Where the built dashboard lives (`ui/dist`, next to `src/`). */
export const UI_DIST = fileURLToPath(new URL('../../ui/dist/', import.meta.url));

const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

/** Registers `/ui/` (and redirects `/ui` and `/` to it). Without a build it answers 404 with how to build one. */
export async function uiRoutes(app: FastifyInstance): Promise<void> {
  app.get('/', { schema: { hide: true } }, async (_req, reply) => reply.redirect('/ui/'));
  app.get('/ui', { schema: { hide: true } }, async (_req, reply) => reply.redirect('/ui/'));
  if (!existsSync(UI_DIST)) {
    app.get('/ui/*', { schema: { hide: true } }, async (_req, reply) =>
      reply.status(404).type('text/plain').send('The dashboard is not built: run `npm run ui:build`.\n'),
    );
    return;
  }
  await app.register(fastifyStatic, {
    root: UI_DIST,
    prefix: '/ui/',
    decorateReply: false,
    index: ['index.html'],
    wildcard: true,
    cacheControl: false,
    setHeaders(res, path) {
      res.header('Content-Security-Policy', CSP);
      res.header('X-Frame-Options', 'DENY');
      res.header('X-Content-Type-Options', 'nosniff');
      res.header('Referrer-Policy', 'no-referrer');
      res.header('Cache-Control', path.endsWith('.html') ? 'no-cache' : 'public, max-age=86400');
    },
  });
}
