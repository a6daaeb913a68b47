import { invalid } from '../../../http/errors.js';
import { canonicalJson, FINAL_STATUSES, OPEN_STATUSES, type TaskStatus } from '../tasks-fns.js';
import type { TaskRecord } from '../tasks-record.js';
import { MAX_METADATA_BYTES, type SubmitInput } from '../tasks-schemas.js';
import type { BulkFilter, BulkInput, RerunInput } from './operations-schemas.js';

/**
 * The submit body of a rerun: the source's original message, priority, metadata, timeout,
 * concurrency key and callback, each replaced by an override when one is given; the delayed
 * start only from the overrides. A `callback_mode: "poll"` override drops the copied
 * `webhook_url` (there is no way to send an empty one, and a poll task may not have one).
 */
export function rerunInput(source: TaskRecord, overrides: RerunInput | null): SubmitInput {
  const o = overrides ?? {};
  const mode = o.callback_mode ?? source.callbackMode;
  const webhook = o.webhook_url ?? (o.callback_mode === 'poll' ? undefined : (source.webhookUrl ?? undefined));
  const input: SubmitInput = {
    message: o.message ?? source.message,
    priority: o.priority ?? source.priority,
    metadata: o.metadata ?? source.metadata,
    timeout_override: o.timeout_override ?? source.timeoutSeconds,
    concurrency_key: o.concurrency_key !== undefined ? o.concurrency_key : source.concurrencyKey,
    callback_mode: mode,
  };
  if (webhook !== undefined) input.webhook_url = webhook;
  if (o.run_at !== undefined) input.run_at = o.run_at;
  if (o.delay_seconds !== undefined) input.delay_seconds = o.delay_seconds;
  return input;
}

/** The states a bulk action applies to. */
export function applicableStatuses(action: BulkInput['action']): readonly TaskStatus[] {
  return action === 'cancel' ? OPEN_STATUSES : [...FINAL_STATUSES];
}

/** A bulk filter's conditions as the selection uses them (instants normalised to stored form). */
export interface BulkSelection {
  statuses: TaskStatus[];
  createdAfter: string | null;
  createdBefore: string | null;
  taskIds: string[] | null;
  metadata: Record<string, unknown> | null;
}

/**
 * The selection for `action` under `filter`: the filter's states that the action applies to.
 * @throws AppError INVALID_REQUEST (details.field `filter.…`) for values the schema cannot judge.
 */
export function selectionOf(action: BulkInput['action'], filter: BulkFilter): BulkSelection {
  const applicable = applicableStatuses(action);
  const instant = (value: string | undefined, field: string) => {
    if (value === undefined) return null;
    const ms = Date.parse(value);
    if (Number.isNaN(ms)) throw invalid(`filter.${field}`, 'must be an RFC 3339 date-time');
    return new Date(ms).toISOString();
  };
  if (filter.metadata && Buffer.byteLength(JSON.stringify(filter.metadata)) > MAX_METADATA_BYTES) {
    throw invalid('filter.metadata', `must be at most ${MAX_METADATA_BYTES} bytes as JSON`);
  }
  return {
    statuses: filter.status ? applicable.filter((s) => filter.status?.includes(s)) : [...applicable],
    createdAfter: instant(filter.created_after, 'created_after'),
    createdBefore: instant(filter.created_before, 'created_before'),
    taskIds: filter.task_ids ?? null,
    metadata: filter.metadata ?? null,
  };
}

/** Every key of `wanted` is in `metadata` with a JSON-equal value (objects by keys and values, arrays in order). */
export function metadataMatches(metadata: Record<string, unknown>, wanted: Record<string, unknown> | null): boolean {
  if (!wanted) return true;
  for (const [key, value] of Object.entries(wanted)) {
    if (!Object.hasOwn(metadata, key)) return false;
    if (canonicalJson(metadata[key]) !== canonicalJson(value)) return false;
  }
  return true;
}

/** Whether a task (as locked now) still meets the whole selection. */
export function stillMatches(task: TaskRecord, selection: BulkSelection): boolean {
  if (!selection.statuses.includes(task.status)) return false;
  if (selection.createdAfter && task.createdAt < selection.createdAfter) return false;
  if (selection.createdBefore && task.createdAt >= selection.createdBefore) return false;
  if (selection.taskIds && !selection.taskIds.includes(task.uuid)) return false;
  return metadataMatches(task.metadata, selection.metadata);
}
