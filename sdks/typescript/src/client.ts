import { errorOf, TaskhookConnectionError, TaskhookError } from './errors.js';
import { baseHeaders, type ClientOptions, callApi, type Resolved, resolveOptions, seg, sleep } from './http.js';
import { parseEventStream } from './sse.js';
import type {
  Pagination,
  SubmitInput,
  SubmitResult,
  TaskEvent,
  TaskStatus,
  TaskView,
  Trigger,
  TriggerVerificationInput,
} from './types.js';

const FINAL: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'cancelled']);
/** Reconnects in a row without an item before an event stream gives up. */
const MAX_EMPTY_RECONNECTS = 5;
/** A redirect answer: never followed, never resumed. */
const isRedirect = (status: number | undefined) => status !== undefined && status >= 300 && status < 400;

/** A client of the task and trigger API for code that submits work and reads results. */
export class TaskhookClient {
  private readonly opts: Resolved;

  constructor(options: ClientOptions = {}) {
    this.opts = resolveOptions(options);
  }

  private async call<T>(method: string, path: string, body?: unknown, retry = false, headers?: Record<string, string>) {
    return (await callApi<T>(this.opts, method, path, body, { retry, ...(headers ? { headers } : {}) })).body;
  }

  /**
   * Queues a task. Always sends an Idempotency-Key (yours, else a new UUID repeated on retries), so a
   * retried submit never creates a second task. `traceparent` makes the task join that trace.
   */
  async submit(
    agentId: string,
    input: SubmitInput,
    options: { idempotencyKey?: string; traceparent?: string } = {},
  ): Promise<SubmitResult> {
    const headers: Record<string, string> = { 'idempotency-key': options.idempotencyKey ?? crypto.randomUUID() };
    if (options.traceparent) headers.traceparent = options.traceparent;
    return this.call<SubmitResult>('POST', `agent/request/${seg(agentId)}`, input, true, headers);
  }

  async get(agentId: string, taskId: string): Promise<TaskView> {
    return this.call<TaskView>('GET', `agent/${seg(agentId)}/task/${seg(taskId)}`, undefined, true);
  }

  async list(
    agentId: string,
    query: { status?: TaskStatus; page?: number; limit?: number } = {},
  ): Promise<{ tasks: TaskView[]; pagination: Pagination }> {
    return this.call('GET', `agent/${seg(agentId)}/tasks${queryOf(query)}`, undefined, true);
  }

  /** Sends a follow-up message (answers an input request). Sent once. */
  async message(
    agentId: string,
    taskId: string,
    message: string,
  ): Promise<{ task_id: string; status: TaskStatus; message_received: boolean }> {
    return this.call('POST', `agent/${seg(agentId)}/task/${seg(taskId)}/message`, { message });
  }

  async cancel(
    agentId: string,
    taskId: string,
  ): Promise<{ task_id: string; status: 'cancelled'; cancelled_at: string }> {
    return this.call('POST', `agent/${seg(agentId)}/task/${seg(taskId)}/cancel`, undefined, true);
  }

