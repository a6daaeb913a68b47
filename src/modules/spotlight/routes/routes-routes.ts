import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { NoContent } from '../../../http/common-schemas.js';
import { errorResponses } from '../../../http/error-schemas.js';
import { actingOf, principalOf } from '../../../http/guard.js';
import { CreateRouteBody, PatchRouteBody, RouteListReply, RouteParams, RouteSchema } from './routes-schemas.js';
import type { RoutesService } from './routes-service.js';

const tags = ['model proxy routes'];
// Writes are JWT-only: a route names provider credentials, which only a user session may manage.
const write = { auth: 'session' as const };
const read = { auth: 'user' as const };
const notFound = errorResponses([404]);

/** Fallback routes under /spotlight/routes: reads with a JWT or a platform key, writes with a JWT only. */
export function routesRoutes(service: RoutesService) {
  return async function routes(base: FastifyInstance) {
    const app = base.withTypeProvider<TypeBoxTypeProvider>();
    const who = (request: Parameters<typeof principalOf>[0]) => principalOf(request).workspaceUuid;

    app.post(
      '/spotlight/routes',
      {
        config: write,
        schema: {
          tags,
          summary: 'Create a fallback route',
          description:
            'A named, ordered list of targets (provider credential + upstream model) called as model `route:<name>`. A duplicate name, a target naming no credential of the workspace, or a 101st route is a 400.',
          body: CreateRouteBody,
          response: { 201: RouteSchema },
        },
      },
      async (request, reply) => reply.code(201).send(await service.create(actingOf(request), request.body)),
    );

    app.get(
      '/spotlight/routes',
      {
        config: read,
        schema: {
          tags,
          summary: 'List fallback routes',
          description: 'Newest first.',
          response: { 200: RouteListReply },
        },
      },
      async (request) => ({ routes: await service.list(who(request)) }),
    );

    app.get(
      '/spotlight/routes/:uuid',
      {
        config: read,
        schema: {
          tags,
          summary: 'Get a fallback route',
          params: RouteParams,
          response: { 200: RouteSchema, ...notFound },
        },
      },
      async (request) => service.get(who(request), request.params.uuid),
    );

    app.patch(
      '/spotlight/routes/:uuid',
      {
        config: write,
        schema: {
          tags,
          summary: 'Change a fallback route',
          description: 'Any of name, targets (replaced whole), retry_on, cache_ttl_seconds.',
          params: RouteParams,
          body: PatchRouteBody,
          response: { 200: RouteSchema, ...notFound },
        },
      },
      async (request) => service.patch(actingOf(request), request.params.uuid, request.body),
    );

    app.delete(
      '/spotlight/routes/:uuid',
      {
        config: write,
        schema: {
          tags,
          summary: 'Delete a fallback route',
          description:
            "Call records keep the route's name. While an agent runtime names it: 409 ROUTE_IN_USE, and nothing changes.",
          params: RouteParams,
          response: { 204: NoContent, ...errorResponses([404, 409]) },
        },
      },
      async (request, reply) => {
        await service.remove(actingOf(request), request.params.uuid);
        return reply.code(204).send(null);
      },
    );
  };
}
