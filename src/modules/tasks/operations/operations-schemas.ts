import { type Static, Type } from '@sinclair/typebox';
import { StrictObject } from '../../../http/common-schemas.js';
import { SubmitBody, SubmitReply } from '../tasks-schemas.js';

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
