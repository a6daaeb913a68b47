import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  estimateStart,
  FINAL_STATUSES,
  OPEN_STATUSES,
  type Outcome,
  outcomeOf,
  requestHash,
  TASK_OPERATIONS,
  TASK_STATUSES,
  type TaskOperation,
  type TaskStatus,
  TRANSITIONS,
} from '../../../src/modules/tasks/tasks-fns.js';

const NOT_RUNNING: Outcome = { error: 'TASK_NOT_RUNNING' };
const NOT_CANCELLABLE: Outcome = { error: 'TASK_NOT_CANCELLABLE' };
const NO_MESSAGES: Outcome = { error: 'TASK_NOT_ACCEPTING_MESSAGES' };
const SAME: Outcome = { same: true };
const to = (status: TaskStatus): Outcome => ({ to: status });

/** The task state machine, written out cell by cell, independently of the source. */
const EXPECTED: Record<TaskStatus, Record<TaskOperation, Outcome>> = {
  queued: {
    cancel: to('cancelled'),
    message: SAME,
    claim: to('running'),
    progress: NOT_RUNNING,
    input_request: NOT_RUNNING,
    complete: NOT_RUNNING,
    fail: NOT_RUNNING,
    retry: NOT_RUNNING,
    release: NOT_RUNNING,
    lease_expired: NOT_RUNNING,
    timeout: NOT_RUNNING,
  },
  running: {
    cancel: to('cancelled'),
    message: SAME,
    // A running task waiting for a worker again after the user's reply is claimed without a change of status.
    claim: SAME,
    progress: SAME,
    input_request: to('awaiting_input'),
    complete: to('completed'),
    fail: to('failed'),
    retry: to('queued'),
    // A worker shutting down hands the task back unfinished.
    release: to('queued'),
    lease_expired: to('queued'),
    timeout: to('failed'),
  },
  awaiting_input: {
    cancel: to('cancelled'),
    message: to('running'),
    claim: NOT_RUNNING,
    progress: NOT_RUNNING,
    input_request: NOT_RUNNING,
    complete: NOT_RUNNING,
    fail: NOT_RUNNING,
    retry: NOT_RUNNING,
    release: NOT_RUNNING,
    lease_expired: NOT_RUNNING,
    timeout: NOT_RUNNING,
  },
  completed: {
    cancel: NOT_CANCELLABLE,
    message: NO_MESSAGES,
    claim: NOT_RUNNING,
    progress: NOT_RUNNING,
    input_request: NOT_RUNNING,
    complete: NOT_RUNNING,
    fail: NOT_RUNNING,
    retry: NOT_RUNNING,
    release: NOT_RUNNING,
    lease_expired: NOT_RUNNING,
    timeout: NOT_RUNNING,
  },
  failed: {
    cancel: NOT_CANCELLABLE,
    message: NO_MESSAGES,
    claim: NOT_RUNNING,
    progress: NOT_RUNNING,
    input_request: NOT_RUNNING,
    complete: NOT_RUNNING,
    fail: NOT_RUNNING,
    retry: NOT_RUNNING,
    release: NOT_RUNNING,
    lease_expired: NOT_RUNNING,
    timeout: NOT_RUNNING,
  },
  cancelled: {
    // Cancelling again is idempotent; a heartbeat learns the task was cancelled.
    cancel: SAME,
    message: NO_MESSAGES,
    claim: NOT_RUNNING,
    progress: SAME,
    input_request: NOT_RUNNING,
    complete: NOT_RUNNING,
    fail: NOT_RUNNING,
    retry: NOT_RUNNING,
    release: NOT_RUNNING,
    lease_expired: NOT_RUNNING,
    timeout: NOT_RUNNING,
  },
};

const CELLS = TASK_STATUSES.flatMap((status) => TASK_OPERATIONS.map((operation) => ({ status, operation })));
const WORKER_OPS: TaskOperation[] = ['progress', 'input_request', 'complete', 'fail', 'release'];
const SWEEPER_OPS: TaskOperation[] = ['claim', 'retry', 'lease_expired', 'timeout'];

