import type { AddressInfo } from 'node:net';
import type { ClaimedTask, TaskView } from '@taskhook/sdk';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import type { TestDatabase } from '../helpers/databases.js';

/**
 * The production app listening on a free local port, for code that talks real HTTP (the SDK, a
 * child process). Closing it must not hang on connections that never sent a request (a fetch
 * aborted while connecting, as the worker's claim at stop()): the app ends those itself.
 */
export async function listeningApp(database: TestDatabase): Promise<{ t: TestApp; baseUrl: string }> {
  const t = await buildTestApp(database);
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  return { t, baseUrl: `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}` };
}

/** Settles like `promise`, or fails after `ms` instead of hanging the test. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Calls `read` every 50 ms until `ok` holds for its value; fails after `ms`. */
export async function eventually<T>(
  read: () => Promise<T>,
  ok: (value: T) => boolean,
  what: string,
  ms = 15_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${ms} ms waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A worker driven by plain HTTP calls (no SDK): each call throws unless the answer is 200. */
export function httpWorker(baseUrl: string, apiKey: string, agentId: string) {
  async function post<T>(path: string, body: unknown): Promise<T> {
    const res = await fetch(`${baseUrl}/agent/${agentId}/${path}`, {
      method: 'POST',
      headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`POST ${path}: HTTP ${res.status}: ${text}`);
    return JSON.parse(text) as T;
  }
  return {
    /** Claims exactly one task (long-polling up to 5 s for it). */
    async claimOne(leaseSeconds = 60): Promise<ClaimedTask> {
      const { tasks } = await post<{ tasks: ClaimedTask[] }>('tasks/claim', {
        wait_seconds: 5,
        lease_seconds: leaseSeconds,
      });
      const [task] = tasks;
      if (tasks.length !== 1 || !task) throw new Error(`claim: expected one task, got ${tasks.length}`);
      return task;
    },
    progress: (task: ClaimedTask, step: string, done: number, total: number) =>
      post<{ status: string }>(`task/${task.task_id}/progress`, {
        lease_id: task.lease_id,
        current_step: step,
        steps_completed: done,
        total_steps: total,
      }),
    inputRequest: (task: ClaimedTask, message: string) =>
      post<TaskView>(`task/${task.task_id}/input_request`, { lease_id: task.lease_id, message }),
    complete: (task: ClaimedTask, result: Record<string, unknown>) =>
      post<TaskView>(`task/${task.task_id}/complete`, { lease_id: task.lease_id, result }),
  };
}
