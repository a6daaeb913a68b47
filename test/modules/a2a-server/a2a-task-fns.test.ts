import { describe, expect, it } from 'vitest';
import {
  endsStream,
  ownMessageId,
  stateTimestamp,
  statusOfState,
  streamUpdates,
  type TaskState,
  toA2aTask,
} from '../../../src/modules/a2a-server/a2a-task-fns.js';
import type { TaskStatus } from '../../../src/modules/tasks/tasks-fns.js';
import type { TaskView } from '../../../src/modules/tasks/tasks-schemas.js';

const ID = '01900000-0000-7000-8000-000000000001';
const T0 = '2026-11-22T10:00:00.000Z';
const T1 = '2026-11-22T10:00:01.000Z';
const T2 = '2026-11-22T10:00:02.000Z';
const T3 = '2026-11-22T10:00:03.000Z';

function view(status: TaskStatus, extra: Partial<TaskView> = {}): TaskView {
  return {
    task_id: ID,
    status,
    created_at: T0,
    agent_uuid: '01900000-0000-7000-8000-0000000000aa',
    message: 'hello',
    messages: [{ role: 'user', content: 'hello', created_at: T0 }],
    priority: 5,
    metadata: { k: 'v' },
    concurrency_key: null,
    attempt: 1,
    max_attempts: 3,
    last_error: null,
    available_at: status === 'queued' ? T0 : null,
    rerun_of: null,
    parent_task_id: null,
    ...extra,
  };
}

const none = { contextId: undefined, messageIds: new Map<number, string>() };

