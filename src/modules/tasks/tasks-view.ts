import { runSpanIdOf, taskTraceOf } from '../telemetry/service-spans-fns.js';
import { formatTraceparent } from '../telemetry/trace-context-fns.js';
import type { TaskRecord } from './tasks-record.js';
import type { ClaimedTask, TaskView } from './tasks-schemas.js';

const NO_PROGRESS = { current_step: '', steps_completed: 0, total_steps: 0 };

/** The body of GET /agent/:id/task/:taskId: common fields plus those that belong to the task's status. */
export function taskView(task: TaskRecord): TaskView {
  const view: TaskView = {
    task_id: task.uuid,
    status: task.status,
    created_at: task.createdAt,
    agent_uuid: task.agentUuid,
    message: task.message,
    messages: task.messages,
    priority: task.priority,
    metadata: task.metadata,
    concurrency_key: task.concurrencyKey,
    attempt: task.attempt,
    max_attempts: task.maxAttempts,
    last_error: task.lastError,
    available_at: task.status === 'queued' ? task.availableAt : null,
    rerun_of: task.rerunOf,
    parent_task_id: task.parentTaskId,
  };
  if (task.startedAt) view.started_at = task.startedAt;
  switch (task.status) {
    case 'queued':
      // Never earlier than the instant the task may be handed out.
      view.estimated_start = task.estimatedStart;
      if (task.availableAt > task.estimatedStart) view.estimated_start = task.availableAt;
      break;
    case 'running':
      view.progress = task.progress ?? NO_PROGRESS;
      break;
    case 'awaiting_input':
      view.progress = task.progress ?? NO_PROGRESS;
      if (task.inputRequest) view.input_request = task.inputRequest;
      break;
    case 'completed':
      if (task.completedAt) view.completed_at = task.completedAt;
      if (task.result) view.result = { ...task.result, findings: task.result.findings ?? [] };
      break;
    case 'failed':
      if (task.failedAt) view.failed_at = task.failedAt;
      if (task.error) view.error = task.error;
      break;
    case 'cancelled':
      if (task.cancelledAt) view.cancelled_at = task.cancelledAt;
      break;
  }
  return view;
}

/**
 * What the holder of a claimed task is given (a worker's claim, an http agent's task.run): the
 * conversation, the lease, and the run's trace context (its span is named by the lease).
 * The task must be held (`leaseId`, `leaseExpiresAt` and `timeoutAt` set).
 */
export function claimItemOf(task: TaskRecord): ClaimedTask {
  return {
    task_id: task.uuid,
    lease_id: task.leaseId as string,
    message: task.message,
    messages: task.messages,
    priority: task.priority,
    metadata: task.metadata,
    concurrency_key: task.concurrencyKey,
    attempt: task.attempt,
    lease_expires_at: task.leaseExpiresAt as string,
    timeout_at: task.timeoutAt as string,
    traceparent: formatTraceparent(taskTraceOf(task).traceId, runSpanIdOf(task.leaseId as string)),
  };
}
