import { type Selectable, sql } from 'kysely';
import type { Executor } from '../../db/connect.js';
import { withDbErrors } from '../../db/errors.js';
import { fromDbJson, toDbJson } from '../../db/json.js';
import type { ScheduleRunsTable, SchedulesTable } from '../../db/schedule-tables.js';
import { lockRows } from '../../db/transactions.js';

export type Overlap = 'allow' | 'skip';
export type SkippedReason = 'overlap' | 'agent_unavailable' | 'missed';

export interface ScheduleRow {
  uuid: string;
  agentUuid: string;
  workspaceUuid: string;
  name: string;
  cron: string;
  timezone: string;
  message: string;
  metadata: Record<string, unknown>;
  priority: number;
  concurrencyKey: string | null;
  enabled: boolean;
  overlap: Overlap;
  catchUpSeconds: number;
  nextRunAt: string | null;
  lastTaskUuid: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface RunRow {
  runId: string;
  scheduleUuid: string;
  scheduledFor: string;
  firedAt: string;
  manual: boolean;
  taskUuid: string | null;
  skippedReason: SkippedReason | null;
}

/** Runs kept per schedule at least; older ones are deleted as new ones are logged. */
export const KEPT_RUNS = 1000;

function toSchedule(r: Selectable<SchedulesTable>): ScheduleRow {
  return {
    uuid: r.uuid,
    agentUuid: r.agent_uuid,
    workspaceUuid: r.workspace_uuid,
    name: r.name,
    cron: r.cron,
    timezone: r.timezone,
    message: r.message,
    metadata: fromDbJson<Record<string, unknown>>(r.metadata),
    priority: r.priority,
    concurrencyKey: r.concurrency_key,
    enabled: Boolean(r.enabled),
    overlap: r.overlap as Overlap,
    catchUpSeconds: r.catch_up_seconds,
    nextRunAt: r.next_run_at,
    lastTaskUuid: r.last_task_uuid,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

function columns(s: ScheduleRow) {
  return {
    uuid: s.uuid,
    agent_uuid: s.agentUuid,
    workspace_uuid: s.workspaceUuid,
    name: s.name,
    cron: s.cron,
    timezone: s.timezone,
    message: s.message,
    metadata: toDbJson(s.metadata),
    priority: s.priority,
    concurrency_key: s.concurrencyKey,
    enabled: s.enabled ? 1 : 0,
    overlap: s.overlap,
    catch_up_seconds: s.catchUpSeconds,
    next_run_at: s.nextRunAt,
    last_task_uuid: s.lastTaskUuid,
    created_at: s.createdAt,
    updated_at: s.updatedAt,
  };
}

function toRun(r: Selectable<ScheduleRunsTable>): RunRow {
  return {
    runId: r.run_id,
    scheduleUuid: r.schedule_uuid,
    scheduledFor: r.scheduled_for,
    firedAt: r.fired_at,
    manual: Boolean(r.manual),
    taskUuid: r.task_uuid,
    skippedReason: r.skipped_reason as SkippedReason | null,
  };
}

/** All SQL on `schedules` and `schedule_runs`. */
export const schedulesRepo = {
  async insert(ex: Executor, s: ScheduleRow) {
    await withDbErrors(ex.insertInto('schedules').values(columns(s)).execute());
  },

  async update(ex: Executor, s: ScheduleRow) {
    const { uuid, ...rest } = columns(s);
    await withDbErrors(ex.updateTable('schedules').set(rest).where('uuid', '=', uuid).execute());
  },

  async findOwned(ex: Executor, workspaceUuid: string, agentUuid: string, uuid: string) {
    const row = await withDbErrors(
      ex
        .selectFrom('schedules')
        .selectAll()
        .where('uuid', '=', uuid)
        .where('agent_uuid', '=', agentUuid)
        .where('workspace_uuid', '=', workspaceUuid)
        .executeTakeFirst(),
    );
    return row && toSchedule(row);
  },

  /** The schedule, row-locked for `trx` (PostgreSQL): manual runs and changes take turns. */
  async lock(trx: Executor, uuid: string) {
    const row = await withDbErrors(
      lockRows(trx, trx.selectFrom('schedules').selectAll().where('uuid', '=', uuid)).executeTakeFirst(),
    );
    return row && toSchedule(row);
  },

  async list(ex: Executor, agentUuid: string, offset: number, limit: number) {
    const base = ex.selectFrom('schedules').where('agent_uuid', '=', agentUuid);
    const [rows, count] = await Promise.all([
      withDbErrors(
        base.selectAll().orderBy('created_at', 'desc').orderBy('uuid', 'desc').offset(offset).limit(limit).execute(),
      ),
      withDbErrors(base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()),
    ]);
    return { schedules: rows.map(toSchedule), total: Number(count.n) };
  },

  async count(ex: Executor, agentUuid: string): Promise<number> {
    const row = await withDbErrors(
      ex
        .selectFrom('schedules')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('agent_uuid', '=', agentUuid)
        .executeTakeFirstOrThrow(),
    );
    return Number(row.n);
  },

  /** The schedules of a workspace, enabled or not, over all its agents. */
  async countInWorkspace(ex: Executor, workspaceUuid: string): Promise<number> {
    const row = await withDbErrors(
      ex
        .selectFrom('schedules')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('workspace_uuid', '=', workspaceUuid)
        .executeTakeFirstOrThrow(),
    );
    return Number(row.n);
  },

  async remove(ex: Executor, uuid: string) {
    await withDbErrors(ex.deleteFrom('schedule_runs').where('schedule_uuid', '=', uuid).execute());
    await withDbErrors(ex.deleteFrom('schedules').where('uuid', '=', uuid).execute());
  },

  async removeAllOfAgent(ex: Executor, agentUuid: string) {
    const owned = ex.selectFrom('schedules').select('uuid').where('agent_uuid', '=', agentUuid);
    await withDbErrors(ex.deleteFrom('schedule_runs').where('schedule_uuid', 'in', owned).execute());
    await withDbErrors(ex.deleteFrom('schedules').where('agent_uuid', '=', agentUuid).execute());
  },

  /**
   * Due schedules for the fair rounds (docs/schedules.md): of every workspace with due work, its
   * earliest `perWorkspace` due schedules (by `next_run_at`, then uuid), rank by rank, at most
   * `limit` rows in all. The caller orders the workspaces within each round.
   */
  async dueByWorkspace(ex: Executor, now: string, perWorkspace: number, limit: number) {
    const ranked = ex
      .selectFrom('schedules')
      .selectAll()
      .select(sql<number>`row_number() over (partition by workspace_uuid order by next_run_at, uuid)`.as('rank'))
      .where('next_run_at', 'is not', null)
      .where('next_run_at', '<=', now);
    const rows = await withDbErrors(
      ex
        .selectFrom(ranked.as('due'))
        .selectAll()
        .where('rank', '<=', perWorkspace)
        .orderBy('rank')
        .orderBy('next_run_at')
        .orderBy('uuid')
        .limit(limit)
        .execute(),
    );
    return rows.map(toSchedule);
  },

  /**
   * The claim of one occurrence: moves `next_run_at` on only if it still is `expected`. False when
   * another pass (this or another instance) or a change got there first; on PostgreSQL the row
   * lock it takes holds every other claim of the schedule until this transaction ends.
   */
  async claim(trx: Executor, uuid: string, expected: string, next: string | null, lastTaskUuid?: string) {
    const result = await withDbErrors(
      trx
        .updateTable('schedules')
        .set({ next_run_at: next, ...(lastTaskUuid ? { last_task_uuid: lastTaskUuid } : {}) })
        .where('uuid', '=', uuid)
        .where('next_run_at', '=', expected)
        .executeTakeFirst(),
    );
    return Number(result.numUpdatedRows) === 1;
  },

  async setLastTask(trx: Executor, uuid: string, taskUuid: string) {
    await withDbErrors(
      trx.updateTable('schedules').set({ last_task_uuid: taskUuid }).where('uuid', '=', uuid).execute(),
    );
  },

  /** Logs a run and drops the runs beyond the newest KEPT_RUNS (with some slack, to delete rarely). */
  async insertRun(trx: Executor, run: RunRow) {
    await withDbErrors(
      trx
        .insertInto('schedule_runs')
        .values({
          run_id: run.runId,
          schedule_uuid: run.scheduleUuid,
          scheduled_for: run.scheduledFor,
          fired_at: run.firedAt,
          manual: run.manual ? 1 : 0,
          occurrence_key: run.manual ? null : run.scheduledFor,
          task_uuid: run.taskUuid,
          skipped_reason: run.skippedReason,
        })
        .execute(),
    );
    const cutoff = await withDbErrors(
      trx
        .selectFrom('schedule_runs')
        .select(['fired_at', 'run_id'])
        .where('schedule_uuid', '=', run.scheduleUuid)
        .orderBy('fired_at', 'desc')
        .orderBy('run_id', 'desc')
        .offset(KEPT_RUNS + 100)
        .limit(1)
        .executeTakeFirst(),
    );
    if (!cutoff) return;
    await withDbErrors(
      trx
        .deleteFrom('schedule_runs')
        .where('schedule_uuid', '=', run.scheduleUuid)
        .where('fired_at', '<=', cutoff.fired_at)
        .execute(),
    );
  },

  async listRuns(ex: Executor, scheduleUuid: string, offset: number, limit: number) {
    const base = ex.selectFrom('schedule_runs').where('schedule_uuid', '=', scheduleUuid);
    const [rows, count] = await Promise.all([
      withDbErrors(
        base.selectAll().orderBy('fired_at', 'desc').orderBy('run_id', 'desc').offset(offset).limit(limit).execute(),
      ),
      withDbErrors(base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()),
    ]);
    return { runs: rows.map(toRun), total: Number(count.n) };
  },
};

export type SchedulesRepo = typeof schedulesRepo;
