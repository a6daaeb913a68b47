import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callbackSpan,
  inputWaitSpan,
  runSpan,
  type TaskTrace,
  taskSpan,
  webhookSpan,
} from '../../../src/modules/telemetry/service-spans-fns.js';
import {
  deriveSpanId,
  deriveTraceId,
  formatTraceparent,
  newSpanId,
  newTraceId,
  parseTraceparent,
} from '../../../src/modules/telemetry/trace-context-fns.js';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser } from '../../helpers/factories.js';
import { ingestToken, postOtlpJson, tracesRequest } from './helpers.js';

describe('traceparent', () => {
  const trace = '4bf92f3577b34da6a3ce929d0e0e4736';
  const span = '00f067aa0ba902b7';

  it('reads valid headers and ignores invalid ones', () => {
    expect(parseTraceparent(`00-${trace}-${span}-01`)).toEqual({ traceId: trace, spanId: span, sampled: true });
    expect(parseTraceparent(`00-${trace.toUpperCase()}-${span}-00`)).toEqual({
      traceId: trace,
      spanId: span,
      sampled: false,
    });
    expect(parseTraceparent(`01-${trace}-${span}-01-extra`)).toMatchObject({ traceId: trace });
    for (const bad of [
      undefined,
      ['a', 'b'],
      '',
      `ff-${trace}-${span}-01`,
      `00-${trace}-${span}-01-extra`,
      `00-${'0'.repeat(32)}-${span}-01`,
      `00-${trace}-${'0'.repeat(16)}-01`,
      `00-${trace.slice(1)}-${span}-01`,
      `00-${trace}-${span}-1`,
      `0-${trace}-${span}-01`,
      `00-${trace}-${span.replace('0', 'g')}-01`,
    ]) {
      expect(parseTraceparent(bad as string)).toBeNull();
    }
  });

  it('round-trips every id it generates', () => {
    fc.assert(
      fc.property(fc.constant(null), () => {
        const t = newTraceId();
        const s = newSpanId();
        expect(parseTraceparent(formatTraceparent(t, s))).toEqual({ traceId: t, spanId: s, sampled: true });
      }),
      { numRuns: 200 },
    );
  });

  it('derives the same ids from the same names, different ones otherwise', () => {
    const task = randomUUID();
    expect(deriveSpanId('task', task)).toBe(deriveSpanId('task', task));
    expect(deriveSpanId('task', task)).not.toBe(deriveSpanId('run', task));
    expect(deriveSpanId('task', task)).toMatch(/^[0-9a-f]{16}$/);
    expect(deriveTraceId(task)).toMatch(/^[0-9a-f]{32}$/);
    expect(deriveTraceId(task)).not.toBe(deriveTraceId(randomUUID()));
  });
});

