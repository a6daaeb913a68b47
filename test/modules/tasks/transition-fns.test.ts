import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/http/errors.js';
import { iso } from '../../../src/lib/time.js';
import {
  type Change,
  initial,
  isClaimable,
  type TaskInput,
  transition,
} from '../../../src/modules/tasks/lifecycle/transition-fns.js';
import {
  FINAL_STATUSES,
  outcomeOf,
  TASK_STATUSES,
  type TaskOperation,
  type TaskStatus,
} from '../../../src/modules/tasks/tasks-fns.js';
import type { TaskRecord } from '../../../src/modules/tasks/tasks-record.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const NOW = T0 + 60_000;
const LEASE = 'lease-1';
/** The default retry policy's attempts. */
const MAX_ATTEMPTS = 3;

/** A task as it can be stored in `status`; `held`: a worker holds it (running tasks only). */
function stored(status: TaskStatus, opts: { held?: boolean; attempt?: number } = {}): TaskRecord {
  const running = status === 'running';
  const held = running && (opts.held ?? true);
  const started = status !== 'queued';
  return {
    uuid: 't1',
    agentUuid: 'a1',
    workspaceUuid: 'u1',
    status,
    ready: isClaimable(status, held ? iso(NOW + 30_000) : null),
    priority: 5,
    message: 'hello',
    messages: [{ role: 'user', content: 'hello', created_at: iso(T0) }],
    metadata: {},
    callbackMode: 'poll',
    webhookUrl: null,
    timeoutSeconds: 3600,
    attempt: opts.attempt ?? 1,
    leaseId: started ? LEASE : null,
    leaseSeconds: started ? 30 : null,
    leaseExpiresAt: held ? iso(NOW + 30_000) : null,
    workerId: null,
    progress: null,
    inputRequest: status === 'awaiting_input' ? { message: 'which branch?', requested_at: iso(T0 + 10_000) } : null,
    result: null,
    error: null,
    estimatedStart: iso(T0),
    createdAt: iso(T0),
    updatedAt: iso(T0),
    startedAt: started ? iso(T0 + 1000) : null,
    timeoutAt: started ? iso(T0 + 1000 + 3_600_000) : null,
    completedAt: null,
    failedAt: null,
    cancelledAt: status === 'cancelled' ? iso(T0 + 20_000) : null,
    maxAttempts: MAX_ATTEMPTS,
    backoff: null,
    lastError: null,
    availableAt: iso(T0),
    rerunOf: null,
    parentTaskId: null,
    seq: 3,
    concurrencyKey: null,
  };
}

const progress = { current_step: 'lint', steps_completed: 1, total_steps: 3 };

/** One input of every kind, with the lease the stored task was given. */
const INPUTS: TaskInput[] = [
  { op: 'cancel' },
  { op: 'message', content: 'main' },
  { op: 'claim', leaseId: 'lease-2', leaseSeconds: 45, workerId: 'w1' },
  { op: 'progress', leaseId: LEASE, progress },
  { op: 'input_request', leaseId: LEASE, message: 'which branch?' },
  { op: 'complete', leaseId: LEASE, result: { summary: 'done' } },
  { op: 'fail', leaseId: LEASE, error: { message: 'boom' }, retryable: false },
  { op: 'fail', leaseId: LEASE, error: { code: 'X', message: 'flaky' }, retryable: true },
  { op: 'release', leaseId: LEASE },
];

const VARIANTS: Array<[string, TaskRecord]> = [
  ...TASK_STATUSES.filter((s) => s !== 'running').map((s): [string, TaskRecord] => [s, stored(s)]),
  ['running (held)', stored('running')],
  ['running (answered, waiting for a worker)', stored('running', { held: false })],
];

/** The table operation an input applies to a task (a retryable fail with attempts left is a retry). */
function operationOf(task: TaskRecord, input: TaskInput): TaskOperation {
  if (input.op === 'fail' && input.retryable && task.attempt < MAX_ATTEMPTS) return 'retry';
  return input.op as TaskOperation;
}

/** What every saved change must satisfy, whatever the operation. */
function expectConsistent(task: TaskRecord, change: Change) {
  const { next, changes } = change;
  expect(next).toEqual({ ...task, ...changes });
  expect(next.ready).toBe(isClaimable(next.status, next.leaseExpiresAt));
  expect(next.seq).toBe(change.event ? task.seq + 1 : task.seq);
  if (change.event) expect(next.updatedAt).toBe(iso(NOW));
  if (next.status !== 'running') expect(next.leaseExpiresAt).toBeNull();
  if (FINAL_STATUSES.has(next.status)) expect(next.ready).toBe(false);
  expect(change.event).toBe(
    next.status !== task.status || next.messages.length > task.messages.length || changes.progress !== undefined,
  );
}

