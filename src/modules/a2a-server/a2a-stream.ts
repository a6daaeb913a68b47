import type { FastifyReply, FastifyRequest } from 'fastify';
import { principalOf } from '../../http/guard.js';
import { startEventStream } from '../../http/stream-watch.js';
import type { Notifier } from '../../lib/notifier.js';
import type { CredentialCheck } from '../../lib/principal.js';
import type { Timers } from '../../lib/time.js';
import { watchTask } from '../tasks/events/task-watch.js';
import type { TaskRecord } from '../tasks/tasks-record.js';
import type { TaskView } from '../tasks/tasks-schemas.js';
import { EVENTS_PAGE, type TaskRef, type TasksService } from '../tasks/tasks-service.js';
import { taskView } from '../tasks/tasks-view.js';
import type { A2aServerService } from './a2a-server-service.js';
import { endsStream, type StreamResponse, streamUpdates } from './a2a-task-fns.js';

export interface StreamDeps {
  service: Pick<A2aServerService, 'a2aView'>;
  tasks: Pick<TasksService, 'snapshot' | 'eventsAfter'>;
  notifier: Pick<Notifier, 'subscribe' | 'fallbackPollMs'>;
  /** Ends of the open streams, so the app can end them all when it closes. */
  open: Set<() => void>;
  /** Heartbeats and credential re-checks, as on the task event stream. */
  credentials: CredentialCheck;
  timers: Timers;
}

/**
 * Answers with an SSE stream of A2A StreamResponses for the task: the current Task first, then
 * an update per change (see `streamUpdates`), until a final state or input-required. A comment
 * line goes out every 15 s; the stream ends when the client hangs up, and once its credential no
 * longer holds (see `watchStream`). Each event is written as the binding frames it. `release` runs
 * once the stream is over. `from`: the task as a send just left it (else it is read now).
 */
export async function streamTask(
  deps: StreamDeps,
  call: { request: FastifyRequest; reply: FastifyReply; frame: (response: StreamResponse) => string },
  ref: TaskRef,
  release: () => void,
  from?: TaskRecord,
): Promise<void> {
  // Watched from before the first read, so no change between a read and the wait is missed.
  const watch = watchTask(deps.notifier, ref.taskUuid);
  let first: Awaited<ReturnType<TasksService['snapshot']>>;
  try {
    // A stream of a message just sent starts at the task as that send left it.
    first = from ? { seq: from.seq, view: taskView(from) } : await deps.tasks.snapshot(ref);
  } catch (err) {
    watch.close();
    release();
    throw err;
  }
  let task: Awaited<ReturnType<A2aServerService['a2aView']>>;
  try {
    task = await deps.service.a2aView(first.view);
  } catch (err) {
    watch.close();
    release();
    throw err;
  }

  const { request, reply } = call;
  const stream = startEventStream(reply, {
    credentials: deps.credentials,
    timers: deps.timers,
    request,
    principal: principalOf(request),
    open: deps.open,
    onEnd: () => {
      watch.close();
      release();
    },
  });
  const { end } = stream;

  const send = (response: StreamResponse) => {
    stream.raw.write(call.frame(response));
  };

  try {
    send({ task });
    let previous: TaskView = first.view;
    let last = first.seq;
    const contextId = task.contextId;
    if (endsStream(previous.status)) return end();
    while (!stream.closed) {
      const page = await deps.tasks.eventsAfter(ref.taskUuid, last, EVENTS_PAGE);
      for (const event of page) {
        const view = event.data as TaskView;
        last = event.seq;
        for (const update of streamUpdates(previous, view, contextId)) send(update);
        previous = view;
        if (endsStream(view.status)) return end();
      }
      // A full page: more may be stored already.
      if (stream.closed || page.length === EVENTS_PAGE) continue;
      await watch.wait();
    }
  } catch (err) {
    request.log.warn({ err }, 'A2A stream failed');
    end();
  }
}