describe('task state table', () => {
  it('covers exactly the six statuses and eleven operations', () => {
    expect([...TASK_STATUSES].sort()).toEqual(
      ['awaiting_input', 'cancelled', 'completed', 'failed', 'queued', 'running'].sort(),
    );
    expect(Object.keys(TRANSITIONS).sort()).toEqual([...TASK_STATUSES].sort());
    for (const status of TASK_STATUSES) {
      expect(Object.keys(TRANSITIONS[status]).sort()).toEqual([...TASK_OPERATIONS].sort());
      expect(Object.keys(EXPECTED[status]).sort()).toEqual([...TASK_OPERATIONS].sort());
    }
    expect(CELLS).toHaveLength(66);
  });

  it.each(CELLS)('$status × $operation has the outcome of the contract', ({ status, operation }) => {
    expect(outcomeOf(status, operation)).toEqual(EXPECTED[status][operation]);
  });

  it('every outcome is exactly one of: a move to a known status, same, or a known error', () => {
    const errors = new Set(['TASK_NOT_RUNNING', 'TASK_NOT_CANCELLABLE', 'TASK_NOT_ACCEPTING_MESSAGES']);
    for (const { status, operation } of CELLS) {
      const outcome = outcomeOf(status, operation);
      const keys = Object.keys(outcome);
      expect(keys).toHaveLength(1);
      if ('to' in outcome) {
        expect(TASK_STATUSES).toContain(outcome.to);
        expect(outcome.to).not.toBe(status);
      } else if ('error' in outcome) expect(errors.has(outcome.error)).toBe(true);
      else expect(outcome).toEqual({ same: true });
    }
  });

  it('finished states refuse every worker and sweeper operation except a heartbeat on a cancelled task', () => {
    for (const status of ['completed', 'failed', 'cancelled'] as const) {
      for (const operation of [...WORKER_OPS, ...SWEEPER_OPS]) {
        if (status === 'cancelled' && operation === 'progress') continue;
        expect(outcomeOf(status, operation), `${status} × ${operation}`).toEqual(NOT_RUNNING);
      }
    }
    expect(outcomeOf('cancelled', 'progress')).toEqual(SAME);
  });

  it('worker reports are accepted only while running', () => {
    for (const status of ['queued', 'awaiting_input'] as const) {
      for (const operation of WORKER_OPS) expect(outcomeOf(status, operation)).toEqual(NOT_RUNNING);
    }
    for (const operation of WORKER_OPS) expect(outcomeOf('running', operation)).not.toHaveProperty('error');
  });

  it('cancel: open states move to cancelled, completed and failed are not cancellable, cancelled is idempotent', () => {
    for (const status of OPEN_STATUSES) expect(outcomeOf(status, 'cancel')).toEqual(to('cancelled'));
    expect(outcomeOf('completed', 'cancel')).toEqual(NOT_CANCELLABLE);
    expect(outcomeOf('failed', 'cancel')).toEqual(NOT_CANCELLABLE);
    expect(outcomeOf('cancelled', 'cancel')).toEqual(SAME);
  });

  it('message: awaiting_input resumes, queued and running keep their status, finished states refuse', () => {
    expect(outcomeOf('awaiting_input', 'message')).toEqual(to('running'));
    expect(outcomeOf('queued', 'message')).toEqual(SAME);
    expect(outcomeOf('running', 'message')).toEqual(SAME);
    for (const status of FINAL_STATUSES) expect(outcomeOf(status, 'message')).toEqual(NO_MESSAGES);
  });

  it('no operation leaves a finished state, and only claim leaves queued for running', () => {
    for (const status of FINAL_STATUSES) {
      for (const operation of TASK_OPERATIONS) expect(outcomeOf(status, operation)).not.toHaveProperty('to');
    }
    const fromQueued = TASK_OPERATIONS.filter((op) => 'to' in outcomeOf('queued', op));
    expect(fromQueued.sort()).toEqual(['cancel', 'claim']);
  });

  it('open and final statuses partition the statuses', () => {
    expect([...FINAL_STATUSES].sort()).toEqual(['cancelled', 'completed', 'failed']);
    expect([...OPEN_STATUSES].sort()).toEqual(['awaiting_input', 'queued', 'running']);
    expect([...FINAL_STATUSES, ...OPEN_STATUSES].sort()).toEqual([...TASK_STATUSES].sort());
  });

  it('any sequence of allowed operations from queued ends in a known status and never leaves a final one', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...TASK_OPERATIONS), { maxLength: 30 }), (ops) => {
        let status: TaskStatus = 'queued';
        for (const op of ops) {
          const outcome = outcomeOf(status, op);
          const wasFinal = FINAL_STATUSES.has(status);
          if ('to' in outcome) status = outcome.to;
          if (wasFinal && !FINAL_STATUSES.has(status)) return false;
        }
        return TASK_STATUSES.includes(status);
      }),
    );
  });
});

/** The same JSON value with the keys of every object in another order. */
function reorderKeys(value: unknown, seed: number): unknown {
  if (Array.isArray(value)) return value.map((v) => reorderKeys(v, seed));
  if (value && typeof value === 'object') {
    const entries = Object.entries(value);
    const rotated = entries.length ? (seed % entries.length) + 1 : 0;
    const reordered = [...entries.slice(rotated), ...entries.slice(0, rotated)].reverse();
    return Object.fromEntries(reordered.map(([k, v]) => [k, reorderKeys(v, seed)]));
  }
  return value;
}

