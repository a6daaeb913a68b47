import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { errorResponses } from '../../../http/error-schemas.js';
import { principalOf, taskRefOf } from '../../../http/guard.js';
import { startEventStream } from '../../../http/stream-watch.js';
import { FINAL_STATUSES, type TaskStatus } from '../tasks-fns.js';
import { TaskParams } from '../tasks-schemas.js';
import { EVENTS_PAGE, type TasksService } from '../tasks-service.js';
import { agentEventsRoute } from './agent-events-routes.js';
import { watchTask } from './task-watch.js';

const EventHeaders = Type.Object({
  'last-event-id': Type.Optional(
    Type.String({ pattern: '^[0-9]{1,12}$', description: 'Resume after this event id: only later events are sent.' }),
  ),
});

/**
 * GET /agent/:id/task/:taskId/events: a text/event-stream of `event: task` messages whose data
 * is the task body and whose id increases with every change. The current task comes first
 * (unless resuming with Last-Event-ID), the stream ends after a final state. Every HEARTBEAT_MS a
 * comment line goes out and the credential is checked again (and at once when this instance hears
 * the user's credentials changed): a revoked credential, a changed password or a lost agents
 * feature ends the stream. Each open stream holds one of its user's stream slots.
 */
export function eventsRoutes(deps: { service: TasksService } & Parameters<typeof agentEventsRoute>[1]) {
  const open = new Set<() => void>();

  return async function routes(base: FastifyInstance) {
    const app = base.withTypeProvider<TypeBoxTypeProvider>();
    app.addHook('preClose', async () => {
      for (const end of open) end();
    });
    // The agent-wide stream of all its tasks (agent-events-routes.ts), under the same rules.
    agentEventsRoute(base, deps, open);

    app.get(
      '/agent/:id/task/:taskId/events',
      {
        config: { auth: 'user', feature: 'agents' },
        schema: {
          tags: ['tasks'],
          summary: 'Stream task events (SSE)',
          description:
            'Server-sent events: `event: task`, `id: <sequence>`, `data: <the GET body>`; the current task first, then one event per state, progress or message change; with Last-Event-ID only later events. The stream ends after completed, failed or cancelled, and within 15 s of its credential being revoked or the password being changed. A comment line is sent every 15 s. At most 50 open streams per workspace (429 LIMIT_EXCEEDED).',
          params: TaskParams,
          headers: EventHeaders,
          response: {
            200: {
              description: 'An event stream.',
              content: { 'text/event-stream': { schema: { type: 'string' } } },
            },
            ...errorResponses([404]),
          },
        },
      },
      async (request, reply) => {
        const ref = taskRefOf(request);
        const principal = principalOf(request);
        const resumeFrom = request.headers['last-event-id'];
        // Watched from before the first read, so no change between a read and the wait is missed.
        const watch = watchTask(deps.notifier, ref.taskUuid);
        let first: Awaited<ReturnType<TasksService['snapshot']>>;
        let releaseSlot: () => void;
        try {
          first = await deps.service.snapshot(ref);
          releaseSlot = deps.connections.acquire(principal.workspaceUuid, 'stream');
        } catch (err) {
          watch.close();
          throw err;
        }

        const stream = startEventStream(reply, {
          credentials: deps.credentials,
          timers: deps.timers,
          request,
          principal,
          open,
          onEnd: () => {
            watch.close();
            releaseSlot();
          },
        });
        const { end } = stream;

        const send = (seq: number, data: unknown) =>
          stream.raw.write(`id: ${seq}\nevent: task\ndata: ${JSON.stringify(data)}\n\n`);
        const isFinal = (data: unknown) => FINAL_STATUSES.has((data as { status: TaskStatus }).status);

        try {
          let last: number;
          const resume = resumeFrom === undefined ? 0 : Number(resumeFrom);
          if (resume < 1) {
            send(first.seq, first.view);
            last = first.seq;
            if (isFinal(first.view)) return end();
          } else {
            // An id past the newest event can only wait forever: resume from the newest instead.
            last = Math.min(resume, first.seq);
            // Resuming after the final event: nothing more will ever come.
            if (last === first.seq && isFinal(first.view)) return end();
          }
          while (!stream.closed) {
            const page = await deps.service.eventsAfter(ref.taskUuid, last, EVENTS_PAGE);
            for (const event of page) {
              send(event.seq, event.data);
              last = event.seq;
              if (isFinal(event.data)) return end();
            }
            // A full page: more may be stored already.
            if (stream.closed || page.length === EVENTS_PAGE) continue;
            await watch.wait();
          }
        } catch (err) {
          request.log.warn({ err }, 'event stream failed');
          end();
        }
      },
    );
  };
}
