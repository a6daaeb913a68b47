import { TaskhookError } from './errors.js';
import { seg } from './http.js';
import type { ClaimedTask, TaskResult } from './types.js';

export type Post = <T>(path: string, body: unknown, signal?: AbortSignal) => Promise<T>;
type BatchResult = { task_id: string; status: 'completed' | 'refused'; error?: { code: string; message: string } };

/** Most tasks one batch complete carries (the server's limit). */
const MAX_BATCH = 100;

/**
 * Completes tasks in batches: completions that arrive in the same turn of the event loop go out
 * together in one `POST /agent/:id/tasks/complete` (one request and one commit for all); a
 * server without that route (404) gets single completes from then on. Each caller's promise
 * settles as its own task's single complete would: resolved, or rejected with its refusal.
 */
export function batchedCompleter(post: Post, base: string) {
  let pending: Array<{ task: ClaimedTask; result: TaskResult; resolve: () => void; reject: (e: unknown) => void }> = [];
  let batches = true;

  const single = (task: ClaimedTask, result: TaskResult) =>
    post(`${base}/task/${seg(task.task_id)}/complete`, { lease_id: task.lease_id, result }).then(() => undefined);

  async function send(batch: typeof pending) {
    if (!batches || batch.length === 1) {
      for (const item of batch) single(item.task, item.result).then(item.resolve, item.reject);
      return;
    }
    try {
      const { results } = await post<{ results: BatchResult[] }>(`${base}/tasks/complete`, {
        tasks: batch.map(({ task, result }) => ({ task_id: task.task_id, lease_id: task.lease_id, result })),
      });
      const byId = new Map(results.map((r) => [r.task_id, r]));
      for (const item of batch) {
        const r = byId.get(item.task.task_id);
        if (r?.status === 'completed') item.resolve();
        else {
          const error = r?.error ?? { code: 'INVALID_AGENT_RESPONSE', message: 'missing from the batch answer' };
          item.reject(new TaskhookError({ status: 400, code: error.code, message: error.message, body: { error } }));
        }
      }
    } catch (err) {
      if (err instanceof TaskhookError && err.status === 404 && err.code !== 'NOT_FOUND') {
        // A server that predates batch completes: the route itself is unknown.
        batches = false;
        return send(batch);
      }
      for (const item of batch) item.reject(err);
    }
  }

  return (task: ClaimedTask, result: TaskResult) =>
    new Promise<void>((resolve, reject) => {
      pending.push({ task, result, resolve, reject });
      if (pending.length > 1) return;
      setImmediate(() => {
        const all = pending;
        pending = [];
        for (let i = 0; i < all.length; i += MAX_BATCH) void send(all.slice(i, i + MAX_BATCH));
      });
    });
}