describe('transition: every input in every state', () => {
  for (const [name, task] of VARIANTS) {
    for (const input of INPUTS) {
      const label = input.op === 'fail' ? `fail (retryable: ${input.retryable})` : input.op;
      it(`${name} × ${label}`, () => {
        const result = transition(task, input, NOW);
        const operation = operationOf(task, input);
        const outcome = outcomeOf(task.status, operation);
        if ('error' in outcome) {
          expect(result).toBeInstanceOf(AppError);
          expect((result as AppError).code).toBe(outcome.error);
          return;
        }
        const isReport = !['cancel', 'message', 'claim'].includes(input.op);
        if (isReport && task.status !== 'cancelled' && !task.leaseExpiresAt) {
          // Nobody holds the task: no report is accepted, whatever the lease id.
          expect((result as AppError).code).toBe('TASK_NOT_RUNNING');
          return;
        }
        if (result === null) {
          // Only a repeated cancel and a heartbeat on a cancelled task change nothing.
          expect(task.status).toBe('cancelled');
          expect(['cancel', 'progress']).toContain(input.op);
          return;
        }
        expect(result).not.toBeInstanceOf(AppError);
        const change = result as Change;
        expect(change.operation).toBe(operation);
        expect(change.next.status).toBe('to' in outcome ? outcome.to : task.status);
        expectConsistent(task, change);
      });
    }
  }
});

describe('transition: leases', () => {
  const held = stored('running');
  for (const input of INPUTS.filter((i) => 'leaseId' in i && i.op !== 'claim')) {
    it(`${input.op} under another lease is TASK_NOT_RUNNING`, () => {
      const result = transition(held, { ...input, leaseId: 'stale' } as TaskInput, NOW);
      expect((result as AppError).code).toBe('TASK_NOT_RUNNING');
    });
  }

  it('a claim holds the task for lease_seconds and records the worker', () => {
    const change = transition(stored('queued'), INPUTS[2] as TaskInput, NOW) as Change;
    expect(change.next).toMatchObject({ leaseId: 'lease-2', leaseSeconds: 45, workerId: 'w1', ready: false });
    expect(change.next.leaseExpiresAt).toBe(iso(NOW + 45_000));
  });

  it('a heartbeat extends the lease by its lease_seconds; the same progress again is not an event', () => {
    const first = transition(held, { op: 'progress', leaseId: LEASE, progress }, NOW) as Change;
    expect(first.event).toBe(true);
    expect(first.next.leaseExpiresAt).toBe(iso(NOW + 30_000));
    const again = transition(first.next, { op: 'progress', leaseId: LEASE, progress }, NOW + 5000) as Change;
    expect(again.event).toBe(false);
    expect(again.changes).toEqual({ leaseExpiresAt: iso(NOW + 35_000) });
  });

  it("the service's renewal extends the lease unseen, and may set a new lease length (an http agent's 202)", () => {
    const renewed = transition(held, { op: 'renew', leaseId: LEASE }, NOW) as Change;
    expect(renewed).toMatchObject({ event: false, changes: { leaseExpiresAt: iso(NOW + 30_000), leaseSeconds: 30 } });
    const accepted = transition(held, { op: 'renew', leaseId: LEASE, leaseSeconds: 120 }, NOW) as Change;
    expect(accepted.next).toMatchObject({ status: 'running', leaseSeconds: 120, leaseExpiresAt: iso(NOW + 120_000) });
    const later = transition(accepted.next, { op: 'progress', leaseId: LEASE, progress }, NOW + 1000) as Change;
    expect(later.next.leaseExpiresAt).toBe(iso(NOW + 121_000));
    expect(transition(stored('cancelled'), { op: 'renew', leaseId: LEASE, leaseSeconds: 120 }, NOW)).toBeNull();
  });

  it('a release hands the task back: queued, claimable, attempt unchanged', () => {
    const change = transition(held, { op: 'release', leaseId: LEASE }, NOW) as Change;
    expect(change.next).toMatchObject({ status: 'queued', ready: true, leaseId: null, attempt: 1 });
  });

  it('a retryable failure queues the task again while attempts remain, then fails it', () => {
    const input: TaskInput = { op: 'fail', leaseId: LEASE, error: { message: 'flaky' }, retryable: true };
    const retried = transition(held, input, NOW) as Change;
    expect(retried.next).toMatchObject({ status: 'queued', attempt: 2, error: { code: 'AGENT_ERROR' } });
    const last = transition(stored('running', { attempt: MAX_ATTEMPTS }), input, NOW) as Change;
    expect(last.next).toMatchObject({ status: 'failed', attempt: MAX_ATTEMPTS, failedAt: iso(NOW) });
  });
});

