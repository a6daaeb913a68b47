import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { errorResponses } from '../../../http/error-schemas.js';
import { AppError } from '../../../http/errors.js';
import { actingOf, taskRefOf } from '../../../http/guard.js';
import { hitExtra, type RateLimiter, workspaceScope } from '../../../http/rate-limit.js';
import { AgentIdParams, TaskParams } from '../tasks-schemas.js';
import type { BulkService } from './bulk-service.js';
import { BulkBody, BulkReply, RerunBody, RerunReply } from './operations-schemas.js';
import type { TaskRerunner } from './task-rerunner.js';

const tags = ['tasks'];
const config = { auth: 'user' as const, feature: 'agents' as const };

const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      description:
        'As on submit (24 h, the same namespace): the same key, source task and body answer the first response and create nothing; another task or body is 422.',
    }),
  ),
});

/** HTTP routes of task operations: rerun one task, act on many. */
export function operationsRoutes(
  rerunner: Pick<TaskRerunner, 'rerun'>,
  bulk: Pick<BulkService, 'bulk'>,
  rateLimit: RateLimiter,
) {
  return async function routes(base: FastifyInstance) {
    const app = base.withTypeProvider<TypeBoxTypeProvider>();

    app.post(
      '/agent/:id/task/:taskId/rerun',
      {
        config,
        schema: {
          tags,
          summary: 'Rerun a task',
          description:
            "A new task of the same agent from a completed, failed or cancelled task's original message, priority, metadata, timeout, concurrency key and callback, each replaceable by the body; 202 as a submit plus rerun_of, with a Location header. 409 CONFLICT for a task not final; 503 AGENT_UNAVAILABLE.",
          params: TaskParams,
          headers: IdempotencyHeaders,
          body: RerunBody,
          response: { 202: RerunReply, ...errorResponses([404, 409, 422]) },
        },
      },
      async (request, reply) => {
        const { response, replayed } = await rerunner.rerun(
          taskRefOf(request),
          request.body ?? null,
          request.headers['idempotency-key'],
        );
        if (replayed) reply.header('idempotent-replayed', 'true');
        const answer = { ...response, rerun_of: response.rerun_of ?? request.params.taskId };
        return reply.code(202).header('location', response.poll_url).send(answer);
      },
    );

    app.post(
      '/agent/:id/tasks/bulk',
      {
        config,
        schema: {
          tags,
          summary: 'Cancel or rerun many tasks',
          description:
            "Selects the agent's tasks matching the filter to which the action applies, oldest first, at most limit, and acts on each as the single operation would; a task that changed meanwhile is skipped. Audited.",
          params: AgentIdParams,
          body: BulkBody,
          response: { 200: BulkReply, ...errorResponses([404]) },
        },
      },
      async (request, reply) => {
        const acting = actingOf(request);
        // The request counted as one in its window; a rerun counts one per selected task.
        const charge = async (tasks: number) => {
          if (tasks <= 1) return;
          const result = await hitExtra(rateLimit, workspaceScope(acting.workspaceUuid), tasks - 1);
          reply.header('x-ratelimit-remaining', result.remaining);
          if (result.exceeded) {
            reply.header('retry-after', result.retryAfter);
            throw new AppError(
              'RATE_LIMITED',
              `Rate limit of ${result.limit} requests per minute exceeded: this rerun counts as ${tasks} requests`,
            );
          }
        };
        return bulk.bulk(acting, request.params.id, request.body, charge);
      },
    );
  };
}
