import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { requestOriginOf } from '../../http/request-ids.js';
import type { Clients } from './mcp-oauth-clients.js';
import { OAuthError, SCOPE } from './mcp-oauth-fns.js';
import {
  AuthorizationServerSchema,
  OAuthErrorSchema,
  ProtectedResourceSchema,
  RegistrationReplySchema,
  TokenReplySchema,
} from './mcp-oauth-schemas.js';
import type { McpOAuthService } from './mcp-oauth-service.js';
import type { createMcpOAuthTokens } from './mcp-oauth-tokens.js';

const tags = ['mcp-oauth'];
const AUTH_METHODS = ['none', 'client_secret_basic', 'client_secret_post'];
const oauthErrors = { 400: OAuthErrorSchema, 401: OAuthErrorSchema, 404: OAuthErrorSchema };

/** Answers an OAuthError as `{error, error_description}`; anything else goes to the error handler. */
function answerOAuth(request: FastifyRequest, reply: FastifyReply, err: unknown) {
  if (!(err instanceof OAuthError)) throw err;
  if (err.status === 401 && /^Basic\s/i.test(String(request.headers.authorization ?? ''))) {
    reply.header('www-authenticate', 'Basic realm="taskhook"');
  }
  return reply
    .code(err.status)
    .header('content-type', 'application/json')
    .send({ error: err.error, error_description: err.description });
}

/** The form of a POST, values given twice kept as arrays. @throws OAuthError invalid_request for another content type. */
function formOf(request: FastifyRequest): Record<string, string | string[]> {
  const type = String(request.headers['content-type'] ?? '')
    .split(';')[0]
    ?.trim()
    .toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw new OAuthError(400, 'invalid_request', 'Send application/x-www-form-urlencoded');
  }
  const out: Record<string, string | string[]> = {};
  for (const [key, value] of new URLSearchParams(typeof request.body === 'string' ? request.body : '')) {
    const had = out[key];
    out[key] = had === undefined ? value : [had, value].flat();
  }
  return out;
}

/**
 * The authorization server's protocol endpoints: both well-known documents, `/oauth/authorize`,
 * `/oauth/token`, `/oauth/register`, `/oauth/revoke`. They speak OAuth, take no taskhook
 * credential and count against the client address; all but authorize answer CORS for any origin.
 */
