import type { Executor } from '../../db/connect.js';
import { newId } from '../../lib/ids.js';
import { iso } from '../../lib/time.js';
import type { AgentRow } from '../agents/agents-repo.js';
import type { AgentsService } from '../agents/agents-service.js';
import type { TaskSubmitter } from '../tasks/submit/task-submitter.js';
import { taskQueries } from '../tasks/task-queries.js';
import { MAX_MESSAGE_CHARS } from '../tasks/tasks-schemas.js';
import { renderMessage } from './message-fns.js';
import { messageValues } from './schedule-fns.js';
import type { RunRow, ScheduleRow, SchedulesRepo, SkippedReason } from './schedules-repo.js';

export interface DecideDeps {
  repo: SchedulesRepo;
  agents: Pick<AgentsService, 'requireOwned' | 'requireOwnedIn'>;
  tasks: Pick<TaskSubmitter, 'prepare' | 'insert'>;
}

/** One occurrence about to be decided, with its task prepared (outside any transaction). */
export interface Pending {
  run: RunRow;
  task: Awaited<ReturnType<TaskSubmitter['prepare']>> | null;
}

/**
 * Decisions of occurrences, shared by the clock and `…/run`: a task created, or a run logged
 * skipped, always together with the run in the caller's transaction.
 */
export function createDecisions(deps: DecideDeps) {
  async function agentOf(s: ScheduleRow): Promise<AgentRow | null> {
    try {
      return await deps.agents.requireOwned(s.workspaceUuid, s.agentUuid);
    } catch {
      return null;
    }
  }

  return {
    /**
     * Prepares the run and its task for `scheduledForMs`, decided at `nowMs` (the run's `fired_at`
     * and the task's `created_at`). `prepareTask` false: a skip is already certain (missed).
     */
    async prepare(s: ScheduleRow, scheduledForMs: number, nowMs: number, manual: boolean, prepareTask = true) {
      const run: RunRow = {
        runId: newId(),
        scheduleUuid: s.uuid,
        scheduledFor: iso(scheduledForMs),
        firedAt: iso(nowMs),
        manual,
        taskUuid: null,
        skippedReason: null,
      };
      const agent = prepareTask ? await agentOf(s) : null;
      if (!agent) return { run, task: null } satisfies Pending;
      const message = renderMessage(s.message, messageValues(s, scheduledForMs), MAX_MESSAGE_CHARS);
      const metadata = { ...s.metadata, schedule_uuid: s.uuid, scheduled_for: run.scheduledFor, run_id: run.runId };
      const task = await deps.tasks.prepare(
        agent,
        s.workspaceUuid,
        { message, metadata, priority: s.priority, concurrency_key: s.concurrencyKey },
        nowMs,
      );
      return { run, task } satisfies Pending;
    },

    /**
     * Decides a prepared occurrence in `trx`, after the caller has claimed it (the clock) or
     * locked the schedule (a manual run), with `current` the schedule as of that lock:
     * the agent's status and the overlap rule are read under it. `missed` is logged as it is.
     * Returns the run as logged.
     */
    async decide(trx: Executor, current: ScheduleRow, pending: Pending, missed = false): Promise<RunRow> {
      let reason: SkippedReason | null = missed ? 'missed' : null;
      if (!reason) {
        const agent = await deps.agents.requireOwnedIn(trx, current.workspaceUuid, current.agentUuid).catch(() => null);
        if (agent?.status !== 'active' || !pending.task) reason = 'agent_unavailable';
      }
      if (!reason && current.overlap === 'skip' && current.lastTaskUuid) {
        const open = await taskQueries.isOpen(trx, {
          workspaceUuid: current.workspaceUuid,
          agentUuid: current.agentUuid,
          taskUuid: current.lastTaskUuid,
        });
        if (open) reason = 'overlap';
      }
      const task = reason ? null : pending.task?.task;
      const run: RunRow = { ...pending.run, skippedReason: reason, taskUuid: task?.uuid ?? null };
      await deps.repo.insertRun(trx, run);
      if (task) {
        await deps.tasks.insert(trx, task);
        await deps.repo.setLastTask(trx, current.uuid, task.uuid);
      }
      return run;
    },
  };
}

export type Decisions = ReturnType<typeof createDecisions>;
