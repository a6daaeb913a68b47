import { invalid } from '../../http/errors.js';
import { iso } from '../../lib/time.js';
import { MAX_METADATA_BYTES } from '../tasks/tasks-schemas.js';
import type { MessageValues } from './message-fns.js';
import { checkTiming, nextAfter, type Timing } from './occurrences-fns.js';
import type { ScheduleRow } from './schedules-repo.js';
import type { ScheduleView } from './schedules-schemas.js';
import { isZoneName, localTime } from './zone-fns.js';

/** The answer shape of a schedule. */
export const scheduleView = (s: ScheduleRow): ScheduleView => ({
  uuid: s.uuid,
  agent_uuid: s.agentUuid,
  name: s.name,
  cron: s.cron,
  timezone: s.timezone,
  message: s.message,
  metadata: s.metadata,
  priority: s.priority,
  concurrency_key: s.concurrencyKey,
  enabled: s.enabled,
  overlap: s.overlap,
  catch_up_seconds: s.catchUpSeconds,
  next_run_at: s.nextRunAt,
  created_at: s.createdAt,
  updated_at: s.updatedAt,
});

/**
 * A pattern and zone as sent, checked at `nowMs` (the zone first: the pattern's check needs it).
 * @throws AppError 400 INVALID_REQUEST naming `timezone` or `cron`.
 */
export function requireTiming(cron: string, zone: string, nowMs: number, minIntervalSeconds: number): Timing {
  if (!isZoneName(zone)) throw invalid('timezone', `"${zone}" is not a tz database zone name`);
  const checked = checkTiming(cron, zone, nowMs, minIntervalSeconds);
  if (!checked.ok) throw invalid(checked.field, checked.reason);
  return checked.timing;
}

/** @throws AppError 400 INVALID_REQUEST for metadata over 16 KiB as JSON. */
export function checkMetadata(metadata: Record<string, unknown> | undefined) {
  if (metadata && Buffer.byteLength(JSON.stringify(metadata)) > MAX_METADATA_BYTES) {
    throw invalid('metadata', `must be at most ${MAX_METADATA_BYTES} bytes as JSON`);
  }
}

/** `next_run_at` of a schedule at `nowMs`: its next occurrence, or null while disabled. */
export function nextRunAt(timing: Timing, enabled: boolean, nowMs: number): string | null {
  if (!enabled) return null;
  const next = nextAfter(timing, nowMs);
  return next === null ? null : iso(next);
}

/** What `{{schedule.…}}` placeholders render for an occurrence. */
export function messageValues(s: ScheduleRow, scheduledForMs: number): MessageValues {
  const local = localTime(s.timezone, scheduledForMs);
  return {
    uuid: s.uuid,
    name: s.name,
    scheduled_for: iso(scheduledForMs),
    local_time: local,
    local_date: local.slice(0, 10),
  };
}