describe.each(DATABASES)("the service's own spans ($name)", (db) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp(db);
  });
  afterAll(() => t.close());

  it('are stored in the owner telemetry as one trace, and ingest cannot replace them', async () => {
    const user = await createUser(t);
    const taskUuid = randomUUID();
    const now = Date.now() - 10_000;
    const deliverySpan = newSpanId();
    const trace: TaskTrace = {
      traceId: newTraceId(),
      taskSpanId: deriveSpanId('task', taskUuid),
      parentSpanId: deliverySpan,
    };
    const runId = deriveSpanId('run', 'lease-1');
    const spans = [
      webhookSpan({
        traceId: trace.traceId,
        spanId: deliverySpan,
        parentSpanId: null,
        triggerUuid: 'trg',
        triggerName: 'github',
        deliveryId: 'd-1',
        taskUuid,
        receivedAtMs: now,
        answeredAtMs: now + 5,
      }),
      runSpan(trace, {
        taskUuid,
        spanId: runId,
        attempt: 1,
        leaseId: 'lease-1',
        outcome: 'failed',
        errorMessage: 'model down',
        claimedAtMs: now + 10,
        endedAtMs: now + 500,
      }),
      inputWaitSpan(trace, { taskUuid, spanId: newSpanId(), startMs: now + 600, endMs: now + 700 }),
      callbackSpan(trace, {
        taskUuid,
        spanId: newSpanId(),
        eventType: 'task.completed',
        url: 'https://example.test/cb',
        deliveryId: 'msg_1',
        attempt: 1,
        statusCode: 200,
        startMs: now + 900,
        endMs: now + 950,
      }),
      taskSpan(trace, {
        uuid: taskUuid,
        agentUuid: 'agent-uuid',
        agentName: 'reviewer',
        status: 'completed',
        triggerUuid: 'trg',
        createdAtMs: now + 4,
        endedAtMs: now + 800,
      }),
    ];
    await t.app.telemetry.service.recordServiceSpans(user.uuid, spans);

    const got = (await call(t.app, 'GET', `/telemetry/fetch_trace/${trace.traceId}`, { token: user.token })).json();
    expect(got.spans.map((s: { name: string }) => s.name)).toEqual([
      'webhook github',
      'task reviewer',
      'task.run',
      'task.awaiting_input',
      'callback task.completed',
    ]);
    const byName = Object.fromEntries(got.spans.map((s: { name: string }) => [s.name, s]));
    expect(byName['task reviewer']).toMatchObject({
      parent_span_id: deliverySpan,
      kind: 'internal',
      status_code: 'ok',
      service_name: 'taskhook',
      operation_name: 'invoke_agent',
      agent_id: 'agent-uuid',
      task_id: taskUuid,
      duration_ms: 796,
      attributes: { 'taskhook.task.status': 'completed', 'taskhook.trigger_uuid': 'trg' },
    });
    expect(byName['task.run']).toMatchObject({
      parent_span_id: trace.taskSpanId,
      status_code: 'error',
      status_message: 'model down',
      attributes: { 'taskhook.attempt': 1, 'taskhook.outcome': 'failed', 'taskhook.lease_id': 'lease-1' },
    });
    expect(byName['task.run'].attributes).not.toHaveProperty('taskhook.worker_id');
    expect(byName['callback task.completed']).toMatchObject({
      kind: 'client',
      status_code: 'unset',
      attributes: { 'http.response.status_code': 200, 'url.full': 'https://example.test/cb' },
    });
    expect(byName['webhook github']).toMatchObject({ kind: 'server', parent_span_id: null });

    // A worker joins under the run span with its own spans; a span re-using the service's ids is refused.
    const token = await ingestToken(t, user);
    const workerSpan = {
      traceId: trace.traceId,
      spanId: newSpanId(),
      parentSpanId: runId,
      name: 'worker step',
      startTimeUnixNano: `${now + 20}000000`,
      endTimeUnixNano: `${now + 30}000000`,
      attributes: [{ key: 'gen_ai.usage.input_tokens', value: { intValue: 12 } }],
    };
    const forged = { ...workerSpan, spanId: runId, parentSpanId: '', name: 'forged' };
    const res = await postOtlpJson(t, 'traces', token, tracesRequest([workerSpan, forged], 'worker'));
    expect(res.json()).toEqual({
      partialSuccess: { rejectedSpans: 1, errorMessage: expect.stringContaining('taskhook') },
    });
    const after = (await call(t.app, 'GET', `/telemetry/fetch_trace/${trace.traceId}`, { token: user.token })).json();
    expect(after.spans.map((s: { name: string }) => s.name)).toContain('worker step');
    expect(after.spans.map((s: { name: string }) => s.name)).not.toContain('forged');
    const usage = (await call(t.app, 'GET', '/telemetry/fetch_usage?group_by=agent', { token: user.token })).json();
    expect(usage.groups).toEqual([expect.objectContaining({ agent_id: 'agent-uuid', input_tokens: 12 })]);
  });
});
