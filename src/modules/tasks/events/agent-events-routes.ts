import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../../db/connect.js';
import type { ConnectionLimits } from '../../../http/connection-limits.js';
import { errorResponses } from '../../../http/error-schemas.js';
import { invalid } from '../../../http/errors.js';
import { principalOf } from '../../../http/guard.js';
import { HEARTBEAT_MS, startEventStream } from '../../../http/stream-watch.js';
import type { Notifier } from '../../../lib/notifier.js';
import type { CredentialCheck } from '../../../lib/principal.js';
import type { Timers } from '../../../lib/time.js';
import type { AgentsService } from '../../agents/agents-service.js';
import { AgentIdParams, type TaskView } from '../tasks-schemas.js';
import { EVENTS_PAGE } from '../tasks-service.js';
import type { AgentEventsRepo } from './agent-events-repo.js';
import { fromStoredEvent, needsConversation } from './task-events-fns.js';
import { watchAgentTasks } from './task-watch.js';

const EventHeaders = Type.Object({
  'last-event-id': Type.Optional(
    Type.String({
      description:
        'Resume after this event id (a decimal integer): the kept events with higher ids first, then live ones.',
    }),
  ),
});

/**
 * The task bodies of up to EVENTS_PAGE events of the agent's stream after `after`, in order. An
 * event whose task is gone (removed by retention since) has no body left: `data` null, skipped by
 * the caller. Events are read before the conversations, which can only have grown since.
 */
async function readPage(db: Db, repo: AgentEventsRepo, agentUuid: string, after: number) {
  const stored = await repo.after(db.kysely, agentUuid, after, EVENTS_PAGE);
  const needed = new Set(stored.filter((e) => needsConversation(e.data)).map((e) => e.taskUuid));
  const conversations = await repo.conversations(db.kysely, [...needed]);
  return stored.map((e) => {
    if (!needsConversation(e.data)) return { id: e.id, data: e.data as TaskView };
    const conversation = conversations.get(e.taskUuid);
    return { id: e.id, data: conversation ? fromStoredEvent(e.data, conversation) : null };
  });
}

/**
 * GET /agent/:id/tasks/events: every change of any task of the agent (its creation, each state,
 * progress or message change) as `event: task`, `id: <n>` (the agent's own numbering, in commit
 * order), `data: <the task body then>`. No backlog without Last-Event-ID; with it, the kept events
 * after that id first. The stream ends when the client closes it, the agent is deleted (heard at
 * once, and checked again every HEARTBEAT_MS in case an announcement was lost), or the credential
 * no longer holds (see stream-watch.ts). Each open stream holds one of its workspace's stream slots.
 */
export function agentEventsRoute(
  app: FastifyInstance,
  deps: {
    db: Db;
    repo: AgentEventsRepo;
    agents: Pick<AgentsService, 'requireOwned' | 'requireOwnedIn'>;
    notifier: Notifier;
    connections: ConnectionLimits;
    credentials: CredentialCheck;
    timers: Timers;
  },
  /** The ends of the open streams of the plugin it is registered in (all ended when the app closes). */
  open: Set<() => void>,
): void {
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/agent/:id/tasks/events',
    {
      config: { auth: 'user', feature: 'agents' },
      schema: {
        tags: ['tasks'],
        summary: "Stream every change of the agent's tasks (SSE)",
        description:
          "Server-sent events: `event: task`, `id: <n>`, `data: <the task's GET body as of that change>`, one per change of any task of the agent: its creation (queued), each state, progress or message change. Ids are decimal integers that increase over all of the agent's events, in commit order. Without Last-Event-ID only changes committed after the stream opened; with it, the kept events after that id (at least those of the last 24 h and the last 1,000, while their tasks exist) first. Ends when the agent is deleted or the credential loses access; a comment line every 15 s. Counts toward the 50 open streams per workspace (429 LIMIT_EXCEEDED).",
        params: AgentIdParams,
        headers: EventHeaders,
        response: {
          200: {
            description: 'An event stream.',
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          },
          ...errorResponses([400, 404]),
        },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const agentUuid = request.params.id;
      const header = request.headers['last-event-id'];
      if (header !== undefined && !/^[0-9]+$/.test(header)) {
        throw invalid('Last-Event-ID', 'must be a decimal integer (the id of an event)');
      }
      // Watched from before the first read, so no change between a read and the wait is missed.
      const watch = watchAgentTasks(deps.notifier, agentUuid);
      let latest: number;
      let releaseSlot: () => void;
      try {
        await deps.agents.requireOwned(principal.workspaceUuid, agentUuid);
        latest = await deps.repo.latest(deps.db.kysely, agentUuid);
        releaseSlot = deps.connections.acquire(principal.workspaceUuid, 'stream');
      } catch (err) {
        watch.close();
        throw err;
      }

      let stopChecks = () => {};
      const stream = startEventStream(reply, {
        credentials: deps.credentials,
        timers: deps.timers,
        request,
        principal,
        open,
        onEnd: () => {
          stopChecks();
          watch.close();
          releaseSlot();
        },
      });
      const { end } = stream;
      // Is the agent still there? Read past the agents' cache, which another instance's deletion
      // may reach after this stream heard of it.
      const agentGone = () =>
        deps.agents.requireOwnedIn(deps.db.kysely, principal.workspaceUuid, agentUuid).then(
          () => false,
          () => true,
        );
      // Also looked at with the heartbeat, for an announcement lost on the way (a dropped connection).
      let checking = false;
      stopChecks = deps.timers.every(HEARTBEAT_MS, () => {
        if (checking) return;
        checking = true;
        agentGone()
          .then((gone) => gone && end())
          .catch((err) => request.log.warn({ err }, 'agent event stream: agent check failed'))
          .finally(() => {
            checking = false;
          });
      });

      try {
        // Numbers are handed out in commit order, so every event above `last` is yet to come or
        // already visible: none is skipped. An id past the newest resumes from the newest.
        let last = header === undefined ? latest : Math.min(Number(header), latest);
        // The agent is deleted: its last events (the cancellations its deletion made, committed
        // with it) are sent, then the stream ends.
        let ending = false;
        while (!stream.closed) {
          const page = await readPage(deps.db, deps.repo, agentUuid, last);
          for (const event of page) {
            if (event.data) stream.raw.write(`id: ${event.id}\nevent: task\ndata: ${JSON.stringify(event.data)}\n\n`);
            last = event.id;
          }
          // A full page: more may be stored already.
          if (stream.closed || page.length === EVENTS_PAGE) continue;
          if (ending) return end();
          const wake = await watch.wait();
          ending = wake.heard.has('agent-deleted') && (await agentGone());
        }
      } catch (err) {
        request.log.warn({ err }, 'agent event stream failed');
        end();
      }
    },
  );
}
