import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { NoContent, pagination } from '../../http/common-schemas.js';
import { errorResponses } from '../../http/error-schemas.js';
import { actingOf, principalOf } from '../../http/guard.js';
import { AgentListQuery, AgentParams, agentSchemas } from './agents-schemas.js';
import type { AgentsService } from './agents-service.js';
import type { RuntimeSchemas } from './runtime-schemas.js';

const tags = ['agents'];
const config = { auth: 'user' as const, feature: 'agents' as const };
const notFound = errorResponses([404]);

/** HTTP routes of agent management; `runtime` is the `runtime` field's schemas the app registered. */
export function agentsRoutes(service: AgentsService, runtime: RuntimeSchemas) {
  const { AgentSchema, AgentListReply, CreateAgentBody, PatchAgentBody } = agentSchemas(runtime);
  return async function routes(base: FastifyInstance) {
    const app = base.withTypeProvider<TypeBoxTypeProvider>();

    app.post(
      '/agent',
      {
        config,
        schema: {
          tags,
          summary: 'Create an agent',
          description:
            'New agents are active, with the worker runtime unless another is given (the runtime field lists the types). A bad runtime field is a 400 naming its path (runtime.model, runtime.headers.Host); runtime header values are stored encrypted and always shown as "********".',
          body: CreateAgentBody,
          response: { 201: AgentSchema },
        },
      },
      async (request, reply) => reply.code(201).send(await service.create(actingOf(request), request.body)),
    );

    app.get(
      '/agent/list',
      {
        config,
        schema: {
          tags,
          summary: 'List agents',
          description: 'Newest first.',
          querystring: AgentListQuery,
          response: { 200: AgentListReply },
        },
      },
      async (request) => {
        const { page, limit } = request.query;
        const { agents, total } = await service.list(principalOf(request).workspaceUuid, page, limit);
        return { agents, pagination: pagination(page, limit, total) };
      },
    );

    app.get(
      '/agent/:id',
      {
        config,
        schema: { tags, summary: 'Get an agent', params: AgentParams, response: { 200: AgentSchema, ...notFound } },
      },
      async (request) => service.get(principalOf(request).workspaceUuid, request.params.id),
    );

    app.patch(
      '/agent/:id',
      {
        config,
        schema: {
          tags,
          summary: 'Change an agent',
          description:
            'Any of name, description, status (active, paused, stopped), runtime, concurrency, concurrency_per_key (null removes the per-key cap), default_timeout_seconds. Paused and stopped agents refuse new tasks with 503. The runtime is replaced whole; a runtime header whose value is "********" keeps the value stored under that name.',
          params: AgentParams,
          body: PatchAgentBody,
          response: { 200: AgentSchema, ...notFound },
        },
      },
      async (request) => service.patch(actingOf(request), request.params.id, request.body),
    );

    app.delete(
      '/agent/:id',
      {
        config,
        schema: {
          tags,
          summary: 'Delete an agent',
          description: 'Its open tasks are cancelled and its triggers deleted.',
          params: AgentParams,
          response: { 204: NoContent, ...notFound },
        },
      },
      async (request, reply) => {
        await service.remove(actingOf(request), request.params.id);
        return reply.code(204).send(null);
      },
    );
  };
}
