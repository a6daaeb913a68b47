import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errorResponses } from '../../http/error-schemas.js';
import { notFound } from '../../http/errors.js';
import { workspaceScope } from '../../http/rate-limit.js';
import { isUuid } from '../../lib/ids.js';
import type { TriggerRow } from './triggers-repo.js';
import { SlackChallengeReply, WebhookAccepted } from './triggers-schemas.js';
import type { DeliveryAuth, WebhookService } from './webhook-service.js';

interface Addressed {
  trigger: TriggerRow | undefined;
  /** Whether the delivery proved it knows the trigger's secret (asked once, by the rate limit). */
  auth: DeliveryAuth | undefined;
}

const found = new WeakMap<FastifyRequest, Addressed>();

const bodyOf = (request: FastifyRequest) => (Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0));

async function addressed(service: WebhookService, request: FastifyRequest): Promise<Addressed> {
  const known = found.get(request);
  if (known) return known;
  const uuid = (request.params as { trigger_uuid?: string }).trigger_uuid ?? '';
  const trigger = isUuid(uuid) ? await service.lookup(uuid) : undefined;
  const auth = trigger && service.authenticate(trigger, { headers: request.headers, body: bodyOf(request) });
  const result = { trigger, auth };
  found.set(request, result);
  return result;
}

/**
 * POST /v1/webhooks/triggers/:trigger_uuid (docs/api.md §7.3). The body is kept
 * as raw bytes: the signature is checked over exactly what was sent, before any parsing.
 */
export function webhookRoutes(service: WebhookService) {
  return async function routes(app: FastifyInstance) {
    // Encapsulated: only this route reads bodies raw, whatever their content type.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

    app.post(
      '/v1/webhooks/triggers/:trigger_uuid',
      {
        config: {
          // Counted per trigger and in its owner's window once the secret or signature (over the
          // body) checks out, so an account's triggers cannot create tasks beyond its own quota;
          // anything else (an unknown address, no or a wrong secret) counts against the client
          // address, so a stranger who knows the address cannot use up the sender's or owner's window.
          rateLimitAfterBody: true,
          rateLimitScope: async (request) => {
            const { trigger, auth } = await addressed(service, request);
            return trigger && auth === 'ok' ? [`trigger:${trigger.uuid}`, workspaceScope(trigger.workspaceUuid)] : null;
          },
        },
        schema: {
          tags: ['triggers'],
          summary: 'Fire a trigger (receive a webhook)',
          description: `Authenticate as the trigger's \`verification\` scheme says, always over the raw body bytes:
- \`secret\` (default): \`X-Webhook-Secret: <webhook_secret>\`, or \`X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>\` (GitHub's signature).
- \`github\`: \`X-Hub-Signature-256\` only.
- \`standard_webhooks\`: \`webhook-id\`, \`webhook-timestamp\`, \`webhook-signature\` (\`v1,<base64 HMAC-SHA256 of {id}.{timestamp}.{body}>\`, key = base64 after \`whsec_\`).
- \`stripe\`: \`Stripe-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of {t}.{body}>\`.
- \`slack\`: \`X-Slack-Request-Timestamp\` and \`X-Slack-Signature: v0=<hex HMAC-SHA256 of v0:{timestamp}:{body}>\`.
Signed timestamps must be within the trigger's \`tolerance_seconds\` of the service's clock.

Body: any JSON (\`application/json\` or \`application/*+json\`), or \`application/x-www-form-urlencoded\` with a \`payload\` field (on a slack trigger a form without one, such as a slash command, is the object of its fields).

Checked in this order: unknown trigger 404; a header the scheme needs absent 401; a malformed header, a stale timestamp or a wrong secret or signature 401; another content type 415; a body that does not parse 400; Slack URL verification (a slack trigger answers \`{"type": "url_verification", "challenge"}\` with 200 \`{challenge}\`, enabled or not, creating nothing); trigger disabled 403 TRIGGER_DISABLED; agent unavailable 503.

On success a task is queued on the trigger's agent with the rendered template as its message and \`{trigger_uuid, delivery_id, template_missing}\` as its metadata. The delivery id (\`X-GitHub-Delivery\`, \`webhook-id\` or \`Idempotency-Key\`, the first present; \`webhook-id\` for standard_webhooks; the payload's \`id\` for stripe, and \`event_id\` else \`trigger_id\` for slack, when they are non-empty strings) makes repeats within 24 h answer the first 202 and create nothing. On github, standard_webhooks, stripe and slack triggers a delivery carrying the signature of an accepted one (within 24 h for github, else until its signed timestamp is past the tolerance) is a copy of it whatever its delivery-id headers: it answers that delivery's 202 and creates nothing.`,
          params: Type.Object({ trigger_uuid: Type.String({ description: 'The trigger UUID.' }) }),
          response: { 200: SlackChallengeReply, 202: WebhookAccepted, ...errorResponses([401, 403, 404]) },
        },
      },
      async (request, reply) => {
        const { trigger, auth } = await addressed(service, request);
        if (!trigger) throw notFound('Trigger');
        const answer = await service.receive(trigger, { headers: request.headers, body: bodyOf(request) }, auth);
        return reply.code('challenge' in answer ? 200 : 202).send(answer);
      },
    );
  };
}
