import type { ClaimedTask, SubmitInput, SubmitResult, TaskView } from '../modules/tasks/tasks-schemas.js';
import { callApi, errorOf, type HttpOptions, seg } from './http.js';
import { parseEventStream } from './sse.js';

export type { ClaimedTask, SubmitInput, SubmitResult, TaskView };
export type TaskStatus = TaskView['status'];

const FINAL: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'cancelled']);

/** A client of the task API for code that submits work and reads results. */
export class TaskhookClient {
  constructor(private readonly opts: HttpOptions) {}

  /** Queues a task; with `idempotencyKey` a retry of the same request creates nothing new. */
  async submit(agentId: string, input: SubmitInput, options: { idempotencyKey?: string } = {}): Promise<SubmitResult> {
    const headers = options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : undefined;
    return (await callApi<SubmitResult>(this.opts, 'POST', `agent/request/${seg(agentId)}`, input, { headers })).body;
  }

  async get(agentId: string, taskId: string): Promise<TaskView> {
    return (await callApi<TaskView>(this.opts, 'GET', `agent/${seg(agentId)}/task/${seg(taskId)}`)).body;
  }

  /**
   * Polls until the task reaches one of `until` (default: completed, failed or cancelled).
   * @throws Error when `timeoutMs` passes first.
   */
  async waitFor(
    agentId: string,
    taskId: string,
    options: { until?: TaskStatus[]; intervalMs?: number; timeoutMs?: number } = {},
  ): Promise<TaskView> {
    const until = new Set(options.until ?? FINAL);
    const deadline = Date.now() + (options.timeoutMs ?? 10 * 60_000);
    for (;;) {
      const task = await this.get(agentId, taskId);
      if (until.has(task.status)) return task;
      if (Date.now() >= deadline) throw new Error(`Task ${taskId} is still ${task.status} after the wait`);
      await new Promise((r) => setTimeout(r, options.intervalMs ?? 500));
    }
  }

  async message(agentId: string, taskId: string, message: string) {
    const path = `agent/${seg(agentId)}/task/${seg(taskId)}/message`;
    return (
      await callApi<{ task_id: string; status: TaskStatus; message_received: boolean }>(this.opts, 'POST', path, {
        message,
      })
    ).body;
  }

  async cancel(agentId: string, taskId: string) {
    const path = `agent/${seg(agentId)}/task/${seg(taskId)}/cancel`;
    return (await callApi<{ task_id: string; status: 'cancelled'; cancelled_at: string }>(this.opts, 'POST', path))
      .body;
  }

  async list(agentId: string, query: { status?: TaskStatus; page?: number; limit?: number } = {}) {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
    const path = `agent/${seg(agentId)}/tasks${params.size ? `?${params}` : ''}`;
    return (
      await callApi<{
        tasks: TaskView[];
        pagination: { page: number; limit: number; total: number; total_pages: number };
      }>(this.opts, 'GET', path)
    ).body;
  }

  /**
   * The task's events (server-sent): the current task, then every change, ending after a final
   * state. Pass `lastEventId` to resume after an event you already have.
   */
  async *events(
    agentId: string,
    taskId: string,
    options: { lastEventId?: string; signal?: AbortSignal } = {},
  ): AsyncGenerator<{ id: number; task: TaskView }> {
    const url = new URL(`agent/${seg(agentId)}/task/${seg(taskId)}/events`, withSlash(this.opts.baseUrl));
    const res = await fetch(url, {
      headers: {
        authorization: `Bearer ${this.opts.apiKey}`,
        accept: 'text/event-stream',
        ...(options.lastEventId ? { 'last-event-id': options.lastEventId } : {}),
      },
      signal: options.signal,
    });
    if (!res.ok || !res.body) {
      const body = await res.json().catch(() => undefined);
      throw errorOf(res.status, body);
    }
    for await (const event of parseEventStream(res.body)) {
      if (event.event === 'task') yield { id: Number(event.id), task: JSON.parse(event.data) as TaskView };
    }
  }
}

function withSlash(base: string) {
  return base.endsWith('/') ? base : `${base}/`;
}
