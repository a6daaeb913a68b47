import type { Db, Executor } from '../../db/connect.js';
import { afterCommit } from '../../db/transactions.js';
import { AppError, notFound } from '../../http/errors.js';
import { newId } from '../../lib/ids.js';
import { type Clock, iso } from '../../lib/time.js';
import type { TaskChangeEvent } from '../tasks/lifecycle/tasks-writer.js';
import type { TaskRef, TasksService } from '../tasks/tasks-service.js';
import { ANNOUNCED_STATUSES } from './callbacks-fns.js';
import type { CallbackRow, CallbacksRepo } from './callbacks-repo.js';

/** One A2A push notification to queue: the payload as sent, the config's headers in clear (sealed when stored). */
export interface PushDelivery {
  taskUuid: string;
  workspaceUuid: string;
  url: string;
  eventType: string;
  payload: string;
  configUuid: string;
  configId: string;
  headers: Record<string, string>;
}

/** Task callbacks: the outbox entry written with each announced change, and its visibility. */
export function createCallbacksService(deps: {
  db: Db;
  repo: CallbacksRepo;
  tasks: Pick<TasksService, 'requireTask'>;
  clock: Clock;
  nudge: () => void;
  sealHeaders: (headers: Record<string, string>) => string;
}) {
  const { db, repo } = deps;

  const view = (c: CallbackRow) => ({
    delivery_id: c.uuid,
    event_type: c.eventType,
    status: c.status,
    attempts: c.attempts,
    next_attempt_at: c.status === 'pending' ? c.nextAttemptAt : null,
    ...(c.push ? { push_config_id: c.push.configId } : {}),
  });

  return {
    /**
     * On a status change, in its transaction: queue a callback for a task submitted with
     * callback_mode webhook, so no announced change is lost or invented; once it commits, the
     * dispatcher sends it at once rather than at its next poll.
     */
    async onStatusChange({ trx, task, view: taskView }: TaskChangeEvent) {
      if (task.callbackMode !== 'webhook' || !task.webhookUrl || !ANNOUNCED_STATUSES.has(task.status)) return;
      const now = iso(deps.clock.now());
      const type = `task.${task.status}`;
      await repo.insert(trx, {
        uuid: newId(),
        taskUuid: task.uuid,
        workspaceUuid: task.workspaceUuid,
        url: task.webhookUrl,
        eventType: type,
        payload: JSON.stringify({ type, timestamp: now, data: taskView }),
        status: 'pending',
        attempts: [],
        nextAttemptAt: now,
        leaseUntil: null,
        createdAt: now,
        updatedAt: now,
      });
      afterCommit(trx, deps.nudge);
    },

    /**
     * In the change's transaction: queues one A2A push notification (an outbox row like a
     * callback's, sent by the same sender with its extra headers); once committed it goes at once.
     */
    async enqueuePush(trx: Executor, d: PushDelivery) {
      const now = iso(deps.clock.now());
      await repo.insert(trx, {
        uuid: newId(),
        taskUuid: d.taskUuid,
        workspaceUuid: d.workspaceUuid,
        url: d.url,
        eventType: d.eventType,
        payload: d.payload,
        status: 'pending',
        attempts: [],
        nextAttemptAt: now,
        leaseUntil: null,
        createdAt: now,
        updatedAt: now,
        push: {
          configUuid: d.configUuid,
          configId: d.configId,
          secretHeaders: deps.sealHeaders(d.headers),
          endedAt: null,
        },
      });
      afterCommit(trx, deps.nudge);
    },

    /** In the transaction that deletes an A2A push config: nothing more is sent to it. */
    endPushConfig: (trx: Executor, configUuid: string) => repo.endPushConfig(trx, configUuid, iso(deps.clock.now())),

    async list(ref: TaskRef) {
      await deps.tasks.requireTask(ref);
      return (await repo.listForTask(db.kysely, ref.taskUuid)).map(view);
    },

    /** Sends the delivery again now (after a failure, or early), keeping its webhook-id. */
    async retry(ref: TaskRef, deliveryId: string) {
      await deps.tasks.requireTask(ref);
      const row = await db.transaction(async (trx) => {
        const found = await repo.lock(trx, ref.taskUuid, deliveryId);
        if (!found) throw notFound('Delivery');
        if (found.push?.endedAt)
          throw new AppError('CONFLICT', 'The push notification config of this delivery was deleted');
        await repo.rearm(trx, deliveryId, iso(deps.clock.now()));
        afterCommit(trx, deps.nudge);
        return repo.find(trx, ref.taskUuid, deliveryId);
      });
      return view(row as CallbackRow);
    },
  };
}

export type CallbacksService = ReturnType<typeof createCallbacksService>;