export function mcpOAuthRoutes(deps: {
  service: McpOAuthService;
  tokens: ReturnType<typeof createMcpOAuthTokens>;
  clients: Clients;
  issuer: string;
  resource: string;
  dcr: boolean;
}) {
  const { issuer } = deps;
  const path = new URL(issuer).pathname.replace(/\/$/, '');
  const resourceMetadata = {
    resource: deps.resource,
    authorization_servers: [issuer],
    scopes_supported: [SCOPE],
    bearer_methods_supported: ['header'],
    resource_name: 'taskhook',
    resource_documentation: `${issuer}/docs`,
  };
  const serverMetadata = {
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    ...(deps.dcr ? { registration_endpoint: `${issuer}/oauth/register` } : {}),
    revocation_endpoint: `${issuer}/oauth/revoke`,
    scopes_supported: [SCOPE],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_methods_supported: AUTH_METHODS,
    revocation_endpoint_auth_methods_supported: AUTH_METHODS,
    code_challenge_methods_supported: ['S256'],
    authorization_response_iss_parameter_supported: true,
    client_id_metadata_document_supported: true,
    service_documentation: `${issuer}/docs`,
  };

  return async function routes(app: FastifyInstance) {
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));
    const anyOrigin = new Set<string>();
    app.addHook('onSend', async (request, reply, payload) => {
      const url = request.routeOptions.url ?? '';
      if (anyOrigin.has(url)) {
        reply.header('access-control-allow-origin', '*');
        reply.header('access-control-expose-headers', 'WWW-Authenticate, X-Request-Id');
      }
      if (url.startsWith('/oauth/')) reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
      return payload;
    });
    const open = (url: string, methods: string) => {
      anyOrigin.add(url);
      app.options(url, { schema: { hide: true } }, async (_request, reply) =>
        reply
          .code(204)
          .header('access-control-allow-methods', methods)
          .header('access-control-allow-headers', 'Authorization, Content-Type, MCP-Protocol-Version')
          .header('access-control-max-age', '600')
          .send(),
      );
    };

    const documents: Array<[string, object, typeof ProtectedResourceSchema | typeof AuthorizationServerSchema]> = [
      ['/.well-known/oauth-protected-resource/mcp', resourceMetadata, ProtectedResourceSchema],
      ['/.well-known/oauth-protected-resource', resourceMetadata, ProtectedResourceSchema],
      ['/.well-known/oauth-authorization-server', serverMetadata, AuthorizationServerSchema],
    ];
    if (path) {
      documents.push([`/.well-known/oauth-protected-resource${path}/mcp`, resourceMetadata, ProtectedResourceSchema]);
      documents.push([`/.well-known/oauth-authorization-server${path}`, serverMetadata, AuthorizationServerSchema]);
    }
    for (const [url, body, schema] of documents) {
      open(url, 'GET');
      app.get(
        url,
        { schema: { tags, summary: schema.title ?? url, description: schema.description, response: { 200: schema } } },
        async () => body,
      );
    }

    app.get(
      '/oauth/authorize',
      {
        schema: {
          tags,
          summary: 'Authorization endpoint (authorization code with PKCE S256)',
          description:
            'Checks the client and redirect URI (400 JSON when either cannot be trusted), then redirects: errors to the redirect URI (RFC 6749 §4.1.2.1, with `iss`), otherwise to the consent page /dashboard/mcp/authorize?request_id=….',
          response: {
            302: { description: 'To the consent page, or an error to the redirect URI.', type: 'null' },
            400: OAuthErrorSchema,
          },
        },
      },
      async (request, reply) => {
        try {
          const answer = await deps.service.authorize(request.query as Record<string, string | string[]>);
          return reply.code(302).header('location', answer.location).send();
        } catch (err) {
          return answerOAuth(request, reply, err);
        }
      },
    );

    open('/oauth/token', 'POST');
    app.post(
      '/oauth/token',
      {
        schema: {
          tags,
          summary: 'Token endpoint',
          description:
            'Form-encoded. `grant_type=authorization_code` (code, redirect_uri, code_verifier) or `refresh_token` (rotating: the refresh token used ends; presenting it again revokes the grant).',
          response: { 200: TokenReplySchema, ...oauthErrors },
        },
      },
      async (request, reply) => {
        try {
          return reply.send(await deps.tokens.token(request.headers, formOf(request), requestOriginOf(request)));
        } catch (err) {
          return answerOAuth(request, reply, err);
        }
      },
    );

    open('/oauth/revoke', 'POST');
    app.post(
      '/oauth/revoke',
      {
        schema: {
          tags,
          summary: 'Token revocation (RFC 7009)',
          description:
            'Form-encoded `token`. A refresh token revokes its whole grant; an access token only itself. 200 for any token.',
          response: { 200: { description: 'Revoked, or nothing to revoke.', type: 'null' }, ...oauthErrors },
        },
      },
      async (request, reply) => {
        try {
          await deps.tokens.revoke(request.headers, formOf(request), requestOriginOf(request));
          return reply.code(200).send();
        } catch (err) {
          return answerOAuth(request, reply, err);
        }
      },
    );

    if (!deps.dcr) return;
    open('/oauth/register', 'POST');
    app.post(
      '/oauth/register',
      {
        schema: {
          tags,
          summary: 'Dynamic Client Registration (RFC 7591)',
          description:
            'A JSON client metadata object. Clients with a Client ID Metadata Document need no registration.',
          response: { 201: RegistrationReplySchema, ...oauthErrors },
        },
      },
      async (request, reply) => {
        try {
          const type = String(request.headers['content-type'] ?? '')
            .split(';')[0]
            ?.trim()
            .toLowerCase();
          let body: unknown = null;
          try {
            body = type === 'application/json' ? JSON.parse(String(request.body ?? '')) : null;
          } catch {}
          return reply.code(201).send(await deps.clients.register(body));
        } catch (err) {
          return answerOAuth(request, reply, err);
        }
      },
    );
  };
}