describe('task → A2A Task', () => {
  it.each([
    ['queued', 'TASK_STATE_SUBMITTED', {}, T0],
    ['running', 'TASK_STATE_WORKING', { started_at: T1 }, T1],
    ['awaiting_input', 'TASK_STATE_INPUT_REQUIRED', { input_request: { message: 'q?', requested_at: T2 } }, T2],
    ['completed', 'TASK_STATE_COMPLETED', { completed_at: T3, result: { summary: 's', findings: [] } }, T3],
    ['failed', 'TASK_STATE_FAILED', { failed_at: T3, error: { code: 'AGENT_ERROR', message: 'boom' } }, T3],
    ['cancelled', 'TASK_STATE_CANCELED', { cancelled_at: T3 }, T3],
  ] as Array<[TaskStatus, string, Partial<TaskView>, string]>)(
    'maps %s to %s with the time of the last state change',
    (status, state, extra, at) => {
      const task = toA2aTask(view(status, extra), none);
      expect(task.status.state).toBe(state);
      expect(task.status.timestamp).toBe(at);
      expect(task.id).toBe(ID);
      expect(task.contextId).toBe(ID);
      expect(task.metadata).toEqual({ k: 'v' });
      expect(statusOfState(state as TaskState)).toBe(status);
      expect(endsStream(status)).toBe(status !== 'queued' && status !== 'running');
    },
  );

  it('gives no taskhook status for states taskhook never has', () => {
    expect(statusOfState('TASK_STATE_REJECTED')).toBeNull();
    expect(statusOfState('TASK_STATE_AUTH_REQUIRED')).toBeNull();
  });

  it('carries the question and the failure as status messages of the agent', () => {
    const asked = toA2aTask(
      view('awaiting_input', {
        messages: [
          { role: 'user', content: 'hello', created_at: T0 },
          { role: 'agent', content: 'q?', created_at: T2 },
        ],
        input_request: { message: 'q?', requested_at: T2 },
      }),
      { contextId: 'ctx', messageIds: new Map() },
    );
    expect(asked.status.message).toEqual({
      messageId: ownMessageId(ID, 1),
      contextId: 'ctx',
      taskId: ID,
      role: 'ROLE_AGENT',
      parts: [{ text: 'q?' }],
    });
    const failed = toA2aTask(view('failed', { failed_at: T3, error: { code: 'X', message: 'boom' } }), none);
    expect(failed.status.message?.parts).toEqual([{ text: 'boom' }]);
  });

  it("dates a running task that got its answer by the user's reply", () => {
    const running = view('running', {
      started_at: T1,
      messages: [
        { role: 'user', content: 'hello', created_at: T0 },
        { role: 'agent', content: 'q?', created_at: T2 },
        { role: 'user', content: 'a', created_at: T3 },
      ],
    });
    expect(stateTimestamp(running)).toBe(T3);
  });

  it('gives the history with the senders’ messageIds, cut to historyLength', () => {
    const v = view('running', {
      started_at: T1,
      messages: [
        { role: 'user', content: 'a', created_at: T0 },
        { role: 'agent', content: 'b', created_at: T1 },
        { role: 'user', content: 'c', created_at: T2 },
      ],
    });
    const extras = { contextId: 'ctx', messageIds: new Map([[0, 'm-a']]) };
    const all = toA2aTask(v, extras).history;
    expect(all.map((m) => [m.messageId, m.role, m.parts])).toEqual([
      ['m-a', 'ROLE_USER', [{ text: 'a' }]],
      [ownMessageId(ID, 1), 'ROLE_AGENT', [{ text: 'b' }]],
      [ownMessageId(ID, 2), 'ROLE_USER', [{ text: 'c' }]],
    ]);
    expect(all.every((m) => m.contextId === 'ctx' && m.taskId === ID)).toBe(true);
    expect(toA2aTask(v, extras, 0).history).toEqual([]);
    expect(toA2aTask(v, extras, 2).history.map((m) => m.parts)).toEqual([[{ text: 'b' }], [{ text: 'c' }]]);
    expect(toA2aTask(v, extras, 10).history).toHaveLength(3);
  });

  it('gives a completed task its result as one artifact: the summary as text, the result as data', () => {
    const result = { summary: 'fine', findings: [{ file: 'a', line: 1, severity: 'low', message: 'm' }], extra: 1 };
    const task = toA2aTask(view('completed', { completed_at: T3, result }), none);
    expect(task.artifacts).toEqual([
      {
        artifactId: 'result',
        name: 'result',
        parts: [{ text: 'fine' }, { data: result, mediaType: 'application/json' }],
      },
    ]);
    expect(toA2aTask(view('running'), none).artifacts).toBeUndefined();
  });
});

describe('stream updates', () => {
  const running = view('running', {
    started_at: T1,
    progress: { current_step: '', steps_completed: 0, total_steps: 0 },
  });

  it('sends a status update per state change, the artifact first on completion', () => {
    expect(streamUpdates(view('queued'), running, 'c')).toEqual([
      { statusUpdate: { taskId: ID, contextId: 'c', status: { state: 'TASK_STATE_WORKING', timestamp: T1 } } },
    ]);
    const done = view('completed', { completed_at: T3, result: { summary: 's', findings: [] } });
    const updates = streamUpdates(running, done, 'c');
    expect(updates.map((u) => Object.keys(u)[0])).toEqual(['artifactUpdate', 'statusUpdate']);
    expect(updates[0]).toMatchObject({ artifactUpdate: { taskId: ID, contextId: 'c', lastChunk: true } });
  });

  it('sends a working update with the current step when only progress moved, nothing for other changes', () => {
    const step = { ...running, progress: { current_step: 'reading', steps_completed: 1, total_steps: 2 } };
    const [update] = streamUpdates(running, step, 'c');
    expect(update).toMatchObject({
      statusUpdate: {
        status: { state: 'TASK_STATE_WORKING', message: { role: 'ROLE_AGENT', parts: [{ text: 'reading' }] } },
      },
    });
    const appended = {
      ...step,
      messages: [...step.messages, { role: 'user' as const, content: 'more', created_at: T2 }],
    };
    expect(streamUpdates(step, appended, 'c')).toEqual([]);
  });
});
