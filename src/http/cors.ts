import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';

/** Response headers a browser script on another origin may read. */
const EXPOSED = [
  'X-Request-Id',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'Retry-After',
  'Location',
];

/**
 * CORS for every path, preflight included, for the configured origins (`*`: any). Credentials
 * travel only in headers, so no cookie is ever allowed across origins. Registered before the
 * guard, so that rate-limit and authentication failures carry the headers too and a browser can
 * read them. No origins: no CORS headers at all.
 */
export async function registerCors(app: FastifyInstance, origins: string[]): Promise<void> {
  if (origins.length === 0) return;
  await app.register(cors, {
    origin: origins.includes('*') ? '*' : origins,
    credentials: false,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    exposedHeaders: EXPOSED,
    maxAge: 600,
    strictPreflight: false,
  });
}
