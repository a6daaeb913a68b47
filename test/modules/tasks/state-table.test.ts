import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskStatus } from '../../../src/modules/tasks/tasks-fns.js';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import {
  cancelTask,
  claimOne,
  getTask,
  report,
  reportBody,
  reportComplete,
  reportFail,
  reportInputRequest,
  reportProgress,
  sendMessage,
  submitTask,
  type TaskView,
  WORKER_OPERATIONS,
  type WorkerOperation,
  workerHeaders,
} from '../../helpers/tasks.js';

const PUBLIC_URL = 'https://taskhook.example.test';
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const STATES = ['queued', 'running', 'awaiting_input', 'completed', 'failed', 'cancelled'] as const;
type State = (typeof STATES)[number];
const OPERATIONS = ['message', 'cancel', ...WORKER_OPERATIONS] as const;
type Operation = (typeof OPERATIONS)[number];

type Expectation = { code: 200; after: TaskStatus } | { code: 400; error: string };
const ok = (after: TaskStatus): Expectation => ({ code: 200, after });
const NOT_RUNNING: Expectation = { code: 400, error: 'TASK_NOT_RUNNING' };
const NO_MESSAGES: Expectation = { code: 400, error: 'TASK_NOT_ACCEPTING_MESSAGES' };
const NOT_CANCELLABLE: Expectation = { code: 400, error: 'TASK_NOT_CANCELLABLE' };
const WORKER_REFUSED = {
  progress: NOT_RUNNING,
  input_request: NOT_RUNNING,
  complete: NOT_RUNNING,
  fail: NOT_RUNNING,
  release: NOT_RUNNING,
};

/**
 * The task state machine (user and worker operations) through the API. Worker operations carry the lease of the task's last claim
 * (a fresh random one for a queued task, which has never been claimed).
 */
const EXPECTED: Record<State, Record<Operation, Expectation>> = {
  queued: { message: ok('queued'), cancel: ok('cancelled'), ...WORKER_REFUSED },
  running: {
    message: ok('running'),
    cancel: ok('cancelled'),
    progress: ok('running'),
    input_request: ok('awaiting_input'),
    complete: ok('completed'),
    fail: ok('failed'),
    release: ok('queued'),
  },
  awaiting_input: { message: ok('running'), cancel: ok('cancelled'), ...WORKER_REFUSED },
  completed: { message: NO_MESSAGES, cancel: NOT_CANCELLABLE, ...WORKER_REFUSED },
  failed: { message: NO_MESSAGES, cancel: NOT_CANCELLABLE, ...WORKER_REFUSED },
  // The worker still holding a cancelled task learns it from its heartbeat; its reports are refused.
  cancelled: { message: NO_MESSAGES, cancel: ok('cancelled'), ...WORKER_REFUSED, progress: ok('cancelled') },
};

const COMMON_FIELDS = [
  'task_id',
  'status',
  'created_at',
  'agent_uuid',
  'message',
  'messages',
  'priority',
  'metadata',
  'concurrency_key',
  // Section 22.1: every state carries the attempt counters, the last failure and (null outside queued) available_at.
  'attempt',
  'max_attempts',
  'last_error',
  'available_at',
  // Section 22.1: the lineage, null unless the task is a rerun (parent_task_id: no child tasks yet).
  'rerun_of',
  'parent_task_id',
];
const STATE_FIELDS: Record<State, string[]> = {
  queued: ['estimated_start'],
  running: ['started_at', 'progress'],
  awaiting_input: ['started_at', 'progress', 'input_request'],
  completed: ['started_at', 'completed_at', 'result'],
  failed: ['started_at', 'failed_at', 'error'],
  cancelled: ['started_at', 'cancelled_at'],
};

