import { type Static, Type } from '@sinclair/typebox';
import { StrictObject, StringEnum, UuidSchema } from '../../../http/common-schemas.js';
import { TASK_STATUSES } from '../tasks-fns.js';
import { MAX_METADATA_BYTES, SubmitBody, SubmitReply } from '../tasks-schemas.js';

/** Most tasks one bulk request selects (and the default). */
export const MAX_BULK_TASKS = 1000;

const submitField = SubmitBody.properties;

/** Overrides of a rerun: each replaces the value copied from the source task. */
export const RerunBody = Type.Union(
  [
    StrictObject({
      message: Type.Optional(submitField.message),
      priority: Type.Optional(submitField.priority),
      metadata: Type.Optional(submitField.metadata),
      timeout_override: Type.Optional(submitField.timeout_override),
      concurrency_key: Type.Optional(submitField.concurrency_key),
      callback_mode: Type.Optional(submitField.callback_mode),
      webhook_url: Type.Optional(submitField.webhook_url),
      run_at: Type.Optional(submitField.run_at),
      delay_seconds: Type.Optional(submitField.delay_seconds),
      parent_task_id: Type.Optional(
        Type.Unknown({
          description: 'Not accepted yet: child tasks are not offered (400, details.field parent_task_id).',
        }),
      ),
    }),
    Type.Null(),
  ],
  {
    description:
      'Optional: no body, {} or overrides. Each field given replaces the one copied from the source task (metadata as a whole); the result is checked as a submit.',
  },
);
export type RerunInput = Exclude<Static<typeof RerunBody>, null>;

export const RerunReply = Type.Composite([
  SubmitReply,
  Type.Object({ rerun_of: Type.String({ description: 'The task this one reruns.' }) }),
]);

const BulkFilter = StrictObject(
  {
    status: Type.Optional(
      Type.Array(StringEnum(TASK_STATUSES), {
        minItems: 1,
        maxItems: 6,
        uniqueItems: true,
        description: 'Any of these states.',
      }),
    ),
    created_after: Type.Optional(
      Type.String({ format: 'date-time', description: 'RFC 3339; matches created_at at or after it.' }),
    ),
    created_before: Type.Optional(
      Type.String({ format: 'date-time', description: 'RFC 3339; matches created_at before it.' }),
    ),
    metadata: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        minProperties: 1,
        maxProperties: 20,
        description: `1 to 20 keys (at most ${MAX_METADATA_BYTES} bytes as JSON): each must be in the task's metadata with a JSON-equal value.`,
      }),
    ),
    task_ids: Type.Optional(
      Type.Array(UuidSchema, {
        minItems: 1,
        maxItems: MAX_BULK_TASKS,
        description: 'Only these tasks (ids of other agents match nothing).',
      }),
    ),
  },
  { minProperties: 1, description: 'At least one condition; a task matches when it meets all given.' },
);
export type BulkFilter = Static<typeof BulkFilter>;

export const BulkBody = StrictObject({
  action: StringEnum(['cancel', 'rerun'] as const, {
    description: 'cancel (queued, running, awaiting_input tasks) or rerun (completed, failed, cancelled tasks).',
  }),
  filter: BulkFilter,
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_BULK_TASKS,
      description: `At most this many tasks; default ${MAX_BULK_TASKS}.`,
    }),
  ),
});
export type BulkInput = Static<typeof BulkBody>;

export const BulkReply = Type.Object({
  action: StringEnum(['cancel', 'rerun'] as const),
  matched: Type.Integer({
    description: 'Tasks selected: matching the filter, the action applicable, oldest first, at most limit.',
  }),
  acted: Type.Integer({
    description: 'Selected tasks this request changed (the others changed meanwhile and were skipped).',
  }),
  task_ids: Type.Array(UuidSchema, { description: 'The tasks acted on, in selection order.' }),
  rerun_task_ids: Type.Optional(
    Type.Array(UuidSchema, { description: 'For rerun: the new task made from task_ids[i], at the same index.' }),
  ),
  has_more: Type.Boolean({ description: 'More such tasks existed beyond limit.' }),
});
export type BulkResult = Static<typeof BulkReply>;
