import { AsyncLocalStorage } from 'node:async_hooks';
import { type Context, type ContextManager, context, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { runWorker, TaskhookClient } from '@taskhook/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTraceparent } from '../../src/modules/telemetry/trace-context-fns.js';
import { call, type TestApp } from '../helpers/app.js';
import { DATABASES } from '../helpers/databases.js';
import { createAgent, createUser } from '../helpers/factories.js';
import { hexId, ingestToken, postOtlpJson, tracesRequest } from '../modules/telemetry/helpers.js';
import { listeningApp } from './support.js';

describe.each(DATABASES)("the SDK worker's spans join the task's trace ($name)", (database) => {
  let t: TestApp;
  let baseUrl: string;
  beforeAll(async () => {
    ({ t, baseUrl } = await listeningApp(database));
  });
  afterAll(() => t.close());

  it('hands the handler the traceparent of its run', async () => {
    const user = await createUser(t);
    const agentId = (await createAgent(t, user, { name: 'traced' })).uuid;
    const token = await ingestToken(t, user);
    const client = new TaskhookClient({ baseUrl, apiKey: user.key });
    const { task_id } = await client.submit(agentId, { message: 'go' });
    let given = '';
    const worker = runWorker({
      baseUrl,
      apiKey: user.key,
      agentId,
      waitSeconds: 1,
      handleSignals: false,
      log: () => {},
      async handler(task, ctx) {
        given = ctx.traceparent;
        expect(ctx.traceparent).toBe(task.traceparent);
        // What an OpenTelemetry-instrumented handler exports: a span whose parent is the run.
        const parent = parseTraceparent(ctx.traceparent);
        const nowNs = BigInt(Date.now()) * 1_000_000n;
        const span = {
          traceId: parent?.traceId,
          spanId: hexId(8),
          parentSpanId: parent?.spanId,
          name: 'worker step',
          kind: 1,
          startTimeUnixNano: String(nowNs),
          endTimeUnixNano: String(nowNs + 1_000_000n),
        };
        expect((await postOtlpJson(t, 'traces', token, tracesRequest([span], 'my-agent'))).statusCode).toBe(200);
        return { summary: 'done' };
      },
    });
    try {
      await client.waitFor(agentId, task_id, { intervalMs: 50, timeoutMs: 20_000 });
    } finally {
      await worker.stop();
    }

    const parent = parseTraceparent(given);
    await t.app.telemetry.tracer.flush();
    const res = await call(t.app, 'GET', `/telemetry/fetch_trace/${parent?.traceId}`, { token: user.token });
    const spans = res.json().spans as Array<{ name: string; span_id: string; parent_span_id: string | null }>;
    expect(spans.map((s) => s.name)).toEqual(['task traced', 'task.run', 'worker step']);
    const [task, run, step] = spans;
    expect(run).toMatchObject({ span_id: parent?.spanId, parent_span_id: task?.span_id });
    expect(step?.parent_span_id).toBe(run?.span_id);
  });
});

/** The smallest OpenTelemetry context manager over AsyncLocalStorage (what an OTel Node SDK registers). */
function asyncContextManager(): ContextManager {
  const storage = new AsyncLocalStorage<Context>();
  return {
    active: () => storage.getStore() ?? ROOT_CONTEXT,
    with: (ctx, fn, thisArg, ...args) => storage.run(ctx, () => fn.apply(thisArg, args)),
    bind: (_ctx, target) => target,
    enable() {
      return this;
    },
    disable() {
      return this;
    },
  };
}

describe.each(DATABASES)('a worker that uses OpenTelemetry joins the trace with no code ($name)', (database) => {
  let t: TestApp;
  let baseUrl: string;
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  beforeAll(async () => {
    ({ t, baseUrl } = await listeningApp(database));
    context.setGlobalContextManager(asyncContextManager());
    trace.setGlobalTracerProvider(provider);
  });
  afterAll(async () => {
    trace.disable();
    context.disable();
    await provider.shutdown();
    await t.close();
  });

  it("makes the run's span the parent of the handler's spans", async () => {
    const user = await createUser(t);
    const agentId = (await createAgent(t, user, { name: 'otel' })).uuid;
    const client = new TaskhookClient({ baseUrl, apiKey: user.key });
    const { task_id } = await client.submit(agentId, { message: 'go' });
    let given = '';
    const worker = runWorker({
      baseUrl,
      apiKey: user.key,
      agentId,
      waitSeconds: 1,
      handleSignals: false,
      log: () => {},
      async handler(_task, ctx) {
        given = ctx.traceparent;
        // Plain OpenTelemetry code, nothing of taskhook's: a span started where the handler runs.
        await trace.getTracer('my-agent').startActiveSpan('review step', async (span) => {
          await new Promise((r) => setTimeout(r, 5));
          span.end();
        });
        return { summary: 'done' };
      },
    });
    try {
      await client.waitFor(agentId, task_id, { intervalMs: 50, timeoutMs: 20_000 });
    } finally {
      await worker.stop();
    }
    const run = parseTraceparent(given);
    const [step] = exporter.getFinishedSpans().filter((s) => s.name === 'review step');
    expect(step?.spanContext().traceId).toBe(run?.traceId);
    expect(step?.parentSpanContext?.spanId).toBe(run?.spanId);
  });
});
