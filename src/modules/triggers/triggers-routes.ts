import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { NoBody, NoContent, pagination } from '../../http/common-schemas.js';
import { errorResponses } from '../../http/error-schemas.js';
import { actingOf, principalOf } from '../../http/guard.js';
import {
  AgentParams,
  CreatedTriggerSchema,
  CreateTriggerBody,
  DeliveryListReply,
  PatchTriggerBody,
  TriggerListQuery,
  TriggerListReply,
  TriggerParams,
  TriggerSchema,
  TriggerWithSecretSchema,
} from './triggers-schemas.js';
import type { TriggersService } from './triggers-service.js';

const tags = ['triggers'];
const config = { auth: 'user' as const, feature: 'agents' as const };
const notFound = errorResponses([404]);

/** Management of webhook triggers (docs/api.md §7.1). */
export function triggersRoutes(service: TriggersService) {
  return async function routes(base: FastifyInstance) {
    const app = base.withTypeProvider<TypeBoxTypeProvider>();
    const who = (request: Parameters<typeof principalOf>[0]) => principalOf(request).workspaceUuid;

    app.post(
      '/v1/agent/:id/triggers',
      {
        config,
        schema: {
          tags,
          summary: 'Create a trigger',
          description:
            'Creates a webhook address for the agent. `verification` picks the signature scheme deliveries must satisfy (default `{"type": "secret"}`; also github, standard_webhooks, stripe, slack). When the service generates the secret, the response holds it as webhook_secret, shown only here; a secret you supply is stored encrypted and never returned. An invalid template or verification is a 400 whose details name the field; an agent has at most 1,000 triggers.',
          params: AgentParams,
          body: CreateTriggerBody,
          response: { 201: CreatedTriggerSchema, ...notFound },
        },
      },
      async (request, reply) =>
        reply.code(201).send(await service.create(actingOf(request), request.params.id, request.body)),
    );

    app.get(
      '/v1/agent/:id/triggers',
      {
        config,
        schema: {
          tags,
          summary: 'List triggers',
          description: 'Newest first, without secrets.',
          params: AgentParams,
          querystring: TriggerListQuery,
          response: { 200: TriggerListReply, ...notFound },
        },
      },
      async (request) => {
        const { page, limit } = request.query;
        const { triggers, total } = await service.list(who(request), request.params.id, page, limit);
        return { triggers, pagination: pagination(page, limit, total) };
      },
    );

    app.get(
      '/v1/agent/:id/triggers/:triggerId',
      {
        config,
        schema: {
          tags,
          summary: 'Get a trigger',
          params: TriggerParams,
          response: { 200: TriggerSchema, ...notFound },
        },
      },
      async (request) => service.get(who(request), request.params.id, request.params.triggerId),
    );

    app.patch(
      '/v1/agent/:id/triggers/:triggerId',
      {
        config,
        schema: {
          tags,
          summary: 'Change a trigger',
          description:
            'Any of name, message_template, concurrency_key (null: none), enabled, verification. A disabled trigger answers its deliveries 403 and creates nothing. verification keeps its type (another type is a 400 on verification.type); it may change tolerance_seconds or replace the secret, which applies at once (the old one stops at once); audited as a change of verification.',
          params: TriggerParams,
          body: PatchTriggerBody,
          response: { 200: TriggerSchema, ...notFound },
        },
      },
      async (request) => service.patch(actingOf(request), request.params.id, request.params.triggerId, request.body),
    );

    app.delete(
      '/v1/agent/:id/triggers/:triggerId',
      {
        config,
        schema: {
          tags,
          summary: 'Delete a trigger',
          description: 'Its address stops working at once (404); its delivery log goes with it.',
          params: TriggerParams,
          response: { 204: NoContent, ...notFound },
        },
      },
      async (request, reply) => {
        await service.remove(actingOf(request), request.params.id, request.params.triggerId);
        return reply.code(204).send(null);
      },
    );

    app.post(
      '/v1/agent/:id/triggers/:triggerId/rotate_secret',
      {
        config,
        schema: {
          tags,
          summary: 'Rotate the webhook secret',
          description:
            'Returns the trigger with a new webhook_secret (shown only here; whsec_… for standard_webhooks). The previous secret keeps working for 24 hours, so senders can be switched without losing deliveries. Only generated secrets rotate: a trigger whose secret was supplied (stripe, slack, or github / standard_webhooks created with a secret) answers 400 on verification; PATCH a new secret instead.',
          params: TriggerParams,
          body: NoBody,
          response: { 200: TriggerWithSecretSchema, ...notFound },
        },
      },
      async (request) => service.rotateSecret(actingOf(request), request.params.id, request.params.triggerId),
    );

    app.get(
      '/v1/agent/:id/triggers/:triggerId/deliveries',
      {
        config,
        schema: {
          tags,
          summary: 'List recent deliveries',
          description:
            'Every request that named this trigger, refused ones included, newest first: when, what it was answered, the task it created, and why it was refused.',
          params: TriggerParams,
          querystring: TriggerListQuery,
          response: { 200: DeliveryListReply, ...notFound },
        },
      },
      async (request) => {
        const { page, limit } = request.query;
        const { deliveries, total } = await service.deliveries(
          who(request),
          request.params.id,
          request.params.triggerId,
          page,
          limit,
        );
        return { deliveries, pagination: pagination(page, limit, total) };
      },
    );
  };
}