  /**
   * Polls until the task reaches one of `until` (default: completed, failed or cancelled).
   * @throws Error when `timeoutMs` (default 600000) passes first.
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
      await sleep(options.intervalMs ?? 500);
    }
  }

  /**
   * The task's events (server-sent): the current task, then every change, ending after a final
   * state. A broken connection is resumed from the last item seen, so each item comes once, in order.
   * Breaking out of the loop closes the connection at once.
   */
  async *events(
    agentId: string,
    taskId: string,
    options: { lastEventId?: string | number; signal?: AbortSignal } = {},
  ): AsyncGenerator<TaskEvent> {
    const url = new URL(`agent/${seg(agentId)}/task/${seg(taskId)}/events`, this.opts.baseUrl);
    let lastId = options.lastEventId === undefined ? undefined : String(options.lastEventId);
    let emptyInARow = 0;
    let first = true;
    for (;;) {
      let delivered = false;
      let lastError: unknown;
      const abort = new AbortController();
      const onAbort = () => abort.abort(options.signal?.reason);
      options.signal?.addEventListener('abort', onAbort, { once: true });
      try {
        const res = await fetch(url, {
          headers: {
            ...baseHeaders(this.opts),
            accept: 'text/event-stream',
            ...(lastId ? { 'last-event-id': lastId } : {}),
          },
          // Never follow a redirect: the key in Authorization must not travel to a Location
          // chosen by whoever answered. A 3xx is an error answer (not a break to resume).
          redirect: 'manual',
          signal: abort.signal,
        }).catch((err: unknown) => {
          if (options.signal?.aborted) throw err;
          throw new TaskhookConnectionError({ message: `No answer from ${this.opts.baseUrl}: ${String(err)}` });
        });
        if (!res.ok || !res.body) {
          const text = await res.text().catch(() => '');
          let body: unknown = text;
          try {
            body = JSON.parse(text);
          } catch {}
          throw errorOf(res.status, body, {
            requestId: res.headers.get('x-request-id') ?? undefined,
            retryAfter: res.headers.get('retry-after'),
          });
        }
        first = false;
        for await (const event of parseEventStream(res.body)) {
          if (event.event !== 'task') continue;
          const item: TaskEvent = { id: Number(event.id), task: JSON.parse(event.data) as TaskView };
          if (event.id !== undefined) lastId = event.id;
          delivered = true;
          emptyInARow = 0;
          yield item;
          if (FINAL.has(item.task.status)) return;
        }
      } catch (err) {
        if (options.signal?.aborted) throw err;
        if (err instanceof TaskhookError && (first || isRedirect(err.status))) throw err;
        lastError = err;
      } finally {
        options.signal?.removeEventListener('abort', onAbort);
        abort.abort();
      }
      if (!delivered) {
        if (lastError === undefined) {
          // Ended cleanly with nothing new: finished when the task is final.
          const task = await this.get(agentId, taskId);
          if (FINAL.has(task.status)) return;
        }
        emptyInARow += 1;
        if (emptyInARow >= MAX_EMPTY_RECONNECTS) {
          throw lastError ?? new TaskhookConnectionError({ message: 'The event stream keeps ending without events' });
        }
      }
      await sleep(Math.min(250 * emptyInARow, 2000), options.signal);
      if (options.signal?.aborted) return;
    }
  }

  async createTrigger(
    agentId: string,
    input: {
      name: string;
      message_template: string;
      concurrency_key?: string | null;
      enabled?: boolean;
      verification?: TriggerVerificationInput;
    },
  ): Promise<Trigger> {
    return this.call('POST', `v1/agent/${seg(agentId)}/triggers`, input);
  }

  async listTriggers(
    agentId: string,
    query: { page?: number; limit?: number } = {},
  ): Promise<{ triggers: Trigger[]; pagination: Pagination }> {
    return this.call('GET', `v1/agent/${seg(agentId)}/triggers${queryOf(query)}`, undefined, true);
  }

  async getTrigger(agentId: string, triggerId: string): Promise<Trigger> {
    return this.call('GET', `v1/agent/${seg(agentId)}/triggers/${seg(triggerId)}`, undefined, true);
  }

  async updateTrigger(
    agentId: string,
    triggerId: string,
    patch: {
      name?: string;
      message_template?: string;
      concurrency_key?: string | null;
      enabled?: boolean;
      /** Same `type`; a new secret or tolerance. */
      verification?: TriggerVerificationInput;
    },
  ): Promise<Trigger> {
    return this.call('PATCH', `v1/agent/${seg(agentId)}/triggers/${seg(triggerId)}`, patch);
  }

  async deleteTrigger(agentId: string, triggerId: string): Promise<undefined> {
    await this.call('DELETE', `v1/agent/${seg(agentId)}/triggers/${seg(triggerId)}`, undefined, true);
    return undefined;
  }

  /** A new webhook secret (the previous one keeps working for a while). */
  async rotateTriggerSecret(agentId: string, triggerId: string): Promise<Trigger> {
    return this.call('POST', `v1/agent/${seg(agentId)}/triggers/${seg(triggerId)}/rotate_secret`);
  }
}

function queryOf(query: Record<string, string | number | undefined>): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
  return params.size ? `?${params}` : '';
}
