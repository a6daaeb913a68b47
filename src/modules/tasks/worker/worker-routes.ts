import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { errorResponses } from '../../../http/error-schemas.js';
import { principalOf, taskRefOf } from '../../../http/guard.js';
import { watchStream } from '../../../http/stream-watch.js';
import type { CredentialCheck } from '../../../lib/principal.js';
import type { Timers } from '../../../lib/time.js';
import {
  AgentIdParams,
  ClaimBody,
  ClaimReply,
  CompleteBatchBody,
  CompleteBatchReply,
  CompleteBody,
  FailBody,
  InputRequestBody,
  LeaseBody,
  ProgressBody,
  ProgressReply,
  TaskBody,
  TaskParams,
} from '../tasks-schemas.js';
import type { WorkerService } from './worker-service.js';

const tags = ['worker protocol'];
const config = { auth: 'user' as const, feature: 'agents' as const };
const reportErrors = errorResponses([404]);

/** HTTP routes of the worker protocol. Workers use a platform key of the agent's owner. */
export function workerRoutes(service: WorkerService, watch: { credentials: CredentialCheck; timers: Timers }) {
  return async function routes(base: FastifyInstance) {
    const app = base.withTypeProvider<TypeBoxTypeProvider>();

    app.post(
      '/agent/:id/tasks/claim',
      {
        config,
        schema: {
          tags,
          summary: 'Claim tasks',
          description:
            "Claims up to max_tasks tasks (priority, then age) within the agent's concurrency. With wait_seconds the call long-polls and answers the moment work arrives; an empty list means none came. Claimed tasks are running; report with the lease_id.",
          params: AgentIdParams,
          body: ClaimBody,
          response: { 200: ClaimReply, ...reportErrors },
        },
      },
      async (request, reply) => {
        // A worker that hangs up mid-poll must not be handed work it will never see; one whose
        // credential no longer may work in the workspace (revoked, removed, demoted) answers with
        // what it has, nothing.
        const gone = new AbortController();
        reply.raw.once('close', () => gone.abort());
        const principal = principalOf(request);
        const stopWatching = request.body.wait_seconds
          ? watchStream({
              ...watch,
              request,
              principal,
              needed: 'member',
              heartbeat: () => undefined,
              end: () => gone.abort(),
            })
          : () => undefined;
        try {
          const tasks = await service.claim(principal.workspaceUuid, request.params.id, request.body, gone.signal);
          return { tasks };
        } finally {
          stopWatching();
        }
      },
    );

    app.post(
      '/agent/:id/task/:taskId/progress',
      {
        config,
        schema: {
          tags,
          summary: 'Report progress (heartbeat)',
          description:
            'Records progress and extends the lease by its lease_seconds. If the task was cancelled the answer is 200 with status cancelled: stop working on it. A stale lease_id is 400 TASK_NOT_RUNNING.',
          params: TaskParams,
          body: ProgressBody,
          response: { 200: ProgressReply, ...reportErrors },
        },
      },
      async (request) => {
        const { lease_id, ...progress } = request.body;
        return service.progress(taskRefOf(request), lease_id, progress);
      },
    );

    app.post(
      '/agent/:id/task/:taskId/input_request',
      {
        config,
        schema: {
          tags,
          summary: 'Ask the user for input',
          description:
            "The task becomes awaiting_input and the question joins its messages; the lease ends. The user's reply makes it claimable again with the whole conversation.",
          params: TaskParams,
          body: InputRequestBody,
          response: { 200: TaskBody, ...reportErrors },
        },
      },
      async (request) => service.inputRequest(taskRefOf(request), request.body.lease_id, request.body.message),
    );

    app.post(
      '/agent/:id/task/:taskId/complete',
      {
        config,
        schema: {
          tags,
          summary: 'Complete a task',
          description:
            'Stores the result; the task becomes completed. A lease that is not current is 400 TASK_NOT_RUNNING.',
          params: TaskParams,
          body: CompleteBody,
          response: { 200: TaskBody, ...reportErrors },
        },
      },
      async (request) => service.complete(taskRefOf(request), request.body.lease_id, request.body.result),
    );

    app.post(
      '/agent/:id/tasks/complete',
      {
        config,
        schema: {
          tags,
          summary: 'Complete many tasks',
          description:
            'Completes up to 100 tasks of the agent in one request and one commit, for workers that finish many tasks at once. Each task is judged as the single complete judges it: an unknown task or a lease that is not current is refused in its own entry (with the code the single complete would answer) and changes nothing, without stopping the others. A task listed twice is 400.',
          params: AgentIdParams,
          body: CompleteBatchBody,
          response: { 200: CompleteBatchReply, ...reportErrors },
        },
      },
      async (request) => ({
        results: await service.completeMany(principalOf(request).workspaceUuid, request.params.id, request.body.tasks),
      }),
    );

    app.post(
      '/agent/:id/task/:taskId/fail',
      {
        config,
        schema: {
          tags,
          summary: 'Fail a task',
          description:
            "The task fails with the error (code default AGENT_ERROR), or with retryable true is queued again with attempt + 1 while attempts remain (the task's max_attempts), available after the agent's retry backoff (0 by default) or retry_after_seconds, whichever is longer.",
          params: TaskParams,
          body: FailBody,
          response: { 200: TaskBody, ...reportErrors },
        },
      },
      async (request) =>
        service.fail(taskRefOf(request), request.body.lease_id, request.body.error, {
          retryable: request.body.retryable ?? false,
          retryAfterSeconds: request.body.retry_after_seconds,
        }),
    );

    app.post(
      '/agent/:id/task/:taskId/release',
      {
        config,
        schema: {
          tags,
          summary: 'Release a task unfinished',
          description:
            'For a worker that shuts down: the task is queued again at once for another worker, without using up an attempt. Same lease rules as complete.',
          params: TaskParams,
          body: LeaseBody,
          response: { 200: TaskBody, ...reportErrors },
        },
      },
      async (request) => service.release(taskRefOf(request), request.body.lease_id),
    );
  };
}
