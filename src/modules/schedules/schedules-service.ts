import type { Db, Executor } from '../../db/connect.js';
import { AppError, invalid, notFound } from '../../http/errors.js';
import { requirePlainName } from '../../http/names.js';
import { newId } from '../../lib/ids.js';
import type { Acting } from '../../lib/principal.js';
import { type Clock, iso } from '../../lib/time.js';
import type { AgentsRepo } from '../agents/agents-repo.js';
import type { AgentsService } from '../agents/agents-service.js';
import { recordAudit } from '../audit/audit-repo.js';
import type { TaskSubmitter } from '../tasks/submit/task-submitter.js';
import { workspacesRepo } from '../workspaces/workspaces-repo.js';
import type { Decisions } from './decide.js';
import { checkMessage } from './message-fns.js';
import { occurrencesAfter } from './occurrences-fns.js';
import { checkMetadata, nextRunAt, requireTiming, scheduleView } from './schedule-fns.js';
import type { ScheduleRow, SchedulesRepo } from './schedules-repo.js';
import {
  type CreateScheduleInput,
  MAX_SCHEDULES_PER_AGENT,
  type PatchScheduleInput,
  type PreviewInput,
  type RunAccepted,
} from './schedules-schemas.js';
import { localTime } from './zone-fns.js';

// ISO 8601 with a zone designator (Z or ±HH:MM).
const ZONED_ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;