/** JSON values as they arrive in a request body (JSON.parse normalises -0 to 0). */
const jsonBody = fc.jsonValue().map((v) => JSON.parse(JSON.stringify(v)) as unknown);
const jsonObject = fc
  .dictionary(fc.string(), fc.jsonValue())
  .map((v) => JSON.parse(JSON.stringify(v)) as Record<string, unknown>);

describe('canonicalJson and requestHash', () => {
  const agent = '0190b7a2-0000-7000-8000-000000000001';

  it('sorts keys at every depth and drops undefined members', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[2,{"y":2,"z":1}]},"b":1}',
    );
    expect(canonicalJson({ a: undefined, b: 'x' })).toBe('{"b":"x"}');
    expect(canonicalJson([3, 'a', true, null])).toBe('[3,"a",true,null]');
  });

  it('the canonical text parses back to the same value', () => {
    fc.assert(fc.property(jsonBody, (value) => isDeepStrictEqual(JSON.parse(canonicalJson(value)), value)));
  });

  it('key order does not change the canonical text or the hash', () => {
    fc.assert(
      fc.property(jsonObject, fc.nat(), (body, seed) => {
        const reordered = reorderKeys(body, seed);
        return (
          canonicalJson(reordered) === canonicalJson(body) && requestHash(agent, reordered) === requestHash(agent, body)
        );
      }),
    );
  });

  it('different bodies give different hashes', () => {
    fc.assert(
      fc.property(jsonObject, jsonObject, (a, b) => {
        fc.pre(!isDeepStrictEqual(a, b));
        return requestHash(agent, a) !== requestHash(agent, b);
      }),
    );
  });

  it('the same body for another agent gives another hash', () => {
    fc.assert(
      fc.property(jsonObject, fc.uuid(), fc.uuid(), (body, a, b) => {
        fc.pre(a !== b);
        return requestHash(a, body) !== requestHash(b, body);
      }),
    );
  });

  it('a field that changes type or nesting changes the hash', () => {
    const hashes = [
      { message: 'x', priority: 5 },
      { message: 'x', priority: '5' },
      { message: 'x' },
      { message: 'x', metadata: { priority: 5 } },
      { message: 'x', metadata: { a: [1, 2] } },
      { message: 'x', metadata: { a: [2, 1] } },
    ].map((body) => requestHash(agent, body));
    expect(new Set(hashes).size).toBe(hashes.length);
    expect(hashes.every((h) => /^[0-9a-f]{64}$/.test(h))).toBe(true);
  });
});

describe('estimateStart', () => {
  const now = 1_800_000_000_000;
  const avgRunMs = 60_000;

  it.each([
    { name: 'an idle worker starts it now', ahead: 0, free: 1, concurrency: 1, expected: now },
    { name: 'a free slot behind others still fits', ahead: 3, free: 4, concurrency: 10, expected: now },
    { name: 'no free slot and nothing ahead: one run', ahead: 0, free: 0, concurrency: 1, expected: now + avgRunMs },
    { name: 'slots full, one wave ahead', ahead: 5, free: 0, concurrency: 10, expected: now + avgRunMs },
    { name: 'exactly one full wave ahead', ahead: 10, free: 0, concurrency: 10, expected: now + 2 * avgRunMs },
    { name: 'concurrency 1, three ahead', ahead: 3, free: 0, concurrency: 1, expected: now + 4 * avgRunMs },
    { name: 'free slots absorb part of the queue', ahead: 12, free: 2, concurrency: 10, expected: now + 2 * avgRunMs },
    { name: 'ahead equals free: next wave', ahead: 2, free: 2, concurrency: 2, expected: now + avgRunMs },
    { name: 'over-held (negative free) counts as none', ahead: 1, free: -3, concurrency: 2, expected: now + avgRunMs },
  ])('$name', ({ ahead, free, concurrency, expected }) => {
    expect(estimateStart({ now, ahead, free, concurrency, avgRunMs })).toBe(expected);
  });

  it('is never before now and never decreases as the queue grows', () => {
    fc.assert(
      fc.property(
        fc.nat(10_000),
        fc.integer({ min: -5, max: 1000 }),
        fc.integer({ min: 1, max: 1000 }),
        fc.nat(3_600_000),
        (ahead, free, concurrency, run) => {
          const at = (n: number) => estimateStart({ now, ahead: n, free, concurrency, avgRunMs: run });
          return at(ahead) >= now && at(ahead + 1) >= at(ahead);
        },
      ),
    );
  });
});
