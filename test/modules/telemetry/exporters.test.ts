import type { AddressInfo } from 'node:net';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { SeverityNumber } from '@opentelemetry/api-logs';
import { ExportResultCode } from '@opentelemetry/core';
import { OTLPLogExporter as HttpLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPLogExporter as ProtoLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPTraceExporter as HttpTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { InMemoryLogRecordExporter, LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser, type TestUser } from '../../helpers/factories.js';
import { ingestToken } from './helpers.js';

type Exporter = {
  export(items: never[], done: (r: { code: number; error?: Error }) => void): void;
  shutdown(): Promise<void>;
};

function exportWith(exporter: Exporter, items: unknown[]) {
  return new Promise<{ code: number; error?: Error }>((resolve) => exporter.export(items as never[], resolve));
}

/** Two spans (parent and a GenAI child) made by the real SDK, with fixed times. */
function makeSpans(service: string) {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': service }),
    spanProcessors: [new SimpleSpanProcessor(memory)],
  });
  const tracer = provider.getTracer('my-agent', '2.1.0');
  const parent = tracer.startSpan('invoke_agent reviewer', {
    kind: SpanKind.INTERNAL,
    startTime: [1795361443, 211333262],
    attributes: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.id': 'agent-1', 'gen_ai.agent.name': 'R' },
  });
  const child = tracer.startSpan(
    'chat gpt-x',
    {
      kind: SpanKind.CLIENT,
      startTime: [1795361443, 311333262],
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'gpt-x',
        'gen_ai.response.model': 'gpt-x-2026',
        'gen_ai.usage.input_tokens': 120,
        'gen_ai.usage.output_tokens': 30,
        'taskhook.task_id': 'task-9',
        'list.attr': ['a', 'b'],
        'float.attr': 1.5,
        'bool.attr': true,
      },
    },
    trace.setSpan(context.active(), parent),
  );
  child.addEvent('retry', { attempt: 2 }, [1795361443, 411333262]);
  child.setStatus({ code: SpanStatusCode.ERROR, message: 'rate limited' });
  child.end([1795361443, 511333262]);
  parent.end([1795361443, 711333262]);
  return { spans: memory.getFinishedSpans(), parent, child };
}

