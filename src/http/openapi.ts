import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify';
import type { AuthMode } from '../lib/principal.js';
import { AUTHED_ERRORS, COMMON_ERRORS, ErrorEnvelopeSchema, errorResponses, FlatErrorSchema } from './error-schemas.js';
import { permissionOf, workspaceSourceOf } from './permissions.js';

const SECURITY: Record<AuthMode, Array<Record<string, string[]>>> = {
  none: [],
  session: [{ bearerJwt: [] }],
  user: [{ bearerJwt: [] }, { serviceApiKey: [] }, { apiKey: [] }, { bearerApiKey: [] }],
  ingest: [{ ingestToken: [] }],
  mcp: [{ bearerJwt: [] }, { serviceApiKey: [] }, { apiKey: [] }, { bearerApiKey: [] }, { mcpOAuth: ['mcp'] }],
};

const DESCRIPTION = `taskhook puts AI agents to work over plain HTTP.

* Success bodies are bare JSON objects.
* Authentication failures answer \`{"error": "..."}\`; every other error answers
  \`{"success": false, "error": {"code", "message", "details"?: {"field", "reason"}}, "meta": {"request_id", "timestamp"}}\`.
* Every response carries \`X-Request-Id\` and \`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\`, \`X-RateLimit-Reset\`
  (Unix seconds). Limits are per workspace after authentication, per client address otherwise; a 429 adds \`Retry-After\`.
* JSON types are never coerced and unknown body fields are refused.
* Resources belong to workspaces. A platform key or ingest token acts in its own workspace; a session acts in its
  user's personal workspace unless \`X-Taskhook-Workspace: <workspace uuid>\` names another one the user is a member of.
  A workspace the caller is not a member of, and any resource of another workspace, is always 404.
* A role too low for the operation (viewer < member < admin < owner) is 403 \`FORBIDDEN\`, decided by method and path
  before anything is looked up.`;

const WORKSPACE_HEADER_SCHEMA = {
  type: 'string',
  format: 'uuid',
  description:
    "Sessions only: the workspace the request acts in (default: the user's personal workspace). A workspace the user is not a member of is 404; a value that is not a UUID is 400. A platform key may send only its own workspace's uuid.",
};

/**
 * Documents `X-Taskhook-Workspace` on every route that reads it (the permission table says which);
 * the guard, not the schema, checks it, so it is added to the document only.
 */
function documentWorkspaceHeader({ schema, url, route }: { schema: FastifySchema; url: string; route: RouteOptions }): {
  schema: FastifySchema;
  url: string;
} {
  const method = [route.method].flat()[0] ?? 'GET';
  const permission = permissionOf(method, route.url);
  if (!schema || !permission || workspaceSourceOf(route.url, permission) !== 'header') return { schema, url };
  const headers = (schema.headers ?? { type: 'object' }) as { properties?: Record<string, unknown> };
  return {
    schema: {
      ...schema,
      headers: { ...headers, properties: { ...headers.properties, 'x-taskhook-workspace': WORKSPACE_HEADER_SCHEMA } },
    },
    url,
  };
}

/**
 * Serves the OpenAPI 3.1 document at /openapi.json and a docs page at /docs, and gives every
 * route its security requirement and its documented error responses from its auth mode.
 */
export async function registerOpenApi(app: FastifyInstance, publicUrl: string) {
  app.addSchema(ErrorEnvelopeSchema);
  app.addSchema(FlatErrorSchema);

  app.addHook('onRoute', (route) => {
    if (route.schema?.hide || route.url.startsWith('/docs')) return;
    const mode = route.config?.auth ?? 'none';
    const extra = route.config?.auth && route.config.auth !== 'none' ? AUTHED_ERRORS : COMMON_ERRORS;
    route.schema = {
      ...route.schema,
      security: SECURITY[mode],
      response: { ...errorResponses(extra), ...(route.schema?.response as object | undefined) },
    };
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'taskhook API', version: '0.1.0', description: DESCRIPTION },
      servers: [{ url: publicUrl }],
      components: {
        securitySchemes: {
          bearerJwt: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'JWT',
            description: 'Session token from POST /auth/login (24 h).',
          },
          mcpOAuth: {
            type: 'oauth2',
            description:
              'On /mcp only: an access token (mcp_at_…) from taskhook\'s own authorization server (docs/mcp.md, "Connecting with OAuth").',
            flows: {
              authorizationCode: {
                authorizationUrl: '/oauth/authorize',
                tokenUrl: '/oauth/token',
                refreshUrl: '/oauth/token',
                scopes: { mcp: 'Use /mcp as the consenting user allows, in the workspace they chose.' },
              },
            },
          },
          bearerApiKey: {
            type: 'http',
            scheme: 'bearer',
            description: 'A platform API key (sk_service_…) as a bearer token.',
          },
          serviceApiKey: {
            type: 'apiKey',
            in: 'header',
            name: 'x-service-api-key',
            description: 'A platform API key.',
          },
          apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'A platform API key.' },
          ingestToken: {
            type: 'apiKey',
            in: 'header',
            name: 'Authorization',
            description: 'An ingest token (a UUID), without "Bearer".',
          },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transform: documentWorkspaceHeader,
  });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
