import type { Db } from '../../db/connect.js';
import { AppError } from '../../http/errors.js';
import type { Clock } from '../../lib/time.js';
import type { ModelRuntime, RunOutcome } from '../model-runtime/model-runtime.js';
import type { OpenAiRuntime } from '../model-runtime/model-runtime-fns.js';
import { MAX_ATTEMPTS } from '../tasks/tasks-fns.js';
import type { TaskRecord, TasksRepo } from '../tasks/tasks-repo.js';
import type { TaskRef } from '../tasks/tasks-service.js';
import type { TaskWriter } from '../tasks/tasks-writer.js';
import { type TaskInput, transition } from '../tasks/transition-fns.js';

/** Backoff of a retryable failure: 1 s × 2^(attempt − 1), or the upstream's Retry-After if longer; at most 60 s. */
export function retryDelayMs(attempt: number, retryAfterMs: number | null): number {
  return Math.min(60_000, Math.max(1000 * 2 ** (attempt - 1), retryAfterMs ?? 0));
}

interface Log {
  warn(obj: object, msg: string): void;
}

/**
 * Runs one claimed task of a push runtime and reports the outcome through the task lifecycle
 * under the task's lease, exactly as a worker would: complete, ask for input, or fail (queued again
 * after a backoff while attempts remain). The lease is renewed while the call runs; a renewal that
 * finds the task cancelled or no longer ours aborts the call.
 */
export function createTaskRunner(deps: {
  db: Db;
  repo: Pick<TasksRepo, 'lockTask'>;
  writer: TaskWriter;
  clock: Clock;
  model: ModelRuntime;
  log: Log;
  /** Called with the delay after which a retried task may run again. */
  onRetry: (delayMs: number) => void;
}) {
  const { db, repo, writer } = deps;

  /** Applies `input` to the task under a row lock; the task as it is afterwards. */
  function report(ref: TaskRef, input: TaskInput): Promise<TaskRecord> {
    const nowMs = deps.clock.now();
    return db.transaction(async (trx) => {
      const current = await repo.lockTask(trx, ref);
      if (!current) throw new AppError('NOT_FOUND', 'Task not found');
      const decided = transition(current, input, nowMs);
      if (decided instanceof AppError) throw decided;
      return decided ? (await writer.save(trx, current, decided)).task : current;
    });
  }

  /** A report the task may no longer accept (cancelled, timed out, lease lost): nothing to do then. */
  async function settle(ref: TaskRef, input: TaskInput): Promise<void> {
    try {
      await report(ref, input);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
    }
  }

  async function apply(ref: TaskRef, task: TaskRecord, outcome: RunOutcome, signal: AbortSignal): Promise<void> {
    const leaseId = task.leaseId as string;
    switch (outcome.kind) {
      case 'aborted':
        // Cancelled or timed out: already settled. At shutdown: back to the queue for another instance.
        if (signal.reason === 'shutdown') await settle(ref, { op: 'release', leaseId });
        return;
      case 'completed':
        return settle(ref, { op: 'complete', leaseId, result: outcome.result });
      case 'input_request':
        return settle(ref, { op: 'input_request', leaseId, message: outcome.message });
      case 'failed': {
        const delayMs = retryDelayMs(task.attempt, outcome.retryAfterMs);
        const error = { code: 'PROVIDER_ERROR', message: outcome.message };
        const retryAtMs = deps.clock.now() + delayMs;
        await settle(ref, { op: 'fail', leaseId, error, retryable: outcome.retryable, retryAtMs });
        if (outcome.retryable && task.attempt < MAX_ATTEMPTS) deps.onRetry(delayMs);
      }
    }
  }

  return {
    /** Runs the task to its outcome; `controller` is aborted by cancel or timeout. */
    async run(task: TaskRecord, runtime: OpenAiRuntime, controller: AbortController): Promise<void> {
      const ref = { userUuid: task.userUuid, agentUuid: task.agentUuid, taskUuid: task.uuid };
      const leaseId = task.leaseId as string;
      const renewMs = ((task.leaseSeconds ?? 60) * 1000) / 3;
      const renewal = setInterval(() => {
        report(ref, { op: 'renew', leaseId })
          .then((now) => now.status !== 'running' && controller.abort())
          .catch(() => controller.abort());
      }, renewMs);
      try {
        const conversation = task.messages.map(({ role, content }) => ({ role, content }));
        const outcome = await deps.model.run({ ...ref, runtime, conversation, signal: controller.signal });
        await apply(ref, task, outcome, controller.signal);
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
