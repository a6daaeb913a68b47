import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { NoBody, NoContent } from '../../http/common-schemas.js';
import { errorResponses } from '../../http/error-schemas.js';
import { actingOf, principalOf } from '../../http/guard.js';
import {
  ApproveBody,
  AuthorizationRequestSchema,
  GrantListSchema,
  GrantParams,
  RedirectReplySchema,
  RequestParams,
} from './mcp-oauth-schemas.js';
import type { McpOAuthService } from './mcp-oauth-service.js';

const session = { auth: 'session' as const };

/**
 * taskhook's own JSON API behind the consent page and the "Connected apps" page: session JWT
 * only, in the caller's personal workspace (`X-Taskhook-Workspace` is ignored).
 */
export function mcpOAuthConsentRoutes(service: McpOAuthService) {
  return async function routes(base: FastifyInstance) {
    const app = base.withTypeProvider<TypeBoxTypeProvider>();
    const tags = ['mcp-oauth'];

    app.get(
      '/oauth/authorization_requests/:id',
      {
        config: session,
        schema: {
          tags,
          summary: 'A pending MCP authorization request (the consent page)',
          params: RequestParams,
          response: { 200: AuthorizationRequestSchema, ...errorResponses([404]) },
        },
      },
      async (request) => service.describe(request.params.id),
    );

    app.post(
      '/oauth/authorization_requests/:id/approve',
      {
        config: session,
        schema: {
          tags,
          summary: 'Allow an MCP client',
          description:
            'Creates the grant (the client acts in `workspace_uuid` with `role`, never above your own role there) and answers where to send the browser: the redirect URI with `code`, `state` and `iss`.',
          params: RequestParams,
          body: ApproveBody,
          response: { 200: RedirectReplySchema, ...errorResponses([404]) },
        },
      },
      async (request) =>
        service.approve(principalOf(request), actingOf(request), request.params.id, request.body ?? null),
    );

    app.post(
      '/oauth/authorization_requests/:id/deny',
      {
        config: session,
        schema: {
          tags,
          summary: 'Deny an MCP client',
          params: RequestParams,
          body: NoBody,
          response: { 200: RedirectReplySchema, ...errorResponses([404]) },
        },
      },
      async (request) => service.deny(request.params.id),
    );

    app.get(
      '/auth/mcp_grants',
      {
        config: session,
        schema: {
          tags,
          summary: 'Your connected MCP clients',
          description: 'Every grant you gave, in every workspace, newest first (at most 1,000), active and revoked.',
          response: { 200: GrantListSchema },
        },
      },
      async (request) => ({ grants: await service.listGrants(principalOf(request).userUuid) }),
    );

    app.delete(
      '/auth/mcp_grants/:uuid',
      {
        config: session,
        schema: {
          tags,
          summary: 'Disconnect an MCP client',
          description: 'Every token of the grant stops working at once. 204 also when already revoked.',
          params: GrantParams,
          response: { 204: NoContent, ...errorResponses([404]) },
        },
      },
      async (request, reply) => {
        await service.revokeGrant(principalOf(request), actingOf(request), request.params.uuid);
        return reply.code(204).send(null);
      },
    );
  };
}
