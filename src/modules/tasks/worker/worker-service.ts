import type { Db } from '../../../db/connect.js';
import type { ConnectionLimits } from '../../../http/connection-limits.js';
import { AppError, invalid } from '../../../http/errors.js';
import type { Notifier } from '../../../lib/notifier.js';
import type { Clock } from '../../../lib/time.js';
import type { AgentsService } from '../../agents/agents-service.js';
import { watchWork } from '../events/task-watch.js';
import type { Lifecycle } from '../lifecycle/lifecycle.js';
import { DEFAULT_LEASE_SECONDS, type TaskInput } from '../lifecycle/transition-fns.js';
import type { TaskRecord } from '../tasks-record.js';
import type { ClaimedTask, ClaimInput, CompleteBatchItem, Progress, TaskResult, TaskView } from '../tasks-schemas.js';
import type { TaskRef } from '../tasks-service.js';
import { claimItemOf } from '../tasks-view.js';

/** How long past a waiting task's `available_at` an empty long-poll claim looks again. */
const NEXT_LOOK_SLACK_MS = 5;

/** The worker protocol: claim with long poll, heartbeat progress, ask for input, complete, fail. */
export function createWorkerService(deps: {
  db: Db;
  lifecycle: Pick<Lifecycle, 'apply' | 'applyMany' | 'claim'>;
  agents: Pick<AgentsService, 'requireOwned'>;
  notifier: Notifier;
  /** A claim that may wait holds one of its user's wait slots while it runs. */
  connections: Pick<ConnectionLimits, 'acquire'>;
  clock: Clock;
}) {
  const { db, lifecycle } = deps;
  // Aborted at shutdown: waiting claims answer at once with what they have (nothing).
  const closing = new AbortController();

  /** A claim now: the tasks handed out and, when none, how long until a waiting one becomes available (ms). */
  async function tryClaim(agentUuid: string, input: ClaimInput): Promise<{ tasks: ClaimedTask[]; untilNext: number }> {
    const lease = { leaseSeconds: input.lease_seconds ?? DEFAULT_LEASE_SECONDS, workerId: input.worker_id ?? null };
    const claimed = await db.transaction((trx) =>
      lifecycle.claim(trx, agentUuid, input.max_tasks ?? 1, { lease: () => lease }),
    );
    const next = claimed.nextAvailableAt;
    // A few ms past the instant, so the next look is not a timer's rounding early.
    const untilNext =
      next === null ? Number.POSITIVE_INFINITY : Date.parse(next) - deps.clock.now() + NEXT_LOOK_SLACK_MS;
    return { tasks: claimed.tasks.map(claimItemOf), untilNext };
  }

  /**
   * Applies a report of the worker holding the task through the transition function.
   * @throws AppError NOT_FOUND, or TASK_NOT_RUNNING for a stale lease or a task that is no longer running.
   */
  function report(ref: TaskRef, input: TaskInput): Promise<{ task: TaskRecord; view: TaskView }> {
    return db.transaction((trx) => lifecycle.apply(trx, ref, input));
  }

  async function releaseAll(workspaceUuid: string, agentUuid: string, tasks: ClaimedTask[]) {
    for (const task of tasks) {
      await release({ workspaceUuid, agentUuid, taskUuid: task.task_id }, task.lease_id).catch(() => undefined);
    }
  }

  /** Hands the task back unfinished: queued again, attempt unchanged. */
  const release = async (ref: TaskRef, leaseId: string) => (await report(ref, { op: 'release', leaseId })).view;

  async function claimOrWait(
    workspaceUuid: string,
    agentUuid: string,
    input: ClaimInput,
    deadline: number,
    signal?: AbortSignal,
  ): Promise<ClaimedTask[]> {
    // Watched from before the first look until the answer: work announced while a look runs
    // (after its query found nothing, before the wait) makes the wait return at once.
    const stop = signal ? AbortSignal.any([signal, closing.signal]) : closing.signal;
    const watch = watchWork(deps.notifier, agentUuid, { signal: stop });
    try {
      for (;;) {
        if (signal?.aborted) return [];
        const { tasks, untilNext } = await tryClaim(agentUuid, input);
        if (signal?.aborted && tasks.length > 0) {
          // The worker is gone: hand the tasks straight back rather than let their leases run out.
          await releaseAll(workspaceUuid, agentUuid, tasks);
          return [];
        }
        const left = deadline - performance.now();
        if (tasks.length > 0 || left <= 0 || closing.signal.aborted) return tasks;
        // Asleep until work is announced, or a delayed task or a retry's wait comes due, or time runs out.
        await watch.wait(Math.max(0, Math.min(left, untilNext)));
      }
    } finally {
      watch.close();
    }
  }

  return {
    /**
     * Claims up to `max_tasks` tasks in priority-then-age order within the agent's concurrency;
     * with `wait_seconds`, waits until work arrives (answering the moment it does) or time runs out.
     * @throws AppError NOT_FOUND, INVALID_REQUEST (a push runtime), or 429 LIMIT_EXCEEDED when
     * the user already has the most waiting claims allowed.
     */
    async claim(
      workspaceUuid: string,
      agentUuid: string,
      input: ClaimInput,
      signal?: AbortSignal,
    ): Promise<ClaimedTask[]> {
      const agent = await deps.agents.requireOwned(workspaceUuid, agentUuid);
      // The service itself hands tasks of push runtimes (e.g. a model) to them: no worker may take one.
      if (agent.runtime.type !== 'worker')
        throw invalid('runtime', `This agent's runtime is ${agent.runtime.type}: the service runs its tasks`);
      const waitSeconds = input.wait_seconds ?? 0;
      const releaseSlot = waitSeconds > 0 ? deps.connections.acquire(workspaceUuid, 'wait') : () => undefined;
      try {
        return await claimOrWait(workspaceUuid, agentUuid, input, performance.now() + waitSeconds * 1000, signal);
      } finally {
        releaseSlot();
      }
    },

    /** Heartbeat: records progress and extends the lease. A cancelled task answers status cancelled. */
    async progress(ref: TaskRef, leaseId: string, progress: Progress) {
      const { task } = await report(ref, { op: 'progress', leaseId, progress });
      return {
        task_id: task.uuid,
        status: task.status,
        lease_expires_at: task.status === 'cancelled' ? null : task.leaseExpiresAt,
      };
    },

    /** The task waits for the user (awaiting_input); the question joins the conversation; the lease ends. */
    inputRequest: async (ref: TaskRef, leaseId: string, message: string) =>
      (await report(ref, { op: 'input_request', leaseId, message })).view,

    complete: async (ref: TaskRef, leaseId: string, result: TaskResult) =>
      (await report(ref, { op: 'complete', leaseId, result })).view,

    /**
     * Completes many tasks of one agent in one transaction (one commit for all). Each task is
     * judged on its own, as the single complete would judge it: a refused one (unknown, or its
     * lease not current) changes nothing and does not stop the others.
     * @throws AppError NOT_FOUND for an agent that is not the caller's; INVALID_REQUEST for a task sent twice.
     */
    async completeMany(workspaceUuid: string, agentUuid: string, items: CompleteBatchItem[]) {
      await deps.agents.requireOwned(workspaceUuid, agentUuid);
      const seen = new Set<string>();
      for (const item of items) {
        if (seen.has(item.task_id)) throw invalid('tasks', `lists task ${item.task_id} more than once`);
        seen.add(item.task_id);
      }
      const inputs = items.map((item) => ({
        taskUuid: item.task_id,
        input: { op: 'complete' as const, leaseId: item.lease_id, result: item.result },
      }));
      // One statement locks them all, in id order; the accepted ones are saved together.
      const outcome = await db.transaction((trx) => lifecycle.applyMany(trx, { workspaceUuid, agentUuid }, inputs));
      return items.map((item) => {
        const done = outcome.get(item.task_id);
        return done instanceof AppError
          ? { task_id: item.task_id, status: 'refused' as const, error: { code: done.code, message: done.message } }
          : { task_id: item.task_id, status: 'completed' as const };
      });
    },

    /**
     * Fails the task, or with `retryable` queues it again while attempts remain (its `max_attempts`),
     * available after the policy's delay or `retryAfterSeconds`, whichever is longer.
     * @throws AppError INVALID_REQUEST for `retryAfterSeconds` without `retryable`.
     */
    async fail(
      ref: TaskRef,
      leaseId: string,
      error: { code?: string; message: string },
      opts: { retryable: boolean; retryAfterSeconds?: number | undefined },
    ) {
      if (opts.retryAfterSeconds !== undefined && !opts.retryable)
        throw invalid('retry_after_seconds', 'is only allowed with retryable true');
      return (await report(ref, { op: 'fail', leaseId, error, ...opts })).view;
    },

    /** Hands the task back unfinished (the worker is shutting down): queued again, attempt unchanged. */
    release,

    /** Stops long polls at shutdown (they answer with what they have: nothing). */
    close() {
      closing.abort();
    },
  };
}

export type WorkerService = ReturnType<typeof createWorkerService>;
