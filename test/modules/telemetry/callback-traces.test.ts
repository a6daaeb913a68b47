import { describe, expect, it } from 'vitest';
import { parseTraceparent } from '../../../src/modules/telemetry/trace-context-fns.js';
import { call } from '../../helpers/app.js';
import { answering, useCallbackApp } from '../../helpers/callbacks.js';
import { DATABASES } from '../../helpers/databases.js';

const CONFIG = { allowPrivateUrls: true, callbackRetrySchedule: [0.2, 0.2], callbackTimeoutMs: 1_000 };

describe.each(DATABASES)('callback attempts in the task trace ($name)', (database) => {
  const h = useCallbackApp(database, CONFIG);

  it("records a span per attempt and sends it as the receiver's traceparent", async () => {
    const r = await h.receiver(answering(500, 200));
    const { user, agent, taskId } = await h.webhookTask(r.url);
    await h.cancel(user, agent, taskId);
    const [delivery] = await h.settled(user, agent, taskId);
    expect(delivery?.attempts.map((a) => a.status_code)).toEqual([500, 200]);

    const sent = r.requests.map((req) => parseTraceparent(req.headers.traceparent));
    expect(sent.every((ctx) => ctx !== null)).toBe(true);
    const [first, second] = sent as [NonNullable<(typeof sent)[0]>, NonNullable<(typeof sent)[0]>];
    expect(second.traceId).toBe(first.traceId);
    expect(second.spanId).not.toBe(first.spanId);

    await h.t.app.telemetry.tracer.flush();
    const res = await call(h.t.app, 'GET', `/telemetry/fetch_trace/${first.traceId}`, { token: user.token });
    expect(res.statusCode).toBe(200);
    const spans = res.json().spans as Array<{
      name: string;
      span_id: string;
      parent_span_id: string | null;
      status_code: string;
      attributes: Record<string, unknown>;
    }>;
    const task = spans.find((s) => s.name.startsWith('task '));
    expect(task).toMatchObject({ parent_span_id: null, attributes: { 'taskhook.task.status': 'cancelled' } });
    const callbacks = spans.filter((s) => s.name === 'callback task.cancelled');
    expect(callbacks.map((s) => [s.span_id, s.parent_span_id, s.status_code])).toEqual([
      [first.spanId, task?.span_id, 'error'],
      [second.spanId, task?.span_id, 'unset'],
    ]);
    expect(callbacks[0]?.attributes).toMatchObject({
      'http.response.status_code': 500,
      'taskhook.callback.attempt': 1,
      'taskhook.delivery_id': delivery?.delivery_id,
      'url.full': r.url,
    });
  });
});
