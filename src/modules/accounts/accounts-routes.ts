import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { NoBody, NoContent } from '../../http/common-schemas.js';
import { errorResponses } from '../../http/error-schemas.js';
import { actingOf, principalOf } from '../../http/guard.js';
import {
  ChangePasswordBody,
  CreatedKeyReply,
  CreatedTokenReply,
  CreateKeyBody,
  KeyListReply,
  KeySchema,
  LoginBody,
  LoginReply,
  PatchKeyBody,
  RegisterBody,
  RegisterReply,
  SigningSecretReply,
  TokenListReply,
  UuidParams,
  VerifyQuery,
  VerifyReply,
} from './accounts-schemas.js';
import type { AccountsService } from './accounts-service.js';

const tags = ['auth'];
const session = { auth: 'session' as const };

/** HTTP routes of accounts and credentials (docs/api.md §3). */
export function accountsRoutes(service: AccountsService) {
  return async function routes(base: FastifyInstance) {
    const app = base.withTypeProvider<TypeBoxTypeProvider>();

    app.post(
      '/auth/register',
      {
        schema: {
          tags,
          summary: 'Create an account',
          description:
            'Creates an unverified account and sends the verification link (or logs it when TASKHOOK_SMTP_URL is unset). A registered e-mail is a 400.',
          body: RegisterBody,
          response: { 201: RegisterReply },
        },
      },
      async (request, reply) => {
        const user = await service.register(request.body);
        return reply.code(201).send({ user });
      },
    );

    app.get(
      '/auth/verify_email',
      {
        schema: {
          tags,
          summary: 'Verify an e-mail address',
          description: 'The link sent at registration; valid 24 hours, once.',
          querystring: VerifyQuery,
          response: { 200: VerifyReply },
        },
      },
      async (request) => {
        await service.verifyEmail(request.query.token);
        return { verified: true as const };
      },
    );

    app.post(
      '/auth/login',
      {
        schema: {
          tags,
          summary: 'Log in with e-mail and password',
          description:
            'Returns a session JWT valid 24 hours. Wrong credentials: 401 "Invalid email or password"; unverified e-mail: 403.',
          body: LoginBody,
          response: { 200: LoginReply },
        },
      },
      async (request) => service.login(request.body.email, request.body.password),
    );

    app.post(
      '/auth/change_password',
      {
        config: session,
        schema: {
          tags,
          summary: 'Change the password',
          description:
            'Every session JWT issued before stops working; platform keys and ingest tokens are unaffected. A wrong current password or a short new one is a 400. An account created by an OAuth login has no password: it leaves current_password out to set its first one.',
          body: ChangePasswordBody,
          response: { 204: NoContent },
        },
      },
      async (request, reply) => {
        await service.changePassword(
          principalOf(request).userUuid,
          request.body.current_password,
          request.body.new_password,
        );
        return reply.code(204).send(null);
      },
    );

    app.post(
      '/auth/platform_keys',
      {
        config: session,
        schema: {
          tags,
          summary: 'Create a platform API key',
          description: 'The key is shown only in this response and stored as a SHA-256 hash.',
          body: CreateKeyBody,
          response: { 201: CreatedKeyReply },
        },
      },
      async (request, reply) => {
        const principal = principalOf(request);
        const { name, role, models } = request.body;
        return reply
          .code(201)
          .send(await service.createPlatformKey(actingOf(request), principal.userUuid, name, role, models));
      },
    );

    app.patch(
      '/auth/platform_keys/:uuid',
      {
        config: session,
        schema: {
          tags,
          summary: 'Rename a platform API key or change its model allowlist',
          description:
            'Fields left out keep their value; models null allows every model again. A revoked key can still be changed. Takes effect on this instance from the next request, on others within TASKHOOK_CREDENTIAL_CACHE_MS. Audited as key.update.',
          params: UuidParams,
          body: PatchKeyBody,
          response: { 200: KeySchema, ...errorResponses([400, 404]) },
        },
      },
      async (request) => service.updatePlatformKey(actingOf(request), request.params.uuid, request.body),
    );

    app.get(
      '/auth/platform_keys',
      {
        config: session,
        schema: {
          tags,
          summary: 'List platform API keys',
          description: 'Newest first, at most 1,000; revoked keys stay listed with revoked_at.',
          response: { 200: KeyListReply },
        },
      },
      async (request) => ({ keys: await service.listPlatformKeys(principalOf(request).workspaceUuid) }),
    );

    app.delete(
      '/auth/platform_keys/:uuid',
      {
        config: session,
        schema: {
          tags,
          summary: 'Revoke a platform API key',
          description: 'The key stops working on the next request.',
          params: UuidParams,
          response: { 204: NoContent, ...errorResponses([404]) },
        },
      },
      async (request, reply) => {
        await service.revokePlatformKey(actingOf(request), request.params.uuid);
        return reply.code(204).send(null);
      },
    );

    app.post(
      '/auth/generate_ingest_token',
      {
        config: session,
        schema: {
          tags,
          summary: 'Create an ingest token',
          description:
            'A write-only telemetry credential (a UUID), sent as `Authorization: <token>`; shown only in this response.',
          body: NoBody,
          response: { 201: CreatedTokenReply },
        },
      },
      async (request, reply) =>
        reply.code(201).send(await service.createIngestToken(actingOf(request), principalOf(request).userUuid)),
    );

    app.get(
      '/auth/ingest_tokens',
      {
        config: session,
        schema: {
          tags,
          summary: 'List ingest tokens',
          description: 'Newest first, at most 1,000; revoked tokens stay listed with revoked_at.',
          response: { 200: TokenListReply },
        },
      },
      async (request) => ({ tokens: await service.listIngestTokens(principalOf(request).workspaceUuid) }),
    );

    app.delete(
      '/auth/ingest_tokens/:uuid',
      {
        config: session,
        schema: {
          tags,
          summary: 'Revoke an ingest token',
          params: UuidParams,
          response: { 204: NoContent, ...errorResponses([404]) },
        },
      },
      async (request, reply) => {
        await service.revokeIngestToken(actingOf(request), request.params.uuid);
        return reply.code(204).send(null);
      },
    );

    app.get(
      '/auth/webhook_signing_secret',
      {
        config: session,
        schema: {
          tags,
          summary: 'Get the callback signing secret',
          description: 'The whsec_… secret with which task callbacks are signed (Standard Webhooks).',
          response: { 200: SigningSecretReply },
        },
      },
      async (request) => service.getSigningSecret(principalOf(request).workspaceUuid),
    );

    app.post(
      '/auth/webhook_signing_secret/rotate',
      {
        config: session,
        schema: {
          tags,
          summary: 'Rotate the callback signing secret',
          description: 'Returns the new secret. For 24 hours callbacks carry two signatures, one per secret.',
          body: NoBody,
          response: { 200: SigningSecretReply },
        },
      },
      async (request) => service.rotateSigningSecret(actingOf(request)),
    );
  };
}