/** Schedules of agents: management, preview, manual runs and the run log (docs/schedules.md). */
export function createSchedulesService(deps: {
  db: Db;
  repo: SchedulesRepo;
  agents: Pick<AgentsService, 'requireOwned' | 'requireOwnedIn'>;
  agentsRepo: Pick<AgentsRepo, 'findForClaim'>;
  tasks: Pick<TaskSubmitter, 'urls'>;
  decisions: Decisions;
  clock: Clock;
  minIntervalSeconds: number;
  /** Most schedules a workspace holds, over all its agents. */
  maxPerWorkspace: number;
  /** Called after a change that may move the next occurrence (wakes the clock). */
  onChange?: () => void;
}) {
  const { db, repo } = deps;

  async function requireSchedule(ex: Executor, workspaceUuid: string, agentUuid: string, uuid: string) {
    // Inside a transaction every read goes through it (SQLite has one connection).
    await deps.agents.requireOwnedIn(ex, workspaceUuid, agentUuid);
    const schedule = await repo.findOwned(ex, workspaceUuid, agentUuid, uuid);
    if (!schedule) throw notFound('Schedule');
    return schedule;
  }

  return {
    async create(acting: Acting, agentUuid: string, input: CreateScheduleInput) {
      const workspaceUuid = acting.workspaceUuid;
      requirePlainName(input.name);
      await deps.agents.requireOwned(workspaceUuid, agentUuid);
      const nowMs = deps.clock.now();
      const zone = input.timezone ?? 'UTC';
      const timing = requireTiming(input.cron, zone, nowMs, deps.minIntervalSeconds);
      checkMessage(input.message);
      checkMetadata(input.metadata);
      const enabled = input.enabled ?? true;
      const at = iso(nowMs);
      const schedule: ScheduleRow = {
        uuid: newId(),
        agentUuid,
        workspaceUuid,
        name: input.name,
        cron: input.cron,
        timezone: zone,
        message: input.message,
        metadata: input.metadata ?? {},
        priority: input.priority ?? 5,
        concurrencyKey: input.concurrency_key ?? null,
        enabled,
        overlap: input.overlap ?? 'allow',
        catchUpSeconds: input.catch_up_seconds ?? 0,
        nextRunAt: nextRunAt(timing, enabled, nowMs),
        lastTaskUuid: null,
        createdAt: at,
        updatedAt: at,
      };
      await db.transaction(async (trx) => {
        // The workspace and agent row locks (PostgreSQL; SQLite has one writer) make the counts
        // and the insert one step: concurrent creates never overshoot either cap.
        await workspacesRepo.lock(trx, workspaceUuid);
        if (!(await deps.agentsRepo.findForClaim(trx, agentUuid))) throw notFound('Agent');
        if ((await repo.count(trx, agentUuid)) >= MAX_SCHEDULES_PER_AGENT) {
          throw new AppError('LIMIT_EXCEEDED', `An agent has at most ${MAX_SCHEDULES_PER_AGENT} schedules`, {
            field: 'schedules',
            reason: `at most ${MAX_SCHEDULES_PER_AGENT} per agent`,
          });
        }
        if ((await repo.countInWorkspace(trx, workspaceUuid)) >= deps.maxPerWorkspace) {
          throw new AppError('LIMIT_EXCEEDED', `A workspace has at most ${deps.maxPerWorkspace} schedules`, {
            field: 'schedules',
            reason: `at most ${deps.maxPerWorkspace} per workspace (TASKHOOK_MAX_SCHEDULES_PER_WORKSPACE)`,
          });
        }
        await repo.insert(trx, schedule);
        await recordAudit(trx, acting, {
          action: 'schedule.create',
          target: { type: 'schedule', uuid: schedule.uuid },
          details: { agent_uuid: agentUuid, name: schedule.name },
        });
      });
      deps.onChange?.();
      return scheduleView(schedule);
    },

    async list(workspaceUuid: string, agentUuid: string, page: number, limit: number) {
      await deps.agents.requireOwned(workspaceUuid, agentUuid);
      const { schedules, total } = await repo.list(db.kysely, agentUuid, (page - 1) * limit, limit);
      return { schedules: schedules.map(scheduleView), total };
    },

    get: async (workspaceUuid: string, agentUuid: string, uuid: string) =>
      scheduleView(await requireSchedule(db.kysely, workspaceUuid, agentUuid, uuid)),

    async patch(acting: Acting, agentUuid: string, uuid: string, input: PatchScheduleInput) {
      if (input.name !== undefined) requirePlainName(input.name);
      if (input.message !== undefined) checkMessage(input.message);
      checkMetadata(input.metadata);
      const nowMs = deps.clock.now();
      const view = await db.transaction(async (trx) => {
        const current = await requireSchedule(trx, acting.workspaceUuid, agentUuid, uuid);
        const locked = (await repo.lock(trx, uuid)) ?? current;
        const cron = input.cron ?? locked.cron;
        const zone = input.timezone ?? locked.timezone;
        const enabled = input.enabled ?? locked.enabled;
        const retimed = input.cron !== undefined || input.timezone !== undefined || input.enabled !== undefined;
        // A changed timing starts from now: occurrences before the change are dropped.
        const timing = retimed ? requireTiming(cron, zone, nowMs, deps.minIntervalSeconds) : null;
        const next: ScheduleRow = {
          ...locked,
          name: input.name ?? locked.name,
          cron,
          timezone: zone,
          message: input.message ?? locked.message,
          metadata: input.metadata ?? locked.metadata,
          priority: input.priority ?? locked.priority,
          concurrencyKey: input.concurrency_key === undefined ? locked.concurrencyKey : input.concurrency_key,
          enabled,
          overlap: input.overlap ?? locked.overlap,
          catchUpSeconds: input.catch_up_seconds ?? locked.catchUpSeconds,
          nextRunAt: timing ? nextRunAt(timing, enabled, nowMs) : locked.nextRunAt,
          updatedAt: iso(nowMs),
        };
        await repo.update(trx, next);
        await recordAudit(trx, acting, {
          action: 'schedule.update',
          target: { type: 'schedule', uuid },
          details: { agent_uuid: agentUuid, fields: Object.keys(input).sort() },
        });
        return scheduleView(next);
      });
      deps.onChange?.();
      return view;
    },

    async remove(acting: Acting, agentUuid: string, uuid: string) {
      await db.transaction(async (trx) => {
        const current = await requireSchedule(trx, acting.workspaceUuid, agentUuid, uuid);
        // Waits for a decision in progress (PostgreSQL): none can begin after this commits.
        await repo.lock(trx, uuid);
        await repo.remove(trx, uuid);
        await recordAudit(trx, acting, {
          action: 'schedule.delete',
          target: { type: 'schedule', uuid },
          details: { agent_uuid: agentUuid, name: current.name },
        });
      });
    },

    async preview(workspaceUuid: string, agentUuid: string, input: PreviewInput) {
      await deps.agents.requireOwned(workspaceUuid, agentUuid);
      const nowMs = deps.clock.now();
      const zone = input.timezone ?? 'UTC';
      let fromMs = nowMs;
      if (input.from !== undefined) {
        fromMs = Date.parse(input.from);
        if (!ZONED_ISO.test(input.from) || Number.isNaN(fromMs)) {
          throw invalid('from', 'must be an ISO 8601 date-time with a zone designator');
        }
      }
      const timing = requireTiming(input.cron, zone, nowMs, deps.minIntervalSeconds);
      const occurrences = occurrencesAfter(timing, fromMs, input.count ?? 5);
      return {
        occurrences: occurrences.map((ms) => ({ scheduled_for: iso(ms), local: localTime(zone, ms) })),
      };
    },

    /**
     * Fires the schedule now, enabled or not; `next_run_at` stays.
     * @throws AppError 409 CONFLICT (overlap) or 503 AGENT_UNAVAILABLE, with the skipped run logged.
     */
    async runNow(workspaceUuid: string, agentUuid: string, uuid: string): Promise<RunAccepted> {
      const schedule = await requireSchedule(db.kysely, workspaceUuid, agentUuid, uuid);
      const nowMs = deps.clock.now();
      const pending = await deps.decisions.prepare(schedule, nowMs, nowMs, true);
      const run = await db.transaction(async (trx) => {
        const current = await repo.lock(trx, uuid);
        if (!current) throw notFound('Schedule');
        return deps.decisions.decide(trx, current, pending);
      });
      if (run.skippedReason === 'overlap') {
        throw new AppError('CONFLICT', 'The latest task of this schedule is not finished (overlap: skip)');
      }
      if (run.skippedReason || !run.taskUuid) {
        throw new AppError('AGENT_UNAVAILABLE', 'The agent does not accept tasks now');
      }
      return {
        task_id: run.taskUuid,
        status: 'queued',
        schedule_uuid: uuid,
        run_id: run.runId,
        scheduled_for: run.scheduledFor,
        poll_url: deps.tasks.urls(agentUuid, run.taskUuid).poll_url,
      };
    },

    async runs(workspaceUuid: string, agentUuid: string, uuid: string, page: number, limit: number) {
      await requireSchedule(db.kysely, workspaceUuid, agentUuid, uuid);
      const { runs, total } = await repo.listRuns(db.kysely, uuid, (page - 1) * limit, limit);
      return {
        runs: runs.map((r) => ({
          run_id: r.runId,
          scheduled_for: r.scheduledFor,
          fired_at: r.firedAt,
          manual: r.manual,
          task_id: r.taskUuid,
          skipped_reason: r.skippedReason,
        })),
        total,
      };
    },
  };
}

export type SchedulesService = ReturnType<typeof createSchedulesService>;