describe('transition: timeouts', () => {
  it('the timeout starts at the first claim and is kept by a later claim', () => {
    const queued = stored('queued');
    const first = transition(queued, INPUTS[2] as TaskInput, NOW) as Change;
    expect(first.next.timeoutAt).toBe(iso(NOW + 3_600_000));
    expect(first.next.startedAt).toBe(iso(NOW));
    const answered = stored('running', { held: false });
    const again = transition(answered, INPUTS[2] as TaskInput, NOW) as Change;
    expect(again.next.timeoutAt).toBe(answered.timeoutAt);
    expect(again.next.startedAt).toBe(answered.startedAt);
  });

  it('time spent waiting for the user is added to the timeout when the answer arrives', () => {
    const waiting = stored('awaiting_input');
    const change = transition(waiting, { op: 'message', content: 'main' }, NOW) as Change;
    const waited = NOW - (T0 + 10_000);
    expect(change.next.timeoutAt).toBe(iso(Date.parse(waiting.timeoutAt as string) + waited));
    expect(change.next).toMatchObject({ status: 'running', ready: true, inputRequest: null });
  });

  it('the sweeper fails a running task past its timeout, and leaves it alone before', () => {
    const task = { ...stored('running'), timeoutAt: iso(NOW - 1) };
    const change = transition(task, { op: 'sweep' }, NOW) as Change;
    expect(change.operation).toBe('timeout');
    expect(change.next).toMatchObject({ status: 'failed', error: { code: 'TIMEOUT' }, failedAt: iso(NOW) });
    expect(transition({ ...task, timeoutAt: iso(NOW) }, { op: 'sweep' }, NOW)).toBeNull();
  });

  it('an expired lease is queued again (attempt + 1), failed with LEASE_EXPIRED after the last attempt', () => {
    const expired = { ...stored('running'), leaseExpiresAt: iso(NOW - 1), timeoutAt: iso(NOW - 1) };
    const requeued = transition(expired, { op: 'sweep' }, NOW) as Change;
    // The expired lease is handled first, even when the timeout has passed too.
    expect(requeued.operation).toBe('lease_expired');
    expect(requeued.next).toMatchObject({ status: 'queued', attempt: 2, ready: true, leaseId: null });
    const last = transition({ ...expired, attempt: MAX_ATTEMPTS }, { op: 'sweep' }, NOW) as Change;
    expect(last.next).toMatchObject({ status: 'failed', error: { code: 'LEASE_EXPIRED' } });
  });

  it('the sweeper changes nothing in any other state', () => {
    for (const status of TASK_STATUSES.filter((s) => s !== 'running')) {
      const task = { ...stored(status), leaseExpiresAt: iso(NOW - 1), timeoutAt: iso(NOW - 1) };
      expect(transition(task, { op: 'sweep' }, NOW)).toBeNull();
    }
  });
});

describe('transition: any stored task and any input', () => {
  const arbTask = fc
    .record({
      status: fc.constantFrom(...TASK_STATUSES),
      held: fc.boolean(),
      attempt: fc.integer({ min: 1, max: MAX_ATTEMPTS }),
      leaseOffset: fc.integer({ min: -120_000, max: 120_000 }),
      timeoutOffset: fc.integer({ min: -120_000, max: 120_000 }),
    })
    .map(({ status, held, attempt, leaseOffset, timeoutOffset }) => {
      const task = stored(status, { held, attempt });
      return {
        ...task,
        leaseExpiresAt: task.leaseExpiresAt && iso(NOW + leaseOffset),
        timeoutAt: task.timeoutAt && iso(NOW + timeoutOffset),
      };
    });
  const arbInput = fc.oneof(
    fc.constantFrom<TaskInput>(...INPUTS, { op: 'sweep' }),
    fc.constantFrom(...INPUTS).map((i) => ('leaseId' in i ? { ...i, leaseId: 'other' } : i) as TaskInput),
  );

  it('keeps the invariants: table-driven status, derived claimability, one event per visible change', () => {
    fc.assert(
      fc.property(arbTask, arbInput, (task, input) => {
        const result = transition(task, input, NOW);
        if (result === null || result instanceof AppError) return;
        expect(outcomeOf(task.status, result.operation)).not.toHaveProperty('error');
        expectConsistent(task, result);
      }),
    );
  });
});

describe("initial: the first transition, every creator's", () => {
  const fields = {
    uuid: 't9',
    agentUuid: 'a1',
    workspaceUuid: 'u1',
    priority: 7,
    message: 'first words',
    metadata: { from: 'test' },
    callbackMode: 'poll' as const,
    webhookUrl: null,
    timeoutSeconds: 600,
    estimatedStart: iso(T0),
    traceId: null,
    traceParentSpanId: null,
    concurrencyKey: 'k',
  };

  it('is queued, waiting for a worker, attempt 1, event 1, its message opening the conversation', () => {
    const task = initial(fields, T0);
    expect(task).toMatchObject({
      ...fields,
      status: 'queued',
      ready: true,
      attempt: 1,
      seq: 1,
      messages: [{ role: 'user', content: 'first words', created_at: iso(T0) }],
      createdAt: iso(T0),
      updatedAt: iso(T0),
      leaseExpiresAt: null,
      startedAt: null,
      timeoutAt: null,
    });
    // The state it starts in is one the state table knows, and it waits for a worker as a queued task does.
    expect(task.ready).toBe(isClaimable(task.status, task.leaseExpiresAt));
    expect('error' in outcomeOf(task.status, 'claim')).toBe(false);
  });

  it('is pure: the same fields and time give the same task', () => {
    expect(initial(fields, T0)).toEqual(initial(fields, T0));
  });
});
