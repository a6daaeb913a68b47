import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorResponses } from '../../http/error-schemas.js';
import { wantsJson } from './oauth-fns.js';
import {
  CallbackBody,
  CallbackQuery,
  CallbackReply,
  ProviderParams,
  ProvidersReply,
  StartQuery,
  StartReply,
} from './oauth-schemas.js';
import type { OAuthService } from './oauth-service.js';

const tags = ['auth'];

const CALLBACK_DESCRIPTION =
  'Step 2. Spends the login attempt named by `state` (single use, also across instances), exchanges the code with the provider and answers with a session like POST /auth/login. ' +
  'Unknown, expired or used state: 400 OAUTH_STATE_INVALID. Refused code, provider error or invalid ID token: 401. ' +
  'Unverified e-mail at the provider, or an existing account with that e-mail that is not verified: 403. Provider failing: 502 OAUTH_PROVIDER_UNAVAILABLE.';

const callbackResponses = { 200: CallbackReply, ...errorResponses([400, 401, 403, 404, 502]) };

/** HTTP routes of OAuth login. No credential is read: an Authorization header is ignored. */
export function oauthRoutes(service: OAuthService) {
  // Before the body is read or validated: an unknown or unconfigured provider is a 404 whatever the input.
  const providerHook = async (request: FastifyRequest, reply: FastifyReply) => {
    reply.header('cache-control', 'no-store');
    service.requireProvider((request.params as { provider: string }).provider);
  };

  return async function routes(base: FastifyInstance) {
    const app = base.withTypeProvider<TypeBoxTypeProvider>();

    app.get(
      '/auth/oauth/providers',
      {
        schema: {
          tags,
          summary: 'List the configured identity providers',
          description: 'For login screens: one button per provider.',
          response: { 200: ProvidersReply },
        },
      },
      async () => ({ providers: service.configured() }),
    );

    app.get(
      '/auth/oauth/:provider',
      {
        onRequest: providerHook,
        schema: {
          tags,
          summary: 'Start a login with an identity provider',
          description:
            'Step 1. Creates a login attempt (state, PKCE verifier and, for Google, a nonce) valid TASKHOOK_OAUTH_STATE_TTL_SECONDS, ' +
            'and sends the browser to the provider (302) or, for single-page apps, answers with the URL (mode=json or Accept: application/json).',
          params: ProviderParams,
          querystring: StartQuery,
          response: {
            200: StartReply,
            302: Type.Null({ description: "Redirect to the provider's authorization URL (Location header)." }),
            ...errorResponses([400, 404, 502]),
          },
        },
      },
      async (request, reply) => {
        const started = await service.start(request.params.provider);
        if (wantsJson(request.query.mode, request.headers.accept)) return started;
        return reply.redirect(started.authorization_url, 302);
      },
    );

    app.post(
      '/auth/oauth/:provider/callback',
      {
        onRequest: providerHook,
        schema: {
          tags,
          summary: 'Finish a login with an identity provider',
          description: `${CALLBACK_DESCRIPTION} A front-end forwards the provider's redirect here after checking its state.`,
          params: ProviderParams,
          body: CallbackBody,
          response: callbackResponses,
        },
      },
      async (request) => service.finish(request.params.provider, request.body),
    );

    app.get(
      '/auth/oauth/:provider/callback',
      {
        onRequest: providerHook,
        schema: {
          tags,
          summary: "Finish a login from the provider's redirect",
          description: `${CALLBACK_DESCRIPTION} The provider's redirect as it arrives (other query parameters ignored); answers JSON like the POST.`,
          params: ProviderParams,
          querystring: CallbackQuery,
          response: callbackResponses,
        },
      },
      async (request) => service.finish(request.params.provider, request.query),
    );
  };
}
