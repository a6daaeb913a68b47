import type { DbBool, DbJson } from './column-types.js';

/** A cron schedule that creates tasks on its agent (docs/schedules.md). */
export interface SchedulesTable {
  uuid: string;
  agent_uuid: string;
  /** The agent's workspace, denormalised for isolation checks. */
  workspace_uuid: string;
  name: string;
  cron: string;
  timezone: string;
  message: string;
  metadata: DbJson;
  priority: number;
  concurrency_key: string | null;
  enabled: DbBool;
  /** `allow` or `skip`. */
  overlap: string;
  catch_up_seconds: number;
  /** The next occurrence to decide; null while disabled. Claimed by moving it (exactly once). */
  next_run_at: string | null;
  /** The latest task the schedule created (clock or manual), for `overlap: "skip"`. */
  last_task_uuid: string | null;
  created_at: string;
  updated_at: string;
}

/** One decided occurrence: a task created, or a skip and why. */
export interface ScheduleRunsTable {
  run_id: string;
  schedule_uuid: string;
  scheduled_for: string;
  fired_at: string;
  manual: DbBool;
  /** `scheduled_for` for the clock's runs, null for manual ones: unique per schedule. */
  occurrence_key: string | null;
  task_uuid: string | null;
  skipped_reason: string | null;
}
