import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { NoContent } from '../../http/common-schemas.js';
import { AcceptedReply, EmailBody, ResetPasswordBody } from './accounts-schemas.js';
import type { AccountsService } from './accounts-service.js';

const tags = ['auth'];

/** HTTP routes of account recovery (docs/api.md §3): no credential, same answer for every e-mail. */
export function recoveryRoutes(
  service: Pick<AccountsService, 'resendVerification' | 'requestPasswordReset' | 'resetPassword'>,
) {
  return async function routes(base: FastifyInstance) {
    const app = base.withTypeProvider<TypeBoxTypeProvider>();

    app.post(
      '/auth/resend_verification',
      {
        schema: {
          tags,
          summary: 'Send the verification link again',
          description:
            'Always 202 {}. For an account whose e-mail is not verified, a new verification link is sent (at most one mail per address per minute).',
          body: EmailBody,
          response: { 202: AcceptedReply },
        },
      },
      async (request, reply) => {
        await service.resendVerification(request.body.email);
        return reply.code(202).send({});
      },
    );

    app.post(
      '/auth/request_password_reset',
      {
        schema: {
          tags,
          summary: 'Ask for a password reset link',
          description:
            'Always 202 {}. For a verified account, a link to {base_url}/dashboard/reset-password?token=… is e-mailed (or logged when TASKHOOK_SMTP_URL is unset); valid 1 hour, single use, at most one mail per address per minute.',
          body: EmailBody,
          response: { 202: AcceptedReply },
        },
      },
      async (request, reply) => {
        await service.requestPasswordReset(request.body.email);
        return reply.code(202).send({});
      },
    );

    app.post(
      '/auth/reset_password',
      {
        schema: {
          tags,
          summary: 'Set a new password with a reset link',
          description:
            'Sets the password and ends every earlier session (platform keys and ingest tokens are unaffected). An unknown, used or expired token: 400 INVALID_REQUEST with details.field "token".',
          body: ResetPasswordBody,
          response: { 204: NoContent },
        },
      },
      async (request, reply) => {
        await service.resetPassword(request.body.token, request.body.new_password);
        return reply.code(204).send(null);
      },
    );
  };
}
