import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { NoBody, NoContent, pagination } from '../../http/common-schemas.js';
import { errorResponses } from '../../http/error-schemas.js';
import { actingOf, principalOf } from '../../http/guard.js';
import {
  AgentParams,
  CreateScheduleBody,
  PatchScheduleBody,
  PreviewBody,
  PreviewReply,
  RunAccepted,
  RunListReply,
  ScheduleListQuery,
  ScheduleListReply,
  ScheduleParams,
  ScheduleSchema,
} from './schedules-schemas.js';
import type { SchedulesService } from './schedules-service.js';

const tags = ['schedules'];
const config = { auth: 'user' as const, feature: 'agents' as const };
const notFound = errorResponses([404]);

/** Cron schedules of an agent (docs/schedules.md). */
export function schedulesRoutes(service: SchedulesService) {
  return async function routes(base: FastifyInstance) {
    const app = base.withTypeProvider<TypeBoxTypeProvider>();
    const who = (request: Parameters<typeof principalOf>[0]) => principalOf(request).workspaceUuid;

    app.post(
      '/v1/agent/:id/schedules',
      {
        config,
        schema: {
          tags,
          summary: 'Create a schedule',
          description:
            'Creates one task on the agent at each occurrence of a cron pattern in an IANA time zone. A pattern whose times of day are closer than TASKHOOK_SCHEDULE_MIN_INTERVAL_SECONDS (its gap, docs/schedules.md), or that never fires within 8 years, is a 400; an agent has at most 100 schedules and a workspace at most TASKHOOK_MAX_SCHEDULES_PER_WORKSPACE (400 LIMIT_EXCEEDED, details.field "schedules").',
          params: AgentParams,
          body: CreateScheduleBody,
          response: { 201: ScheduleSchema, ...notFound },
        },
      },
      async (request, reply) =>
        reply.code(201).send(await service.create(actingOf(request), request.params.id, request.body)),
    );

    app.get(
      '/v1/agent/:id/schedules',
      {
        config,
        schema: {
          tags,
          summary: 'List schedules',
          description: 'Newest first.',
          params: AgentParams,
          querystring: ScheduleListQuery,
          response: { 200: ScheduleListReply, ...notFound },
        },
      },
      async (request) => {
        const { page, limit } = request.query;
        const { schedules, total } = await service.list(who(request), request.params.id, page, limit);
        return { schedules, pagination: pagination(page, limit, total) };
      },
    );

    app.post(
      '/v1/agent/:id/schedules/preview',
      {
        config,
        schema: {
          tags,
          summary: 'Preview occurrences',
          description:
            'The next count (default 5) occurrences strictly after from (default now), exactly as the clock fires them, with their local wall-clock times. Creates nothing.',
          params: AgentParams,
          body: PreviewBody,
          response: { 200: PreviewReply, ...notFound },
        },
      },
      async (request) => service.preview(who(request), request.params.id, request.body),
    );

    app.get(
      '/v1/agent/:id/schedules/:scheduleId',
      {
        config,
        schema: {
          tags,
          summary: 'Get a schedule',
          params: ScheduleParams,
          response: { 200: ScheduleSchema, ...notFound },
        },
      },
      async (request) => service.get(who(request), request.params.id, request.params.scheduleId),
    );

    app.patch(
      '/v1/agent/:id/schedules/:scheduleId',
      {
        config,
        schema: {
          tags,
          summary: 'Change a schedule',
          description:
            'Any field of the create body. A change of cron, timezone or enabled recomputes next_run_at from now; occurrences before it that had not fired are dropped.',
          params: ScheduleParams,
          body: PatchScheduleBody,
          response: { 200: ScheduleSchema, ...notFound },
        },
      },
      async (request) =>
        service.patch(actingOf(request), request.params.id, request.params.scheduleId, request.body ?? {}),
    );

    app.delete(
      '/v1/agent/:id/schedules/:scheduleId',
      {
        config,
        schema: {
          tags,
          summary: 'Delete a schedule',
          description: 'No occurrence fires after the answer; its run log goes with it, the tasks it created stay.',
          params: ScheduleParams,
          response: { 204: NoContent, ...notFound },
        },
      },
      async (request, reply) => {
        await service.remove(actingOf(request), request.params.id, request.params.scheduleId);
        return reply.code(204).send(null);
      },
    );

    app.post(
      '/v1/agent/:id/schedules/:scheduleId/run',
      {
        config,
        schema: {
          tags,
          summary: 'Run a schedule now',
          description:
            'Fires the schedule now, enabled or not, without moving next_run_at. 409 CONFLICT when overlap is skip and its latest task is not finished; 503 AGENT_UNAVAILABLE when the agent is paused, stopped or in error (both logged as skipped runs).',
          params: ScheduleParams,
          body: NoBody,
          response: { 202: RunAccepted, ...errorResponses([404, 409, 503]) },
        },
      },
      async (request, reply) =>
        reply.code(202).send(await service.runNow(who(request), request.params.id, request.params.scheduleId)),
    );

    app.get(
      '/v1/agent/:id/schedules/:scheduleId/runs',
      {
        config,
        schema: {
          tags,
          summary: 'List runs',
          description:
            'Decided occurrences, newest first: the task created, or why it was skipped (overlap, agent_unavailable, missed).',
          params: ScheduleParams,
          querystring: ScheduleListQuery,
          response: { 200: RunListReply, ...notFound },
        },
      },
      async (request) => {
        const { page, limit } = request.query;
        const { runs, total } = await service.runs(
          who(request),
          request.params.id,
          request.params.scheduleId,
          page,
          limit,
        );
        return { runs, pagination: pagination(page, limit, total) };
      },
    );
  };
}
