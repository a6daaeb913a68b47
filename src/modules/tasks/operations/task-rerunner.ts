import { AppError, invalid } from '../../../http/errors.js';
import type { RerunOf, TaskSubmitter } from '../submit/task-submitter.js';
import { FINAL_STATUSES } from '../tasks-fns.js';
import type { TaskRecord } from '../tasks-record.js';
import type { SubmitResult } from '../tasks-schemas.js';
import type { TaskRef } from '../tasks-service.js';
import { rerunInput } from './operations-fns.js';
import type { RerunInput } from './operations-schemas.js';

/**
 * Reruns (docs/api.md §5.9): a new task of the same agent made from a final task's original
 * submit fields and the overrides, through the submit path (so it gets its policy, events,
 * callbacks and counters exactly as a submit does). The source task is never changed.
 */
export function createTaskRerunner(deps: {
  requireTask: (ref: TaskRef) => Promise<TaskRecord>;
  submitter: Pick<TaskSubmitter, 'rerun'>;
}) {
  /**
   * Submits the rerun of `source` (a final task). `before` runs in the submit's transaction
   * before the insert (a bulk rerun's check).
   * @throws AppError INVALID_REQUEST, IDEMPOTENCY_KEY_REUSED, AGENT_UNAVAILABLE, NOT_FOUND as a submit.
   */
  function submitRerun(
    ref: TaskRef,
    source: TaskRecord,
    body: RerunInput | null,
    idempotencyKey?: string,
    before?: RerunOf['before'],
  ): Promise<{ response: SubmitResult; replayed: boolean }> {
    if (body?.parent_task_id !== undefined) {
      throw invalid('parent_task_id', 'is not accepted: child tasks are not offered yet');
    }
    const rerun: RerunOf & { body: unknown } = { sourceUuid: source.uuid, body };
    if (before) rerun.before = before;
    return deps.submitter.rerun(ref.workspaceUuid, ref.agentUuid, rerunInput(source, body), rerun, idempotencyKey);
  }

  return {
    submitRerun,

    /**
     * `POST /agent/:id/task/:taskId/rerun`.
     * @throws AppError NOT_FOUND, CONFLICT (the task is not final), and the submit's refusals.
     */
    async rerun(ref: TaskRef, body: RerunInput | null, idempotencyKey?: string) {
      const source = await deps.requireTask(ref);
      if (!FINAL_STATUSES.has(source.status)) {
        throw new AppError(
          'CONFLICT',
          `Task is ${source.status}: only a completed, failed or cancelled task can be rerun`,
        );
      }
      return submitRerun(ref, source, body, idempotencyKey);
    },
  };
}

export type TaskRerunner = ReturnType<typeof createTaskRerunner>;
