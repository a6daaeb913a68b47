import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { NoBody, TimestampSchema, UuidSchema } from '../../http/common-schemas.js';
import { errorResponses } from '../../http/error-schemas.js';
import { taskRefOf } from '../../http/guard.js';
import type { CallbacksService } from './callbacks-service.js';

const Attempt = Type.Object({
  at: TimestampSchema,
  status_code: Type.Union([Type.Integer(), Type.Null()], { description: 'null when no answer came.' }),
  duration_ms: Type.Integer(),
  error: Type.Union([Type.String(), Type.Null()]),
});
const Delivery = Type.Object({
  delivery_id: Type.String({ description: 'The webhook-id header sent, the same on every attempt.' }),
  event_type: Type.String({
    description:
      'task.awaiting_input, task.completed, task.failed or task.cancelled for callbacks; a2a.submitted, a2a.working, a2a.input_required, a2a.completed, a2a.failed or a2a.canceled for A2A push notifications.',
  }),
  status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')], {
    description: 'failed: the schedule ran out or the receiver answered 410.',
  }),
  attempts: Type.Array(Attempt),
  next_attempt_at: Type.Union([TimestampSchema, Type.Null()]),
  push_config_id: Type.Optional(
    Type.String({ description: 'A2A push notifications only: the id of the push config it goes to.' }),
  ),
});
const Params = Type.Object({ id: UuidSchema, taskId: UuidSchema });
const RetryParams = Type.Object({ id: UuidSchema, taskId: UuidSchema, deliveryId: UuidSchema });

const config = { auth: 'user' as const, feature: 'agents' as const };

/** Visibility of task callbacks: a task's deliveries and a manual retry. */
export function callbacksRoutes(service: CallbacksService) {
  return async function routes(base: FastifyInstance) {
    const app = base.withTypeProvider<TypeBoxTypeProvider>();

    app.get(
      '/agent/:id/task/:taskId/deliveries',
      {
        config,
        schema: {
          tags: ['callbacks'],
          summary: "List a task's callback deliveries",
          description:
            'One delivery per announced change (awaiting_input, completed, failed, cancelled) of a task submitted with callback_mode webhook, and one per A2A push notification (each state change, per push config), with every attempt.',
          params: Params,
          response: { 200: Type.Object({ deliveries: Type.Array(Delivery) }), ...errorResponses([404]) },
        },
      },
      async (request) => ({ deliveries: await service.list(taskRefOf(request)) }),
    );

    app.post(
      '/agent/:id/task/:taskId/deliveries/:deliveryId/retry',
      {
        config,
        schema: {
          tags: ['callbacks'],
          summary: 'Send a delivery again now',
          description:
            'Makes the delivery due at once (also after it failed); the same webhook-id is sent. 409 CONFLICT for an A2A push delivery whose config was deleted since.',
          params: RetryParams,
          body: NoBody,
          response: { 200: Delivery, ...errorResponses([404, 409]) },
        },
      },
      async (request) => service.retry(taskRefOf(request), request.params.deliveryId),
    );
  };
}
