import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTraceparent } from '../../../src/modules/telemetry/trace-context-fns.js';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { claimOne, report, reportBody, submitTask, workerHeaders } from '../../helpers/tasks.js';
import { createTrigger, deliver } from '../../helpers/triggers.js';
import { hexId } from './helpers.js';

interface FetchedSpan {
  name: string;
  span_id: string;
  parent_span_id: string | null;
  status_code: string;
  attributes: Record<string, unknown>;
}

describe.each(DATABASES)('every task traced end to end ($name)', (db) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp(db);
  });
  afterAll(() => t.close());

  async function traceOf(user: TestUser, traceId: string): Promise<FetchedSpan[]> {
    await t.app.telemetry.tracer.flush();
    const res = await call(t.app, 'GET', `/telemetry/fetch_trace/${traceId}`, { token: user.token });
    expect(res.statusCode).toBe(200);
    return res.json().spans;
  }

  it("joins the caller's trace: the task span under the caller's span, the run under the task", async () => {
    const user = await createUser(t);
    const agent = await createAgent(t, user, { name: 'reviewer' });
    const callerTrace = hexId(16);
    const callerSpan = hexId(8);
    const submitted = await submitTask(t, user, agent.uuid, {}, { traceparent: `00-${callerTrace}-${callerSpan}-01` });
    const claimed = await claimOne(t, user, agent.uuid, { worker_id: 'w-1' });
    const parent = parseTraceparent(claimed.traceparent);
    expect(parent?.traceId).toBe(callerTrace);
    const done = await report(
      t,
      user,
      agent.uuid,
      submitted.task_id,
      'complete',
      reportBody('complete', claimed.lease_id),
    );
    expect(done.statusCode).toBe(200);

    const spans = await traceOf(user, callerTrace);
    expect(spans.map((s) => s.name)).toEqual(['task reviewer', 'task.run']);
    const [task, run] = spans as [FetchedSpan, FetchedSpan];
    expect(task).toMatchObject({ parent_span_id: callerSpan, status_code: 'ok' });
    expect(task.attributes).toMatchObject({
      'taskhook.task_id': submitted.task_id,
      'taskhook.task.status': 'completed',
    });
    // The run span is the parent the claim handed out, so the worker's own spans hang under it.
    expect(run).toMatchObject({ span_id: parent?.spanId, parent_span_id: task.span_id });
    expect(run.attributes).toMatchObject({
      'taskhook.outcome': 'completed',
      'taskhook.worker_id': 'w-1',
      'taskhook.lease_id': claimed.lease_id,
      'taskhook.attempt': 1,
    });
  });

  it('starts a trace of its own without a (valid) traceparent, and traces a wait for input', async () => {
    const user = await createUser(t);
    const agent = await createAgent(t, user, { name: 'asker' });
    const submitted = await submitTask(t, user, agent.uuid, {}, { traceparent: 'garbage' });
    const first = await claimOne(t, user, agent.uuid);
    const traceId = parseTraceparent(first.traceparent)?.traceId as string;
    const asked = await report(t, user, agent.uuid, submitted.task_id, 'input_request', {
      lease_id: first.lease_id,
      message: 'Which branch?',
    });
    expect(asked.statusCode).toBe(200);
    const answered = await call(t.app, 'POST', `/agent/${agent.uuid}/task/${submitted.task_id}/message`, {
      headers: workerHeaders(user),
      body: { message: 'main' },
    });
    expect(answered.statusCode).toBe(200);
    const second = await claimOne(t, user, agent.uuid);
    expect(parseTraceparent(second.traceparent)?.traceId).toBe(traceId);
    expect(second.traceparent).not.toBe(first.traceparent);
    const failed = await report(t, user, agent.uuid, submitted.task_id, 'fail', {
      lease_id: second.lease_id,
      error: { message: 'no such branch' },
      retryable: false,
    });
    expect(failed.statusCode).toBe(200);

    const spans = await traceOf(user, traceId);
    const task = spans.find((s) => s.name === 'task asker') as FetchedSpan;
    expect(task).toMatchObject({ parent_span_id: null, status_code: 'error' });
    const children = spans.filter((s) => s.parent_span_id === task.span_id);
    expect(children.map((s) => [s.name, s.attributes['taskhook.outcome'] ?? null])).toEqual([
      ['task.run', 'awaiting_input'],
      ['task.awaiting_input', null],
      ['task.run', 'failed'],
    ]);
  });

  it("starts a webhook-created task's trace at the delivery", async () => {
    const user = await createUser(t);
    const agent = await createAgent(t, user, { name: 'pr-bot' });
    const trigger = await createTrigger(t, user, agent.uuid, { name: 'github' });
    const res = await deliver(t, trigger.uuid, {
      secret: trigger.webhook_secret,
      body: { repository: { name: 'taskhook' } },
    });
    expect(res.statusCode).toBe(202);
    const claimed = await claimOne(t, user, agent.uuid);
    const traceId = parseTraceparent(claimed.traceparent)?.traceId as string;
    await report(t, user, agent.uuid, claimed.task_id, 'complete', reportBody('complete', claimed.lease_id));

    const spans = await traceOf(user, traceId);
    expect(spans.map((s) => s.name)).toEqual(['webhook github', 'task pr-bot', 'task.run']);
    const [webhook, task] = spans as [FetchedSpan, FetchedSpan];
    expect(webhook).toMatchObject({ parent_span_id: null });
    expect(webhook.attributes).toMatchObject({
      'taskhook.trigger_uuid': trigger.uuid,
      'taskhook.delivery_id': res.json().delivery_id,
      'taskhook.task_id': claimed.task_id,
    });
    expect(task).toMatchObject({ parent_span_id: webhook.span_id });
    expect(task.attributes).toMatchObject({ 'taskhook.trigger_uuid': trigger.uuid });
  });
});

describe.each(DATABASES)('spans of the last moments before shutdown ($name)', (db) => {
  it('are written before the database closes: closing the app flushes them first', async () => {
    const a = await buildTestApp(db);
    let b: TestApp | undefined;
    try {
      const user = await createUser(a);
      const agent = await createAgent(a, user, { name: 'closing' });
      const traceId = hexId(16);
      const submitted = await submitTask(a, user, agent.uuid, {}, { traceparent: `00-${traceId}-${hexId(8)}-01` });
      const claimed = await claimOne(a, user, agent.uuid, { worker_id: 'w-1' });
      const done = await report(
        a,
        user,
        agent.uuid,
        submitted.task_id,
        'complete',
        reportBody('complete', claimed.lease_id),
      );
      expect(done.statusCode).toBe(200);
      // No flush: the spans of that completion are still queued when the app closes.
      await a.close();
      b = await buildTestApp(db, { config: { dataDir: a.config.dataDir } });
      const res = await call(b.app, 'GET', `/telemetry/fetch_trace/${traceId}`, { token: user.token });
      expect(res.statusCode).toBe(200);
      expect(res.json().spans.map((s: FetchedSpan) => s.name)).toEqual(['task closing', 'task.run']);
    } finally {
      await b?.close();
    }
  });
});
