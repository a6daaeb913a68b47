import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { NoContent } from '../../http/common-schemas.js';
import { errorResponses } from '../../http/error-schemas.js';
import { actingOf, principalOf } from '../../http/guard.js';
import {
  CreateCredentialBody,
  CredentialListReply,
  CredentialParams,
  CredentialSchema,
  PatchCredentialBody,
} from './providers-schemas.js';
import type { ProvidersService } from './providers-service.js';

const tags = ['provider credentials'];
const config = { auth: 'session' as const };
const notFound = errorResponses([404]);

/** Provider credentials under /user/* (a user session only: platform keys get 403). */
export function providersRoutes(service: ProvidersService) {
  return async function routes(base: FastifyInstance) {
    const app = base.withTypeProvider<TypeBoxTypeProvider>();
    const who = (request: Parameters<typeof principalOf>[0]) => principalOf(request).workspaceUuid;

    app.post(
      '/user/provider_credentials',
      {
        config,
        schema: {
          tags,
          summary: 'Store a provider key',
          description:
            'Stores the key of an OpenAI-compatible server, encrypted. The key is never returned, only api_key_hint. A duplicate name, a private base_url or a 101st credential is a 400.',
          body: CreateCredentialBody,
          response: { 201: CredentialSchema },
        },
      },
      async (request, reply) => reply.code(201).send(await service.create(actingOf(request), request.body)),
    );

    app.get(
      '/user/provider_credentials',
      {
        config,
        schema: {
          tags,
          summary: 'List provider credentials',
          description: 'Newest first, without keys.',
          response: { 200: CredentialListReply },
        },
      },
      async (request) => ({ provider_credentials: await service.list(who(request)) }),
    );

    app.get(
      '/user/provider_credentials/:uuid',
      {
        config,
        schema: {
          tags,
          summary: 'Get a provider credential',
          params: CredentialParams,
          response: { 200: CredentialSchema, ...notFound },
        },
      },
      async (request) => service.get(who(request), request.params.uuid),
    );

    app.patch(
      '/user/provider_credentials/:uuid',
      {
        config,
        schema: {
          tags,
          summary: 'Change a provider credential',
          description: 'Any of name, api_key (a new key gives a new hint), base_url. The provider cannot change.',
          params: CredentialParams,
          body: PatchCredentialBody,
          response: { 200: CredentialSchema, ...notFound },
        },
      },
      async (request) => service.patch(actingOf(request), request.params.uuid, request.body),
    );

    app.delete(
      '/user/provider_credentials/:uuid',
      {
        config,
        schema: {
          tags,
          summary: 'Delete a provider credential',
          description:
            'Its call records stay (their provider_credential_name reads null). While an agent runtime uses it: 409 CREDENTIAL_IN_USE, and nothing changes.',
          params: CredentialParams,
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
