import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { NoBody, pagination } from '../../http/common-schemas.js';
import { errorResponses } from '../../http/error-schemas.js';
import { principalOf, taskRefOf } from '../../http/guard.js';
import { parseTraceparent } from '../telemetry/trace-context-fns.js';
import type { TaskSubmitter } from './submit/task-submitter.js';
import {
  AgentIdParams,
  CancelReply,
  ListQuery,
  ListReply,
  MessageBody,
  MessageReply,
  SubmitBody,
  SubmitReply,
  TaskBody,
  TaskParams,
} from './tasks-schemas.js';
import type { TasksService } from './tasks-service.js';

const tags = ['tasks'];
const config = { auth: 'user' as const, feature: 'agents' as const };

const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      description:
        'Makes the submit safe to retry for 24 h: the same key and body answer the first response and create nothing; the same key with another agent or body is 422.',
    }),
  ),
});

/** HTTP routes of the user's side of tasks: submit, poll, list, converse, cancel. */
export function tasksRoutes(service: TasksService, submitter: Pick<TaskSubmitter, 'submit'>) {
  return async function routes(base: FastifyInstance) {
    const app = base.withTypeProvider<TypeBoxTypeProvider>();

    app.post(
      '/agent/request/:id',
      {
        config,
        schema: {
          tags,
          summary: 'Submit a task',
          description:
            'Queues a task for the agent. 202 with poll_url and cancel_url and a Location header; 503 AGENT_UNAVAILABLE when the agent is paused, stopped or in error.',
          params: AgentIdParams,
          headers: IdempotencyHeaders,
          body: SubmitBody,
          response: { 202: SubmitReply, ...errorResponses([404, 409, 422]) },
        },
      },
      async (request, reply) => {
        const { response, replayed } = await submitter.submit(
          principalOf(request).workspaceUuid,
          request.params.id,
          request.body,
          request.headers['idempotency-key'],
          // A valid W3C traceparent makes the caller's span the task span's parent; anything else is ignored.
          parseTraceparent(request.headers.traceparent),
        );
        if (replayed) reply.header('idempotent-replayed', 'true');
        return reply.code(202).header('location', response.poll_url).send(response);
      },
    );

    app.get(
      '/agent/:id/task/:taskId',
      {
        config,
        schema: {
          tags,
          summary: 'Get a task',
          description: 'Status, conversation, and the fields of its state (progress, input_request, result, error, …).',
          params: TaskParams,
          response: { 200: TaskBody, ...errorResponses([404]) },
        },
      },
      async (request) => service.get(taskRefOf(request)),
    );

    app.get(
      '/agent/:id/tasks',
      {
        config,
        schema: {
          tags,
          summary: 'List tasks of an agent',
          description: 'Newest first, optionally filtered by status.',
          params: AgentIdParams,
          querystring: ListQuery,
          response: { 200: ListReply, ...errorResponses([404]) },
        },
      },
      async (request) => {
        const { page, limit, status } = request.query;
        const { tasks, total } = await service.list(
          principalOf(request).workspaceUuid,
          request.params.id,
          status,
          page,
          limit,
        );
        return { tasks, pagination: pagination(page, limit, total) };
      },
    );

    app.post(
      '/agent/:id/task/:taskId/message',
      {
        config,
        schema: {
          tags,
          summary: 'Send a message to a task',
          description:
            'awaiting_input → running (the agent resumes with the whole conversation). To a queued or running task the message is appended for the agent. A finished task is 400 TASK_NOT_ACCEPTING_MESSAGES.',
          params: TaskParams,
          body: MessageBody,
          response: { 200: MessageReply, ...errorResponses([404]) },
        },
      },
      async (request) => service.message(taskRefOf(request), request.body.message),
    );

    app.post(
      '/agent/:id/task/:taskId/cancel',
      {
        config,
        schema: {
          tags,
          summary: 'Cancel a task',
          description:
            'From queued, running or awaiting_input. Cancelling again answers the original cancelled_at; a completed or failed task is 400 TASK_NOT_CANCELLABLE. A worker holding the task learns it on its next call.',
          params: TaskParams,
          body: NoBody,
          response: { 200: CancelReply, ...errorResponses([404]) },
        },
      },
      async (request) => service.cancel(taskRefOf(request)),
    );
  };
}