describe.each(DATABASES)('task states through the API on $name', (database) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await buildTestApp(database, { config: { publicUrl: PUBLIC_URL } });
  });
  afterAll(() => t.close());

  /** A fresh user and agent, and a task of theirs driven into `state`. */
  async function taskIn(state: State, agentBody: Record<string, unknown> = {}) {
    const user = await createUser(t);
    const agent = await createAgent(t, user, agentBody);
    const submitted = await submitTask(t, user, agent.uuid, { message: `task in ${state}` });
    const taskId = submitted.task_id;
    if (state === 'queued') return { user, agent: agent.uuid, taskId, leaseId: randomUUID() };
    const claimed = await claimOne(t, user, agent.uuid);
    const leaseId = claimed.lease_id;
    const expectOk = async (res: Promise<{ statusCode: number; body: string }>) => {
      const r = await res;
      if (r.statusCode !== 200) throw new Error(`driving to ${state}: ${r.statusCode} ${r.body}`);
    };
    if (state === 'awaiting_input')
      await expectOk(report(t, user, agent.uuid, taskId, 'input_request', reportBody('input_request', leaseId)));
    if (state === 'completed')
      await expectOk(report(t, user, agent.uuid, taskId, 'complete', reportBody('complete', leaseId)));
    if (state === 'failed') await expectOk(report(t, user, agent.uuid, taskId, 'fail', reportBody('fail', leaseId)));
    if (state === 'cancelled') await expectOk(cancelTask(t, user, agent.uuid, taskId));
    const task = await getTask(t, user, agent.uuid, taskId);
    expect(task.status).toBe(state);
    return { user, agent: agent.uuid, taskId, leaseId };
  }

  function apply(user: TestUser, agent: string, taskId: string, leaseId: string, operation: Operation) {
    if (operation === 'message') return sendMessage(t, user, agent, taskId, 'here is more context');
    if (operation === 'cancel') return cancelTask(t, user, agent, taskId);
    return report(t, user, agent, taskId, operation, reportBody(operation, leaseId));
  }

  describe.concurrent.each(STATES)('from %s', (state) => {
    it.each(OPERATIONS)('%s', async (operation) => {
      const { user, agent, taskId, leaseId } = await taskIn(state);
      const before = await getTask(t, user, agent, taskId);
      const res = await apply(user, agent, taskId, leaseId, operation);
      const expected = EXPECTED[state][operation];
      const after = await getTask(t, user, agent, taskId);

      expect(res.statusCode).toBe(expected.code);
      if (expected.code === 400) {
        expect(res.json()).toMatchObject({ success: false, error: { code: expected.error } });
        expect(after).toEqual(before);
        return;
      }
      expect(after.status).toBe(expected.after);
      const body = res.json();
      if (operation === 'message') {
        expect(body).toEqual({ task_id: taskId, status: expected.after, message_received: true });
        expect(after.messages.at(-1)).toMatchObject({ role: 'user', content: 'here is more context' });
        expect(after.messages).toHaveLength(before.messages.length + 1);
      } else if (operation === 'cancel') {
        expect(body).toEqual({ task_id: taskId, status: 'cancelled', cancelled_at: after.cancelled_at });
        expect(body.cancelled_at).toMatch(ISO_MS);
        if (state === 'cancelled') expect(body.cancelled_at).toBe(before.cancelled_at);
      } else if (operation === 'progress') {
        expect(body.task_id).toBe(taskId);
        expect(body.status).toBe(expected.after);
        if (expected.after === 'running') expect(body.lease_expires_at).toMatch(ISO_MS);
        else expect(body.lease_expires_at).toBeNull();
      } else {
        // input_request, complete, fail and release answer with the GET body.
        expect(body).toEqual(after);
      }
    });
  });

  describe('GET body per state', () => {
    it.each(STATES)('%s has exactly the fields of its status', async (state) => {
      const { user, agent, taskId } = await taskIn(state);
      const task = await getTask(t, user, agent, taskId);
      expect(Object.keys(task).sort()).toEqual([...COMMON_FIELDS, ...STATE_FIELDS[state]].sort());
      expect(task).toMatchObject({
        task_id: taskId,
        status: state,
        agent_uuid: agent,
        message: `task in ${state}`,
        priority: 5,
        metadata: {},
        rerun_of: null,
        parent_task_id: null,
      });
      expect(task.messages[0]).toEqual({ role: 'user', content: `task in ${state}`, created_at: task.created_at });
      for (const field of [
        'created_at',
        'estimated_start',
        'started_at',
        'completed_at',
        'failed_at',
        'cancelled_at',
      ]) {
        const value = (task as Record<string, unknown>)[field];
        if (value !== undefined) expect(value).toMatch(ISO_MS);
      }
      if (state === 'running') expect(task.progress).toEqual({ current_step: '', steps_completed: 0, total_steps: 0 });
      if (state === 'awaiting_input') {
        expect(task.input_request).toEqual({
          message: 'Which branch should I review?',
          requested_at: expect.stringMatching(ISO_MS),
        });
        expect(task.messages.map((m) => m.role)).toEqual(['user', 'agent']);
        expect(task.messages[1]?.content).toBe('Which branch should I review?');
      }
      if (state === 'completed') {
        expect(task.result).toEqual({
          summary: 'all good',
          findings: [{ file: 'a.ts', line: 3, severity: 'low', message: 'nit' }],
        });
      }
      if (state === 'failed') expect(task.error).toEqual({ code: 'AGENT_ERROR', message: 'the repository is gone' });
    });

    it('a task cancelled before it started has no started_at; progress shows what was reported', async () => {
      const { user, agent, taskId } = await taskIn('queued');
      expect((await cancelTask(t, user, agent, taskId)).statusCode).toBe(200);
      const cancelled = await getTask(t, user, agent, taskId);
      expect(Object.keys(cancelled).sort()).toEqual([...COMMON_FIELDS, 'cancelled_at'].sort());

      const running = await taskIn('running');
      const progress = { current_step: 'linting', steps_completed: 2, total_steps: 5 };
      const res = await reportProgress(t, running.user, running.agent, running.taskId, {
        lease_id: running.leaseId,
        ...progress,
      });
      expect(res.statusCode).toBe(200);
      expect((await getTask(t, running.user, running.agent, running.taskId)).progress).toEqual(progress);
      const asked = await reportInputRequest(t, running.user, running.agent, running.taskId, running.leaseId, 'which?');
      expect(asked.json().progress).toEqual(progress);
    });

    it('completed keeps extra result fields and defaults findings to []; failed keeps the worker code', async () => {
      const a = await taskIn('running');
      const done = await reportComplete(t, a.user, a.agent, a.taskId, a.leaseId, { summary: 'ok', score: 0.9 });
      expect(done.statusCode).toBe(200);
      expect(done.json().result).toEqual({ summary: 'ok', score: 0.9, findings: [] });
      const b = await taskIn('running');
      const failed = await reportFail(t, b.user, b.agent, b.taskId, b.leaseId, { code: 'REPO_GONE', message: 'no' });
      expect(failed.json()).toMatchObject({ status: 'failed', error: { code: 'REPO_GONE', message: 'no' } });
      expect(failed.json().failed_at).toMatch(ISO_MS);
    });
  });

  describe('conversation', () => {
    it('a reply to awaiting_input makes it running and claimable again with the whole conversation, attempt unchanged', async () => {
      const { user, agent, taskId, leaseId } = await taskIn('awaiting_input', { concurrency: 1 });
      const started = (await getTask(t, user, agent, taskId)).started_at;
      // Waiting for the user does not hold a worker slot.
      const other = await submitTask(t, user, agent, { message: 'another' });
      const otherClaim = await claimOne(t, user, agent);
      expect(otherClaim.task_id).toBe(other.task_id);
      expect((await reportComplete(t, user, agent, other.task_id, otherClaim.lease_id)).statusCode).toBe(200);

      const reply = await sendMessage(t, user, agent, taskId, 'the main branch');
      expect(reply.statusCode).toBe(200);
      expect(reply.json()).toEqual({ task_id: taskId, status: 'running', message_received: true });
      const resumed = await getTask(t, user, agent, taskId);
      expect(resumed.status).toBe('running');
      expect(resumed.started_at).toBe(started);
      expect(resumed).not.toHaveProperty('input_request');
      // The old lease ended with the question.
      expect((await reportComplete(t, user, agent, taskId, leaseId)).json().error.code).toBe('TASK_NOT_RUNNING');
      const oldBeat = await reportProgress(t, user, agent, taskId, reportBody('progress', leaseId));
      expect(oldBeat.json().error.code).toBe('TASK_NOT_RUNNING');

      const again = await claimOne(t, user, agent);
      expect(again.task_id).toBe(taskId);
      expect(again.attempt).toBe(1);
      expect(again.lease_id).not.toBe(leaseId);
      expect(again.messages.map((m) => [m.role, m.content])).toEqual([
        ['user', 'task in awaiting_input'],
        ['agent', 'Which branch should I review?'],
        ['user', 'the main branch'],
      ]);
      const done = await reportComplete(t, user, agent, taskId, again.lease_id);
      expect(done.statusCode).toBe(200);
      expect(done.json().messages).toHaveLength(3);
    });

    it('messages to queued and running tasks are kept for the agent and leave the status alone', async () => {
      const user = await createUser(t);
      const agent = (await createAgent(t, user)).uuid;
      const { task_id } = await submitTask(t, user, agent, { message: 'first' });
      expect((await sendMessage(t, user, agent, task_id, 'also check tests')).json()).toEqual({
        task_id,
        status: 'queued',
        message_received: true,
      });
      const claimed = await claimOne(t, user, agent);
      expect(claimed.messages.map((m) => m.content)).toEqual(['first', 'also check tests']);
      expect(claimed.message).toBe('first');
      const res = await sendMessage(t, user, agent, task_id, 'and the docs');
      expect(res.json().status).toBe('running');
      const task = await getTask(t, user, agent, task_id);
      expect(task.status).toBe('running');
      expect(task.messages.map((m) => [m.role, m.content])).toEqual([
        ['user', 'first'],
        ['user', 'also check tests'],
        ['user', 'and the docs'],
      ]);
      // The holder keeps its lease.
      const progress = await reportProgress(t, user, agent, task_id, reportBody('progress', claimed.lease_id));
      expect(progress.json().status).toBe('running');
    });

    it('an empty, missing or non-string message is 400 INVALID_REQUEST', async () => {
      const { user, agent, taskId } = await taskIn('awaiting_input');
      const url = `/agent/${agent}/task/${taskId}/message`;
      for (const body of [{ message: '' }, {}, { message: 123 }, { message: 'x', extra: true }]) {
        const res = await call(t.app, 'POST', url, { headers: workerHeaders(user), body });
        expect(res.statusCode, JSON.stringify(body)).toBe(400);
        expect(res.json().error.code).toBe('INVALID_REQUEST');
      }
      expect((await getTask(t, user, agent, taskId)).status).toBe('awaiting_input');
    });
  });

  describe('leases', () => {
    it('a stale lease_id is 400 TASK_NOT_RUNNING for every report and changes nothing', async () => {
      const { user, agent, taskId } = await taskIn('running');
      const before = await getTask(t, user, agent, taskId);
      for (const operation of WORKER_OPERATIONS) {
        const res = await report(t, user, agent, taskId, operation, reportBody(operation, randomUUID()));
        expect(res.statusCode, operation).toBe(400);
        expect(res.json().error.code).toBe('TASK_NOT_RUNNING');
      }
      expect(await getTask(t, user, agent, taskId)).toEqual(before);
    });

    it('a cancelled task answers its holder status cancelled, refuses its reports and stays cancelled', async () => {
      const { user, agent, taskId, leaseId } = await taskIn('cancelled');
      const cancelledAt = (await getTask(t, user, agent, taskId)).cancelled_at;
      const heartbeat = await reportProgress(t, user, agent, taskId, reportBody('progress', leaseId));
      expect(heartbeat.json()).toEqual({ task_id: taskId, status: 'cancelled', lease_expires_at: null });
      const stranger = await reportProgress(t, user, agent, taskId, reportBody('progress', randomUUID()));
      expect(stranger.statusCode).toBe(400);
      for (const operation of ['input_request', 'complete', 'fail', 'release'] as WorkerOperation[]) {
        const res = await report(t, user, agent, taskId, operation, reportBody(operation, leaseId));
        expect(res.json().error.code).toBe('TASK_NOT_RUNNING');
      }
      const again = await cancelTask(t, user, agent, taskId);
      expect(again.json()).toEqual({ task_id: taskId, status: 'cancelled', cancelled_at: cancelledAt });
      const task = await getTask(t, user, agent, taskId);
      expect(task.status).toBe('cancelled');
      expect(task.cancelled_at).toBe(cancelledAt);
    });
  });

  describe('submit', () => {
    it('answers 202 with absolute poll and cancel URLs under the public URL and a Location header', async () => {
      const user = await createUser(t);
      const agent = (await createAgent(t, user)).uuid;
      const res = await call(t.app, 'POST', `/agent/request/${agent}`, {
        token: user.token,
        body: { message: 'hello', priority: 10, timeout_override: 60, metadata: { pr: 7 }, callback_mode: 'poll' },
      });
      expect(res.statusCode).toBe(202);
      const body = res.json();
      expect(Object.keys(body).sort()).toEqual(
        ['task_id', 'status', 'created_at', 'estimated_start', 'poll_url', 'cancel_url'].sort(),
      );
      expect(body.status).toBe('queued');
      expect(body.created_at).toMatch(ISO_MS);
      expect(body.estimated_start).toMatch(ISO_MS);
      expect(body.poll_url).toBe(`${PUBLIC_URL}/agent/${agent}/task/${body.task_id}`);
      expect(body.cancel_url).toBe(`${body.poll_url}/cancel`);
      expect(res.headers.location).toBe(body.poll_url);

      const polled = await call(t.app, 'GET', body.poll_url.slice(PUBLIC_URL.length), { token: user.token });
      expect(polled.statusCode).toBe(200);
      expect(polled.json()).toMatchObject({
        task_id: body.task_id,
        status: 'queued',
        priority: 10,
        metadata: { pr: 7 },
        estimated_start: body.estimated_start,
        created_at: body.created_at,
      });
      const cancelled = await call(t.app, 'POST', body.cancel_url.slice(PUBLIC_URL.length), { token: user.token });
      expect(cancelled.json().status).toBe('cancelled');
    });

    it.each([
      ['priority 0', { priority: 0 }],
      ['priority 11', { priority: 11 }],
      ['priority "5"', { priority: '5' }],
      ['priority 5.5', { priority: 5.5 }],
      ['message ""', { message: '' }],
      ['message missing', { message: undefined }],
      ['message 123', { message: 123 }],
      ['unknown field', { colour: 'blue' }],
      ['callback_mode webhook without webhook_url', { callback_mode: 'webhook' }],
      ['callback_mode other', { callback_mode: 'email' }],
      ['webhook_url with callback_mode poll', { webhook_url: 'https://example.com/hook' }],
      ['webhook_url that is not http(s)', { callback_mode: 'webhook', webhook_url: 'ftp://example.com/hook' }],
      ['webhook_url that is not a URL', { callback_mode: 'webhook', webhook_url: 'not a url' }],
      ['timeout_override 0', { timeout_override: 0 }],
      ['timeout_override 86401', { timeout_override: 86401 }],
      ['metadata over 16 KiB', { metadata: { blob: 'x'.repeat(16 * 1024) } }],
      ['metadata not an object', { metadata: 'x' }],
    ])('%s is 400 INVALID_REQUEST', async (_name, patch) => {
      const user = await createUser(t);
      const agent = (await createAgent(t, user)).uuid;
      const body: Record<string, unknown> = { message: 'valid', ...patch };
      const res = await call(t.app, 'POST', `/agent/request/${agent}`, { headers: workerHeaders(user), body });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ success: false, error: { code: 'INVALID_REQUEST' } });
      const list = await call(t.app, 'GET', `/agent/${agent}/tasks`, { headers: workerHeaders(user) });
      expect(list.json().pagination.total).toBe(0);
    });

    it('accepts metadata just under 16 KiB', async () => {
      const user = await createUser(t);
      const agent = (await createAgent(t, user)).uuid;
      const blob = 'x'.repeat(16 * 1024 - '{"blob":""}'.length);
      const { task_id } = await submitTask(t, user, agent, { metadata: { blob } });
      expect((await getTask(t, user, agent, task_id)).metadata).toEqual({ blob });
    });

    it.each(['paused', 'stopped'])('a %s agent is 503 AGENT_UNAVAILABLE until it is active again', async (status) => {
      const user = await createUser(t);
      const agent = (await createAgent(t, user)).uuid;
      const patch = await call(t.app, 'PATCH', `/agent/${agent}`, { token: user.token, body: { status } });
      expect(patch.statusCode).toBe(200);
      const refused = await call(t.app, 'POST', `/agent/request/${agent}`, {
        token: user.token,
        body: { message: 'hello' },
      });
      expect(refused.statusCode).toBe(503);
      expect(refused.json().error.code).toBe('AGENT_UNAVAILABLE');
      await call(t.app, 'PATCH', `/agent/${agent}`, { token: user.token, body: { status: 'active' } });
      expect((await submitTask(t, user, agent)).status).toBe('queued');
    });
  });

  describe('not found', () => {
    it('an unknown task, a task of another agent of the same user, or another user’s task is 404', async () => {
      const { user, agent, taskId, leaseId } = await taskIn('running');
      const sibling = (await createAgent(t, user)).uuid;
      const stranger = await createUser(t);
      const strangerAgent = (await createAgent(t, stranger)).uuid;
      const cases: Array<[TestUser, string, string]> = [
        [user, agent, randomUUID()],
        [user, sibling, taskId],
        [stranger, agent, taskId],
        [stranger, strangerAgent, taskId],
      ];
      for (const [who, agentId, id] of cases) {
        const base = `/agent/${agentId}/task/${id}`;
        const headers = workerHeaders(who);
        const requests = [
          call(t.app, 'GET', base, { headers }),
          call(t.app, 'POST', `${base}/message`, { headers, body: { message: 'hi' } }),
          call(t.app, 'POST', `${base}/cancel`, { headers }),
          ...WORKER_OPERATIONS.map((op) =>
            call(t.app, 'POST', `${base}/${op}`, { headers, body: reportBody(op, leaseId) }),
          ),
        ];
        for (const res of await Promise.all(requests)) {
          expect(res.statusCode, `${res.body}`).toBe(404);
          expect(res.json().error.code).toBe('NOT_FOUND');
        }
      }
      expect((await getTask(t, user, agent, taskId)).status).toBe('running');
      const foreignSubmit = await call(t.app, 'POST', `/agent/request/${agent}`, {
        headers: workerHeaders(stranger),
        body: { message: 'hi' },
      });
      expect(foreignSubmit.statusCode).toBe(404);
      const foreignList = await call(t.app, 'GET', `/agent/${agent}/tasks`, { headers: workerHeaders(stranger) });
      expect(foreignList.statusCode).toBe(404);
      const foreignClaim = await call(t.app, 'POST', `/agent/${agent}/tasks/claim`, {
        headers: workerHeaders(stranger),
        body: {},
      });
      expect(foreignClaim.statusCode).toBe(404);
    });
  });

  describe('list', () => {
    it('lists newest first, filters by status and pages', async () => {
      const user = await createUser(t);
      const agent = (await createAgent(t, user)).uuid;
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await submitTask(t, user, agent, { message: `task ${i}` })).task_id);
      await cancelTask(t, user, agent, ids[1] as string);
      await cancelTask(t, user, agent, ids[3] as string);
      const newestFirst = [...ids].reverse();

      const all = await call(t.app, 'GET', `/agent/${agent}/tasks`, { token: user.token });
      expect(all.statusCode).toBe(200);
      expect(all.json().tasks.map((x: TaskView) => x.task_id)).toEqual(newestFirst);
      expect(all.json().pagination).toEqual({ page: 1, limit: 20, total: 5, total_pages: 1 });
      expect(all.json().tasks[0]).toEqual(await getTask(t, user, agent, ids[4] as string));

      const page2 = await call(t.app, 'GET', `/agent/${agent}/tasks?page=2&limit=2`, { token: user.token });
      expect(page2.json().tasks.map((x: TaskView) => x.task_id)).toEqual(newestFirst.slice(2, 4));
      expect(page2.json().pagination).toEqual({ page: 2, limit: 2, total: 5, total_pages: 3 });
      const page3 = await call(t.app, 'GET', `/agent/${agent}/tasks?page=3&limit=2`, { token: user.token });
      expect(page3.json().tasks.map((x: TaskView) => x.task_id)).toEqual(newestFirst.slice(4));

      const cancelled = await call(t.app, 'GET', `/agent/${agent}/tasks?status=cancelled`, { token: user.token });
      expect(cancelled.json().tasks.map((x: TaskView) => x.task_id)).toEqual([ids[3], ids[1]]);
      expect(cancelled.json().pagination.total).toBe(2);
      const queued = await call(t.app, 'GET', `/agent/${agent}/tasks?status=queued&limit=1`, { token: user.token });
      expect(queued.json().tasks.map((x: TaskView) => x.task_id)).toEqual([ids[4]]);
      expect(queued.json().pagination).toEqual({ page: 1, limit: 1, total: 3, total_pages: 3 });
      const none = await call(t.app, 'GET', `/agent/${agent}/tasks?status=completed`, { token: user.token });
      expect(none.json()).toEqual({ tasks: [], pagination: { page: 1, limit: 20, total: 0, total_pages: 0 } });

      for (const query of ['status=done', 'page=0', 'limit=101', 'limit=x']) {
        const bad = await call(t.app, 'GET', `/agent/${agent}/tasks?${query}`, { token: user.token });
        expect(bad.statusCode, query).toBe(400);
        expect(bad.json().error.code).toBe('INVALID_REQUEST');
      }
    });
  });
});
