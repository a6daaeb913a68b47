import type { Db, Executor } from '../../db/connect.js';
import { AppError } from '../../http/errors.js';
import { retryDelayMs } from '../../lib/backoff.js';
import type { Log } from '../../lib/log.js';
import { type Clock, iso } from '../../lib/time.js';
import type { Runtime } from '../agents/runtime-schemas.js';
import type { Lifecycle } from '../tasks/lifecycle/lifecycle.js';
import type { TaskInput } from '../tasks/lifecycle/transition-fns.js';
import type { TaskRecord } from '../tasks/tasks-record.js';
import type { TaskRef } from '../tasks/tasks-service.js';
import { claimItemOf } from '../tasks/tasks-view.js';
import type { PushOutcome, PushRuntime } from './push-runtime.js';
import { runtimesRepo } from './runtimes-repo.js';

/** Why a run's signal was aborted. */
export const ABORT = {
  /** The service is shutting down: the task goes back to the queue, attempt unchanged. */
  shutdown: 'shutdown',
  /** The task was cancelled or timed out: the remote is told (`cancelled`). */
  stopped: 'stopped',
  /** The lease is no longer ours (it ran out and another run took over): nothing to apply or tell. */
  lost: 'lost',
} as const;

/** Push runtimes by runtime `type`. */
export type PushRuntimes = Partial<Record<Runtime['type'], PushRuntime<never>>>;

/** What a runtime saved about a task in earlier runs. */
type State = Record<string, unknown> | null;

/**
 * Runs one claimed task of a push runtime and reports the outcome through the task lifecycle
 * under the task's lease, exactly as a worker would: complete, ask for input, fail (queued again
 * after a backoff while attempts remain), cancel, or keep holding it (an http agent's 202). The
 * lease is renewed while the run lasts; a renewal that finds the task no longer ours aborts it.
 */
export function createTaskRunner(deps: {
  db: Db;
  lifecycle: Pick<Lifecycle, 'apply'>;
  clock: Clock;
  runtimes: PushRuntimes;
  log: Log;
  /** Called with the delay after which a retried task may run again. */
  onRetry: (delayMs: number) => void;
}) {
  const { db, lifecycle } = deps;

  /**
   * Applies `input` to the task through the lifecycle door (then `after`, in the same
   * transaction, if it changed); the task as it is afterwards, or the refusal.
   */
  function report(ref: TaskRef, input: TaskInput, after?: (trx: Executor) => Promise<unknown>) {
    const nowMs = deps.clock.now();
    return db.transaction(async (trx): Promise<TaskRecord | AppError> => {
      try {
        const applied = await lifecycle.apply(trx, ref, input, nowMs);
        if (applied.changed) await after?.(trx);
        return applied.task;
      } catch (err) {
        // A refusal changed nothing (no statement failed), so the transaction may go on.
        if (err instanceof AppError) return err;
        throw err;
      }
    });
  }

  /** Tells the remote a task it held was cancelled or timed out; its trouble is only logged. */
  async function tell(push: PushRuntime<never>, args: { task: TaskRecord; runtime: Runtime; state: State }) {
    try {
      await push.cancelled?.(args as never);
    } catch (err) {
      deps.log.warn({ err, task: args.task.uuid }, 'telling a push runtime about a cancel failed');
    }
  }

  async function apply(
    task: TaskRecord,
    runtime: Runtime,
    push: PushRuntime<never>,
    outcome: PushOutcome,
    signal: AbortSignal,
    state: State,
  ): Promise<void> {
    const ref = { workspaceUuid: task.workspaceUuid, agentUuid: task.agentUuid, taskUuid: task.uuid };
    const leaseId = task.leaseId as string;
    switch (outcome.kind) {
      case 'aborted':
        if (signal.reason === ABORT.shutdown) await report(ref, { op: 'release', leaseId });
        else if (signal.reason === ABORT.stopped) await tell(push, { task, runtime, state });
        return;
      case 'completed':
        await report(ref, { op: 'complete', leaseId, result: outcome.result });
        return;
      case 'input_request':
        await report(ref, { op: 'input_request', leaseId, message: outcome.message });
        return;
      case 'cancelled': {
        // The remote ended it: cancel only what this run still holds.
        const held = await report(ref, { op: 'renew', leaseId });
        if (!(held instanceof AppError) && held.status === 'running') await report(ref, { op: 'cancel' });
        return;
      }
      case 'accepted': {
        const now = iso(deps.clock.now());
        const held = await report(ref, { op: 'renew', leaseId, leaseSeconds: outcome.leaseSeconds }, (trx) =>
          runtimesRepo.markAccepted(trx, task.uuid, leaseId, now),
        );
        // Cancelled (or timed out) before the answer came: the agent took it on, so tell it.
        if (!(held instanceof AppError) && held.status === 'cancelled') await tell(push, { task, runtime, state });
        return;
      }
      case 'failed': {
        const delayMs = retryDelayMs(task.attempt, outcome.retryAfterMs);
        const error = { code: outcome.code, message: outcome.message };
        const retryAtMs = deps.clock.now() + delayMs;
        const after = await report(ref, { op: 'fail', leaseId, error, retryable: outcome.retryable, retryAtMs });
        // Queued again: the dispatcher looks once the wait (its own or the agent's policy's, the longer) is over.
        if (!(after instanceof AppError) && after.status === 'queued')
          deps.onRetry(Math.max(0, Date.parse(after.availableAt) - deps.clock.now()));
      }
    }
  }

  return {
    /** Runs the task to its outcome; `controller` is aborted (with an ABORT reason) by cancel, timeout or shutdown. */
    async run(task: TaskRecord, runtime: Runtime, controller: AbortController): Promise<void> {
      const push = deps.runtimes[runtime.type];
      if (!push) return;
      const ref = { workspaceUuid: task.workspaceUuid, agentUuid: task.agentUuid, taskUuid: task.uuid };
      const leaseId = task.leaseId as string;
      const renewMs = ((task.leaseSeconds ?? 60) * 1000) / 3;
      const renewal = setInterval(() => {
        report(ref, { op: 'renew', leaseId })
          .then((now) => {
            if (now instanceof AppError) controller.abort(ABORT.lost);
            else if (now.status !== 'running') controller.abort(ABORT.stopped);
          })
          .catch(() => controller.abort(ABORT.lost));
      }, renewMs);
      try {
        let state = (await runtimesRepo.findRun(db.kysely, task.uuid))?.state ?? null;
        const outcome = await push.run({
          task,
          runtime: runtime as never,
          signal: controller.signal,
          traceparent: claimItemOf(task).traceparent,
          state,
          saveState: async (next) => {
            const now = iso(deps.clock.now());
            await db.transaction((trx) => runtimesRepo.saveState(trx, task.uuid, next, now));
            state = next;
          },
        });
        await apply(task, runtime, push, outcome, controller.signal, state);
      } catch (err) {
        // Our own trouble (e.g. the database went away): the lease runs out and the task comes back.
        deps.log.warn({ err, task: task.uuid }, 'running a task of a push runtime failed');
      } finally {
        clearInterval(renewal);
      }
    },
  };
}

export type TaskRunner = ReturnType<typeof createTaskRunner>;
