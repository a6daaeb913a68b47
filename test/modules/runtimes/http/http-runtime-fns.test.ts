import { describe, expect, it } from 'vitest';
import {
  outcomeOfAnswer,
  reportUrls,
  taskCancelledBody,
  taskRunBody,
} from '../../../../src/modules/runtimes/http/http-runtime-fns.js';

const answer = (status: number, body: unknown, retryAfterMs: number | null = null) =>
  outcomeOfAnswer({
    status,
    body: typeof body === 'string' ? body : JSON.stringify(body),
    retryAfterMs,
    leaseSeconds: 90,
  });
const invalid = { kind: 'failed', code: 'INVALID_AGENT_RESPONSE', retryable: false, retryAfterMs: null };

describe('what an http agent’s answer means', () => {
  it.each([
    ['a result', 200, { result: { summary: 's' } }, { kind: 'completed', result: { summary: 's', findings: [] } }],
    [
      'a result with findings and more fields',
      200,
      { result: { summary: 's', findings: [{ file: 'f', line: 2, severity: 'high', message: 'm' }], score: 3 } },
      {
        kind: 'completed',
        result: { summary: 's', findings: [{ file: 'f', line: 2, severity: 'high', message: 'm' }], score: 3 },
      },
    ],
    ['a question', 200, { input_request: { message: 'Which?' } }, { kind: 'input_request', message: 'Which?' }],
    [
      'an error without code',
      200,
      { error: { message: 'no' } },
      { kind: 'failed', code: 'AGENT_ERROR', message: 'no', retryable: false, retryAfterMs: null },
    ],
    [
      'a retryable error with a code',
      200,
      { error: { code: 'BUSY', message: 'later' }, retryable: true },
      { kind: 'failed', code: 'BUSY', message: 'later', retryable: true, retryAfterMs: null },
    ],
    ['202 with any body', 202, 'whatever', { kind: 'accepted', leaseSeconds: 90 }],
    [
      '503 with Retry-After',
      503,
      '',
      {
        kind: 'failed',
        code: 'DELIVERY_FAILED',
        message: 'The agent answered HTTP 503',
        retryable: true,
        retryAfterMs: 5000,
      },
    ],
    ['a redirect', 302, '', { kind: 'failed', code: 'DELIVERY_FAILED', retryable: true }],
    ['404', 404, '', { kind: 'failed', code: 'DELIVERY_FAILED', retryable: true }],
  ])('%s', (_name, status, body, expected) => {
    expect(answer(status, body, status === 503 ? 5000 : null)).toMatchObject(expected);
  });

  it.each([
    ['201', 201, { result: { summary: 's' } }],
    ['204', 204, ''],
    ['not JSON', 200, 'ok'],
    ['an array', 200, [1]],
    ['null', 200, 'null'],
    ['none of the shapes', 200, { answer: 42 }],
    ['a result without summary', 200, { result: { findings: [] } }],
    ['a result that is a string', 200, { result: 'done' }],
    ['a finding with a fractional line', 200, { result: { summary: 's', findings: [{ file: 'f', line: 1.5 }] } }],
    ['a result with a field beside it', 200, { result: { summary: 's' }, extra: 1 }],
    ['an empty question', 200, { input_request: { message: '' } }],
    ['a question that is a string', 200, { input_request: 'Which?' }],
    ['a question with more fields', 200, { input_request: { message: 'a', x: 1 } }],
    ['an error without message', 200, { error: { code: 'X' } }],
    ['an error with a lower-case code', 200, { error: { code: 'bad', message: 'm' } }],
    ['a retryable that is a string', 200, { error: { message: 'm' }, retryable: 'yes' }],
  ])('refuses %s as INVALID_AGENT_RESPONSE', (_name, status, body) => {
    expect(answer(status, body)).toMatchObject(invalid);
  });
});

describe('the webhooks an http agent receives', () => {
  const item = {
    task_id: 't1',
    lease_id: 'l1',
    message: 'm',
    messages: [{ role: 'user' as const, content: 'm', created_at: '2026-01-01T00:00:00.000Z' }],
    priority: 5,
    metadata: {},
    concurrency_key: null,
    attempt: 1,
    lease_expires_at: '2026-01-01T00:01:00.000Z',
    timeout_at: '2026-01-01T01:00:00.000Z',
    traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  };

  it('task.run carries the claim item, its agent and absolute report URLs (a trailing slash of the base dropped)', () => {
    const body = JSON.parse(taskRunBody(item, 'a1', 'https://th.example/', '2026-01-01T00:00:00.000Z'));
    expect(body).toEqual({
      type: 'task.run',
      timestamp: '2026-01-01T00:00:00.000Z',
      data: { ...item, agent_uuid: 'a1', urls: reportUrls('https://th.example', 'a1', 't1') },
    });
    expect(body.data.urls).toEqual({
      task: 'https://th.example/agent/a1/task/t1',
      progress: 'https://th.example/agent/a1/task/t1/progress',
      input_request: 'https://th.example/agent/a1/task/t1/input_request',
      complete: 'https://th.example/agent/a1/task/t1/complete',
      fail: 'https://th.example/agent/a1/task/t1/fail',
    });
  });

  it('task.cancelled names the task, its agent and the lease', () => {
    expect(JSON.parse(taskCancelledBody('t1', 'a1', 'l1', '2026-01-01T00:00:00.000Z'))).toEqual({
      type: 'task.cancelled',
      timestamp: '2026-01-01T00:00:00.000Z',
      data: { task_id: 't1', agent_uuid: 'a1', lease_id: 'l1' },
    });
  });
});
