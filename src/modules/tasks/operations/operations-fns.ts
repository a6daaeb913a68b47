import type { TaskRecord } from '../tasks-record.js';
import type { SubmitInput } from '../tasks-schemas.js';
import type { RerunInput } from './operations-schemas.js';

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