describe.each(DATABASES)('OTLP exporters round-trip ($name)', (db) => {
  let t: TestApp;
  let base: string;
  beforeAll(async () => {
    t = await buildTestApp(db);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/telemetry/ingest_http`;
  });
  afterAll(() => t.close());

  async function userWithToken(): Promise<[TestUser, string]> {
    const user = await createUser(t);
    return [user, await ingestToken(t, user)];
  }

  for (const [label, Trace] of [
    ['http/json', HttpTraceExporter],
    ['http/protobuf', ProtoTraceExporter],
  ] as const) {
    it(`spans sent with the ${label} exporter come back with every field`, async () => {
      const [user, token] = await userWithToken();
      const { spans, parent, child } = makeSpans(`svc-${label}`);
      const exporter = new Trace({ url: `${base}/v1/traces`, headers: { Authorization: token } }) as Exporter;
      const result = await exportWith(exporter, spans);
      await exporter.shutdown();
      expect(result.error).toBeUndefined();
      expect(result.code).toBe(ExportResultCode.SUCCESS);

      const traceId = parent.spanContext().traceId;
      const res = await call(t.app, 'GET', `/telemetry/fetch_trace/${traceId.toUpperCase()}`, { token: user.token });
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body.trace_id).toBe(traceId);
      expect(body.spans.map((s: { name: string }) => s.name)).toEqual(['invoke_agent reviewer', 'chat gpt-x']);
      const [p, c] = body.spans;
      expect(p).toMatchObject({
        span_id: parent.spanContext().spanId,
        parent_span_id: null,
        kind: 'internal',
        start_time_unix_nano: '1795361443211333262',
        end_time_unix_nano: '1795361443711333262',
        start_time: '2026-11-22T15:30:43.211Z',
        duration_ms: 500,
        status_code: 'unset',
        service_name: `svc-${label}`,
        scope_name: 'my-agent',
        scope_version: '2.1.0',
        operation_name: 'invoke_agent',
        agent_id: 'agent-1',
        agent_name: 'R',
        input_tokens: null,
      });
      expect(c).toMatchObject({
        span_id: child.spanContext().spanId,
        parent_span_id: parent.spanContext().spanId,
        kind: 'client',
        status_code: 'error',
        status_message: 'rate limited',
        provider_name: 'openai',
        request_model: 'gpt-x',
        response_model: 'gpt-x-2026',
        input_tokens: 120,
        output_tokens: 30,
        task_id: 'task-9',
        duration_ms: 200,
        attributes: { 'list.attr': ['a', 'b'], 'float.attr': 1.5, 'bool.attr': true, 'gen_ai.usage.input_tokens': 120 },
        events: [
          {
            name: 'retry',
            time_unix_nano: '1795361443411333262',
            time: '2026-11-22T15:30:43.411Z',
            attributes: { attempt: 2 },
          },
        ],
      });
      expect(c.resource_attributes['service.name']).toBe(`svc-${label}`);

      const list = await call(t.app, 'GET', '/telemetry/fetch_traces', { token: user.token });
      expect(list.json().traces).toEqual([
        expect.objectContaining({
          trace_id: traceId,
          root_span_id: parent.spanContext().spanId,
          span_count: 2,
          error_count: 1,
          status: 'error',
          agent_id: 'agent-1',
          task_id: 'task-9',
          input_tokens: 120,
          output_tokens: 30,
        }),
      ]);
    });
  }

  it('takes ingest bodies above the general body limit, up to the telemetry limit', async () => {
    const [user, token] = await userWithToken();
    const name = 'n'.repeat(2 * 1024 * 1024);
    const span = { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), name, startTimeUnixNano: '1795361443211333262' };
    const body = JSON.stringify({
      resourceSpans: [{ scopeSpans: [{ spans: [{ ...span, endTimeUnixNano: span.startTimeUnixNano }] }] }],
    });
    expect(body.length).toBeGreaterThan(t.config.maxBodyBytes);
    const res = await t.app.inject({
      method: 'POST',
      url: '/telemetry/ingest_http/v1/traces',
      headers: { authorization: token, 'content-type': 'application/json' },
      payload: body,
    });
    expect({ status: res.statusCode, body: res.body }).toEqual({ status: 200, body: '{}' });
    const got = await call(t.app, 'GET', `/telemetry/fetch_trace/${span.traceId}`, { token: user.token });
    expect(got.json().spans[0].name).toHaveLength(name.length);
  });

  for (const [label, Logs] of [
    ['http/json', HttpLogExporter],
    ['http/protobuf', ProtoLogExporter],
  ] as const) {
    it(`log records sent with the ${label} exporter come back with every field`, async () => {
      const [user, token] = await userWithToken();
      const memory = new InMemoryLogRecordExporter();
      const provider = new LoggerProvider({
        resource: resourceFromAttributes({ 'service.name': 'log-svc' }),
        processors: [new SimpleLogRecordProcessor({ exporter: memory })],
      });
      provider.getLogger('log-scope').emit({
        severityNumber: SeverityNumber.WARN,
        severityText: 'WARN',
        body: { text: 'careful', n: 3 },
        attributes: { 'taskhook.task_id': 'task-7' },
        timestamp: [1795361443, 999000001],
      });
      await provider.forceFlush();
      const exporter = new Logs({ url: `${base}/v1/logs`, headers: { Authorization: token } }) as Exporter;
      const result = await exportWith(exporter, memory.getFinishedLogRecords());
      await exporter.shutdown();
      expect(result.code).toBe(ExportResultCode.SUCCESS);

      const res = await call(t.app, 'GET', '/telemetry/fetch_logs', { token: user.token });
      expect(res.statusCode).toBe(200);
      expect(res.json().logs).toEqual([
        expect.objectContaining({
          time_unix_nano: '1795361443999000001',
          time: '2026-11-22T15:30:43.999Z',
          severity_number: 13,
          severity_text: 'WARN',
          body: { text: 'careful', n: 3 },
          trace_id: null,
          service_name: 'log-svc',
          scope_name: 'log-scope',
          task_id: 'task-7',
          attributes: { 'taskhook.task_id': 'task-7' },
        }),
      ]);
    });
  }
});
