import type { LightMyRequestResponse } from 'fastify';
import type { TaskStatus } from '../../src/modules/tasks/tasks-fns.js';
import type { ClaimedTask, SubmitResult, TaskView } from '../../src/modules/tasks/tasks-schemas.js';
import { call, type TestApp } from './app.js';
import type { TestUser } from './factories.js';

export type { ClaimedTask, SubmitResult, TaskView };

/** The worker operations that report on a claimed task: the protocol's four, plus release (docs/api.md §6.3). */
export const WORKER_OPERATIONS = ['progress', 'input_request', 'complete', 'fail', 'release'] as const;
export type WorkerOperation = (typeof WORKER_OPERATIONS)[number];

/**
 * Workers authenticate with a platform key of the agent's owner; the helpers use it for user calls
 * too, so tests that move a manual clock past a session's lifetime keep working.
 */
export function workerHeaders(user: TestUser): Record<string, string> {
  return { 'x-api-key': user.key };
}

function expectStatus(res: LightMyRequestResponse, status: number, what: string): void {
  if (res.statusCode !== status) throw new Error(`${what}: expected ${status}, got ${res.statusCode}: ${res.body}`);
}

/** POST /agent/request/:id; throws unless 202. Returns the 202 body. */
export async function submitTask(
  t: TestApp,
  user: TestUser,
  agentUuid: string,
  body: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Promise<SubmitResult> {
  const res = await call(t.app, 'POST', `/agent/request/${agentUuid}`, {
    headers: { ...workerHeaders(user), ...headers },
    body: { message: 'review the code', ...body },
  });
  expectStatus(res, 202, 'submit');
  return res.json();
}

/** POST /agent/:id/tasks/claim as a worker; throws unless 200. Returns the claimed tasks. */
export async function claimTasks(
  t: TestApp,
  user: TestUser,
  agentUuid: string,
  body: Record<string, unknown> = {},
): Promise<ClaimedTask[]> {
  const res = await call(t.app, 'POST', `/agent/${agentUuid}/tasks/claim`, { headers: workerHeaders(user), body });
  expectStatus(res, 200, 'claim');
  return res.json().tasks;
}

/** Claims and expects exactly one task. */
export async function claimOne(
  t: TestApp,
  user: TestUser,
  agentUuid: string,
  body: Record<string, unknown> = {},
): Promise<ClaimedTask> {
  const tasks = await claimTasks(t, user, agentUuid, body);
  const [task] = tasks;
  if (tasks.length !== 1 || !task) throw new Error(`claim: expected one task, got ${tasks.length}`);
  return task;
}

/** A valid example body of each worker operation for the given lease. */
export function reportBody(operation: WorkerOperation, leaseId: string): Record<string, unknown> {
  switch (operation) {
    case 'progress':
      return { lease_id: leaseId, current_step: 'reading files', steps_completed: 1, total_steps: 3 };
    case 'input_request':
      return { lease_id: leaseId, message: 'Which branch should I review?' };
    case 'complete':
      return {
        lease_id: leaseId,
        result: { summary: 'all good', findings: [{ file: 'a.ts', line: 3, severity: 'low', message: 'nit' }] },
      };
    case 'fail':
      return { lease_id: leaseId, error: { message: 'the repository is gone' } };
    case 'release':
      return { lease_id: leaseId };
  }
}

/** A worker report (progress, input_request, complete, fail, release); answers the raw response. */
export function report(
  t: TestApp,
  user: TestUser,
  agentUuid: string,
  taskId: string,
  operation: WorkerOperation,
  body: Record<string, unknown>,
): Promise<LightMyRequestResponse> {
  return call(t.app, 'POST', `/agent/${agentUuid}/task/${taskId}/${operation}`, { headers: workerHeaders(user), body });
}

export const reportProgress = (t: TestApp, u: TestUser, a: string, id: string, body: Record<string, unknown>) =>
  report(t, u, a, id, 'progress', body);
export const reportInputRequest = (t: TestApp, u: TestUser, a: string, id: string, leaseId: string, message: string) =>
  report(t, u, a, id, 'input_request', { lease_id: leaseId, message });
export const reportComplete = (t: TestApp, u: TestUser, a: string, id: string, leaseId: string, result?: unknown) =>
  report(t, u, a, id, 'complete', { lease_id: leaseId, result: result ?? { summary: 'done' } });
export const reportFail = (
  t: TestApp,
  u: TestUser,
  a: string,
  id: string,
  leaseId: string,
  error: { code?: string; message: string } = { message: 'it broke' },
  retryable?: boolean,
) => report(t, u, a, id, 'fail', { lease_id: leaseId, error, ...(retryable === undefined ? {} : { retryable }) });

/** GET /agent/:id/task/:taskId; throws unless 200. */
export async function getTask(t: TestApp, user: TestUser, agentUuid: string, taskId: string): Promise<TaskView> {
  const res = await call(t.app, 'GET', `/agent/${agentUuid}/task/${taskId}`, { headers: workerHeaders(user) });
  expectStatus(res, 200, 'get task');
  return res.json();
}

/** POST /agent/:id/task/:taskId/message; answers the raw response. */
export function sendMessage(
  t: TestApp,
  user: TestUser,
  agentUuid: string,
  taskId: string,
  message: unknown,
): Promise<LightMyRequestResponse> {
  return call(t.app, 'POST', `/agent/${agentUuid}/task/${taskId}/message`, {
    headers: workerHeaders(user),
    body: { message },
  });
}

/** POST /agent/:id/task/:taskId/cancel; answers the raw response. */
export function cancelTask(
  t: TestApp,
  user: TestUser,
  agentUuid: string,
  taskId: string,
): Promise<LightMyRequestResponse> {
  return call(t.app, 'POST', `/agent/${agentUuid}/task/${taskId}/cancel`, { headers: workerHeaders(user) });
}

/** GET /agent/:id/tasks; throws unless 200. */
export async function listTasks(
  t: TestApp,
  user: TestUser,
  agentUuid: string,
  query = '',
): Promise<{ tasks: TaskView[]; pagination: { page: number; limit: number; total: number; total_pages: number } }> {
  const res = await call(t.app, 'GET', `/agent/${agentUuid}/tasks${query}`, { headers: workerHeaders(user) });
  expectStatus(res, 200, 'list tasks');
  return res.json();
}

/** Runs one pass of the app's sweeper now, then reads the task. */
export async function sweptTask(t: TestApp, user: TestUser, agentUuid: string, taskId: string): Promise<TaskView> {
  await t.app.background.sweep();
  return getTask(t, user, agentUuid, taskId);
}

/**
 * Polls GET until the task reaches `status` (for changes the app's own sweeper makes in the
 * background); throws with the last status seen when `timeoutMs` of real time pass first.
 */
export async function waitForStatus(
  t: TestApp,
  user: TestUser,
  agentUuid: string,
  taskId: string,
  status: TaskStatus,
  timeoutMs = 10_000,
): Promise<TaskView> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const task = await getTask(t, user, agentUuid, taskId);
    if (task.status === status) return task;
    if (performance.now() > deadline) throw new Error(`task stayed ${task.status}, expected ${status}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * The promise's value, or a failure naming `what` once `ms` of real time pass: for answers that
 * must come well before a server-side wait (a long poll, a keep-alive) would run out.
 */
export async function within<T>(promise: Promise<T>, ms: number, what = 'answer'): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
