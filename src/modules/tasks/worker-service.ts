import type { Db } from '../../db/connect.js';
import { AppError } from '../../http/errors.js';
import { newId } from '../../lib/ids.js';
import { type Clock, iso } from '../../lib/time.js';
import type { AgentsRepo } from '../agents/agents-repo.js';
import type { AgentsService } from '../agents/agents-service.js';
import { type Notifier, waitFor } from './notifier.js';
import { MAX_ATTEMPTS, type TaskOperation } from './tasks-fns.js';
import type { TaskRecord, TasksRepo } from './tasks-repo.js';
import type { ClaimedTask, ClaimInput, Progress, TaskResult, TaskView } from './tasks-schemas.js';
import type { TaskRef } from './tasks-service.js';
import type { TaskWriter } from './tasks-writer.js';

export const DEFAULT_LEASE_SECONDS = 60;

const notRunning = () => new AppError('TASK_NOT_RUNNING', 'Task is not running under this lease');

/** The worker protocol (CONTRACT §6): claim with long poll, heartbeat progress, ask for input, complete, fail. */
export function createWorkerService(deps: {
  db: Db;
  repo: TasksRepo;
  agentsRepo: Pick<AgentsRepo, 'findForClaim'>;
  agents: Pick<AgentsService, 'requireOwned'>;
  writer: TaskWriter;
  notifier: Notifier;
  clock: Clock;
}) {
  const { db, repo, writer } = deps;
  let closing = false;

  async function tryClaim(agentUuid: string, input: ClaimInput): Promise<ClaimedTask[]> {
    const nowMs = deps.clock.now();
    const now = iso(nowMs);
    const leaseSeconds = input.lease_seconds ?? DEFAULT_LEASE_SECONDS;
    const claimed = await db.transaction(async (trx) => {
      const agent = await deps.agentsRepo.findForClaim(trx, agentUuid, writer.lock);
      if (agent?.status !== 'active') return [];
      const free = agent.concurrency - (await repo.countHeld(trx, agentUuid));
      const limit = Math.min(input.max_tasks ?? 1, free);
      if (limit <= 0) return [];
      const out: Array<{ task: TaskRecord; view: TaskView }> = [];
      for (const task of await repo.selectClaimable(trx, agentUuid, limit, writer.lock)) {
        out.push(
          await writer.apply(
            trx,
            task,
            'claim',
            {
              ready: false,
              leaseId: newId(),
              leaseSeconds,
              leaseExpiresAt: iso(nowMs + leaseSeconds * 1000),
              workerId: input.worker_id ?? null,
              startedAt: task.startedAt ?? now,
              timeoutAt: task.timeoutAt ?? iso(nowMs + task.timeoutSeconds * 1000),
            },
            { now },
          ),
        );
      }
      return out;
    });
    for (const { task } of claimed) writer.announce(task);
    return claimed.map(({ task, view }) => ({
      task_id: task.uuid,
      lease_id: task.leaseId as string,
      message: task.message,
      messages: view.messages,
      priority: task.priority,
      metadata: task.metadata,
      attempt: task.attempt,
      lease_expires_at: task.leaseExpiresAt as string,
      timeout_at: task.timeoutAt as string,
    }));
  }

  /**
   * Runs a report of the lease holder in a transaction: the task must be running under `leaseId`.
   * @throws AppError NOT_FOUND, or TASK_NOT_RUNNING for a stale lease or a task that is no longer running.
   */
  async function report(
    ref: TaskRef,
    leaseId: string,
    operation: TaskOperation,
    build: (task: TaskRecord, nowMs: number) => { changes: Partial<TaskRecord>; append?: string; op?: TaskOperation },
  ): Promise<TaskView> {
    const nowMs = deps.clock.now();
    const now = iso(nowMs);
    const { task, before, view } = await db.transaction(async (trx) => {
      const current = await repo.findTask(trx, ref, writer.lock);
      if (!current) throw new AppError('NOT_FOUND', 'Task not found');
      writer.check(current, operation);
      if (current.leaseId !== leaseId || !current.leaseExpiresAt) throw notRunning();
      const { changes, append, op } = build(current, nowMs);
      const applied = await writer.apply(trx, current, op ?? operation, changes, {
        now,
        append: append === undefined ? undefined : { role: 'agent', content: append, created_at: now },
      });
      return { ...applied, before: current };
    });
    writer.announce(task, before);
    return view;
  }

  async function releaseAll(userUuid: string, agentUuid: string, tasks: ClaimedTask[]) {
    for (const task of tasks) {
      await release({ userUuid, agentUuid, taskUuid: task.task_id }, task.lease_id).catch(() => undefined);
    }
  }

  /** Hands the task back unfinished: queued again, attempt unchanged. */
  function release(ref: TaskRef, leaseId: string) {
    return report(ref, leaseId, 'release', (_task, nowMs) => ({
      changes: { ready: true, leaseExpiresAt: null, leaseId: null, estimatedStart: iso(nowMs) },
    }));
  }

  return {
    /**
     * Claims up to `max_tasks` tasks in priority-then-age order within the agent's concurrency;
     * with `wait_seconds`, waits until work arrives (answering the moment it does) or time runs out.
     */
    async claim(userUuid: string, agentUuid: string, input: ClaimInput, signal?: AbortSignal): Promise<ClaimedTask[]> {
      await deps.agents.requireOwned(userUuid, agentUuid);
      const deadline = performance.now() + (input.wait_seconds ?? 0) * 1000;
      for (;;) {
        if (signal?.aborted) return [];
        // Subscribe before looking, so work that lands between the look and the wait is not missed.
        let woken = false;
        const unsubscribe = deps.notifier.subscribe('work', agentUuid, () => {
          woken = true;
        });
        try {
          const tasks = await tryClaim(agentUuid, input);
          if (signal?.aborted && tasks.length > 0) {
            // The worker is gone: hand the tasks straight back rather than let their leases run out.
            await releaseAll(userUuid, agentUuid, tasks);
            return [];
          }
          const left = deadline - performance.now();
          if (tasks.length > 0 || left <= 0 || closing) return tasks;
          if (!woken) await waitFor(deps.notifier, 'work', agentUuid, left, signal);
        } finally {
          unsubscribe();
        }
      }
    },

    /** Heartbeat: records progress and extends the lease. A cancelled task answers status cancelled. */
    async progress(ref: TaskRef, leaseId: string, progress: Progress) {
      const nowMs = deps.clock.now();
      const result = await db.transaction(async (trx) => {
        const current = await repo.findTask(trx, ref, writer.lock);
        if (!current) throw new AppError('NOT_FOUND', 'Task not found');
        writer.check(current, 'progress');
        if (current.leaseId !== leaseId) throw notRunning();
        if (current.status === 'cancelled') return { task: current, changed: false };
        if (!current.leaseExpiresAt) throw notRunning();
        const leaseExpiresAt = iso(nowMs + (current.leaseSeconds ?? DEFAULT_LEASE_SECONDS) * 1000);
        const same =
          current.progress &&
          current.progress.current_step === progress.current_step &&
          current.progress.steps_completed === progress.steps_completed &&
          current.progress.total_steps === progress.total_steps;
        if (same) {
          await repo.updateTask(trx, current.uuid, { leaseExpiresAt });
          return { task: { ...current, leaseExpiresAt }, changed: false };
        }
        const applied = await writer.apply(trx, current, 'progress', { leaseExpiresAt, progress }, { now: iso(nowMs) });
        return { task: applied.task, changed: true };
      });
      if (result.changed) writer.announce(result.task);
      return {
        task_id: result.task.uuid,
        status: result.task.status,
        lease_expires_at: result.task.status === 'cancelled' ? null : result.task.leaseExpiresAt,
      };
    },

    /** The task waits for the user (awaiting_input); the question joins the conversation; the lease ends. */
    inputRequest: (ref: TaskRef, leaseId: string, message: string) =>
      report(ref, leaseId, 'input_request', (_task, nowMs) => ({
        changes: { ready: false, leaseExpiresAt: null, inputRequest: { message, requested_at: iso(nowMs) } },
        append: message,
      })),

    complete: (ref: TaskRef, leaseId: string, result: TaskResult) =>
      report(ref, leaseId, 'complete', (_task, nowMs) => ({
        changes: { ready: false, leaseExpiresAt: null, result, completedAt: iso(nowMs) },
      })),

    /** Fails the task, or with `retryable` queues it again while attempts remain (3 in all). */
    fail: (ref: TaskRef, leaseId: string, error: { code?: string; message: string }, retryable: boolean) =>
      report(ref, leaseId, 'fail', (task, nowMs) => {
        const err = { code: error.code ?? 'AGENT_ERROR', message: error.message };
        if (retryable && task.attempt < MAX_ATTEMPTS) {
          return {
            op: 'retry',
            changes: {
              ready: true,
              leaseExpiresAt: null,
              leaseId: null,
              attempt: task.attempt + 1,
              error: err,
              estimatedStart: iso(nowMs),
            },
          };
        }
        return { changes: { ready: false, leaseExpiresAt: null, error: err, failedAt: iso(nowMs) } };
      }),

    /** Hands the task back unfinished (the worker is shutting down): queued again, attempt unchanged. */
    release,

    /** Stops long polls at shutdown (they answer with what they have: nothing). */
    close() {
      closing = true;
    },
  };
}

export type WorkerService = ReturnType<typeof createWorkerService>;
