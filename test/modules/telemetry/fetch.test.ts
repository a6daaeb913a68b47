import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser, type TestUser } from '../../helpers/factories.js';
import { sqlitePlans } from '../../helpers/query-plans.js';
import { hexId, ingestToken, jsonSpan, postOtlpJson, tracesRequest } from './helpers.js';

const DAY = 86_400_000;
const NOW = Date.parse('2026-11-22T12:00:00.000Z');
const ns = (ms: number) => `${ms}000000`;
const attr = (key: string, value: string | number) => ({
  key,
  value: typeof value === 'string' ? { stringValue: value } : { intValue: value },
});

/** A span starting at `ms` lasting `len` ms. */
function at(ms: number, len: number, extra: Record<string, unknown> = {}) {
  return jsonSpan({ startTimeUnixNano: ns(ms), endTimeUnixNano: ns(ms + len), ...extra });
}

describe.each(DATABASES)('telemetry fetch ($name)', (db) => {
  let t: TestApp;
  const clock = manualClock(NOW);
  beforeAll(async () => {
    t = await buildTestApp(db, { clock, config: { telemetryRetentionDays: 7, retentionDays: 3650 } });
  });
  afterAll(() => t.close());

  async function setup(): Promise<[TestUser, string]> {
    const user = await createUser(t);
    return [user, await ingestToken(t, user)];
  }
  const get = (user: TestUser, url: string) => call(t.app, 'GET', url, { token: user.token });

  it('summarises traces: root, times, counts, status, agent, task and usage', async () => {
    const [user, token] = await setup();
    const traceId = hexId(16);
    const root = at(NOW - 5000, 4000, { traceId, name: 'root', spanId: 'ffffffffffffff01' });
    const agent = at(NOW - 4900, 3000, {
      traceId,
      parentSpanId: root.spanId,
      name: 'agent',
      attributes: [
        attr('gen_ai.operation.name', 'invoke_agent'),
        attr('gen_ai.agent.id', 'a-1'),
        attr('gen_ai.agent.name', 'Ada'),
        attr('gen_ai.usage.input_tokens', 999),
      ],
    });
    const chat = at(NOW - 4800, 500, {
      traceId,
      parentSpanId: agent.spanId,
      name: 'chat',
      status: { code: 2, message: 'boom' },
      attributes: [
        attr('gen_ai.usage.input_tokens', 10),
        attr('gen_ai.usage.output_tokens', 4),
        attr('taskhook.task_id', 'T1'),
      ],
    });
    await postOtlpJson(t, 'traces', token, tracesRequest([chat, agent, root], 'svc-a'));
    const res = await get(user, '/telemetry/fetch_traces');
    expect(res.json()).toEqual({
      traces: [
        {
          trace_id: traceId,
          root_span_id: root.spanId,
          name: 'root',
          service_name: 'svc-a',
          start_time: new Date(NOW - 5000).toISOString(),
          end_time: new Date(NOW - 1000).toISOString(),
          duration_ms: 4000,
          span_count: 3,
          error_count: 1,
          status: 'error',
          agent_id: 'a-1',
          agent_name: 'Ada',
          task_id: 'T1',
          input_tokens: 10,
          output_tokens: 4,
        },
      ],
      next_cursor: null,
    });
    const tree = (await get(user, `/telemetry/fetch_trace/${traceId}`)).json();
    expect(tree.spans.map((s: { name: string }) => s.name)).toEqual(['root', 'agent', 'chat']);
  });

  it('without a parentless span, the root is the earliest span whose parent is missing', async () => {
    const [user, token] = await setup();
    const traceId = hexId(16);
    const a = at(NOW - 3000, 10, { traceId, name: 'orphan-late', parentSpanId: hexId(8) });
    const b = at(NOW - 4000, 10, { traceId, name: 'orphan-early', parentSpanId: hexId(8) });
    await postOtlpJson(t, 'traces', token, tracesRequest([a, b]));
    const [summary] = (await get(user, '/telemetry/fetch_traces')).json().traces;
    expect(summary).toMatchObject({ name: 'orphan-early', root_span_id: b.spanId, status: 'ok', agent_id: null });
  });

  it('filters traces and pages them with a stable cursor', async () => {
    const [user, token] = await setup();
    const spans = Array.from({ length: 5 }, (_, i) =>
      at(NOW - (10 - i) * 60_000, 100, {
        name: `t${i}`,
        attributes: [attr('gen_ai.agent.id', i % 2 ? 'odd' : 'even')],
        ...(i === 3 ? { status: { code: 2 } } : {}),
      }),
    );
    await postOtlpJson(t, 'traces', token, tracesRequest(spans, 'svc-f'));
    const names = async (query: string) =>
      (await get(user, `/telemetry/fetch_traces?${query}`)).json().traces.map((x: { name: string }) => x.name);
    expect(await names('')).toEqual(['t4', 't3', 't2', 't1', 't0']);
    expect(await names('agent_id=odd')).toEqual(['t3', 't1']);
    expect(await names('status=error')).toEqual(['t3']);
    expect(await names('status=ok&service=svc-f')).toEqual(['t4', 't2', 't1', 't0']);
    expect(await names('service=nope')).toEqual([]);
    const from = new Date(NOW - 8 * 60_000).toISOString();
    const to = new Date(NOW - 6 * 60_000).toISOString().replace('Z', '+00:00');
    expect(await names(`from=${from}&to=${encodeURIComponent(to)}`)).toEqual(['t3', 't2']);

    const first = (await get(user, '/telemetry/fetch_traces?limit=2')).json();
    expect(first.traces.map((x: { name: string }) => x.name)).toEqual(['t4', 't3']);
    // A newer trace arriving between pages neither repeats nor shifts the next page.
    await postOtlpJson(t, 'traces', token, tracesRequest([at(NOW - 1000, 10, { name: 'newer' })]));
    const second = (await get(user, `/telemetry/fetch_traces?limit=2&cursor=${first.next_cursor}`)).json();
    expect(second.traces.map((x: { name: string }) => x.name)).toEqual(['t2', 't1']);
    const third = (await get(user, `/telemetry/fetch_traces?limit=2&cursor=${second.next_cursor}`)).json();
    expect(third).toMatchObject({ traces: [{ name: 't0' }], next_cursor: null });

    const logsCursor = await get(user, `/telemetry/fetch_logs?cursor=${first.next_cursor}`);
    expect(logsCursor.statusCode).toBe(400);
    expect(logsCursor.json().error.details.field).toBe('cursor');
  });

  it('lists logs newest first with filters and paging', async () => {
    const [user, token] = await setup();
    const traceId = hexId(16);
    const spanId = hexId(8);
    const records = [
      { timeUnixNano: ns(NOW - 3000), severityNumber: 9, body: { stringValue: 'info' }, traceId, spanId },
      { observedTimeUnixNano: ns(NOW - 2000), severityNumber: 17, body: { stringValue: 'error' } },
      {
        timeUnixNano: ns(NOW - 1000),
        severityNumber: 13,
        eventName: 'evt',
        attributes: [attr('taskhook.task_id', 'T9')],
        traceId: '0'.repeat(32),
      },
    ];
    const body = {
      resourceLogs: [
        {
          resource: { attributes: [attr('service.name', 'log-svc')] },
          scopeLogs: [{ scope: { name: 'sc' }, logRecords: records }],
        },
      ],
    };
    expect((await postOtlpJson(t, 'logs', token, body)).body).toBe('{}');
    const bodies = async (query: string) => {
      const res = await get(user, `/telemetry/fetch_logs?${query}`);
      if (res.statusCode !== 200) throw new Error(`fetch_logs?${query}: ${res.body}`);
      return res.json().logs.map((l: { body: unknown }) => l.body);
    };
    expect(await bodies('')).toEqual([null, 'error', 'info']);
    expect(await bodies('severity_min=13')).toEqual([null, 'error']);
    expect(await bodies(`trace_id=${traceId.toUpperCase()}`)).toEqual(['info']);
    expect(await bodies(`span_id=${spanId}`)).toEqual(['info']);
    expect(await bodies('task_id=T9')).toEqual([null]);
    expect(await bodies('service=log-svc&severity_min=17')).toEqual(['error']);
    const [newest, middle] = (await get(user, '/telemetry/fetch_logs')).json().logs;
    expect(newest).toMatchObject({ event_name: 'evt', trace_id: null, task_id: 'T9', scope_name: 'sc' });
    expect(middle).toMatchObject({
      time_unix_nano: ns(NOW - 2000),
      observed_time_unix_nano: ns(NOW - 2000),
      severity_number: 17,
      severity_text: null,
    });
    const page = (await get(user, '/telemetry/fetch_logs?limit=2')).json();
    const rest = (await get(user, `/telemetry/fetch_logs?limit=2&cursor=${page.next_cursor}`)).json();
    expect(rest).toMatchObject({ logs: [{ body: 'info' }], next_cursor: null });
  });

  it('aggregates usage by model, agent and day without counting agent spans twice', async () => {
    const [user, token] = await setup();
    const day1 = Date.parse('2026-11-20T10:00:00.000Z');
    const t1 = hexId(16);
    const t2 = hexId(16);
    const spans = [
      // Trace 1: an agent span with the summed usage and two model calls; the agent is named on the agent span only.
      at(day1, 100, {
        traceId: t1,
        attributes: [
          attr('gen_ai.operation.name', 'invoke_agent'),
          attr('gen_ai.agent.id', 'ag'),
          attr('gen_ai.usage.input_tokens', 30),
        ],
      }),
      at(day1 + 10, 10, {
        traceId: t1,
        attributes: [attr('gen_ai.request.model', 'm-req'), attr('gen_ai.usage.input_tokens', 10)],
      }),
      at(day1 + 20, 10, {
        traceId: t1,
        attributes: [
          attr('gen_ai.request.model', 'm-req'),
          attr('gen_ai.response.model', 'm-resp'),
          attr('gen_ai.usage.input_tokens', 20),
          attr('gen_ai.usage.output_tokens', 5),
        ],
      }),
      // Trace 2, a day later: an agent span alone counts.
      at(day1 + DAY, 10, {
        traceId: t2,
        attributes: [attr('gen_ai.operation.name', 'invoke_agent'), attr('gen_ai.usage.output_tokens', 7)],
      }),
    ];
    await postOtlpJson(t, 'traces', token, tracesRequest(spans));
    const usage = (await get(user, '/telemetry/fetch_usage?group_by=day,model,agent')).json();
    expect(usage).toEqual({
      groups: [
        {
          day: '2026-11-20',
          model: 'm-req',
          agent_id: 'ag',
          input_tokens: 10,
          output_tokens: 0,
          total_tokens: 10,
          span_count: 1,
        },
        {
          day: '2026-11-20',
          model: 'm-resp',
          agent_id: 'ag',
          input_tokens: 20,
          output_tokens: 5,
          total_tokens: 25,
          span_count: 1,
        },
        {
          day: '2026-11-21',
          model: null,
          agent_id: null,
          input_tokens: 0,
          output_tokens: 7,
          total_tokens: 7,
          span_count: 1,
        },
      ],
      totals: { input_tokens: 30, output_tokens: 12, total_tokens: 42, span_count: 3 },
    });
    const all = (await get(user, '/telemetry/fetch_usage')).json();
    expect(all.groups).toEqual([{ input_tokens: 30, output_tokens: 12, total_tokens: 42, span_count: 3 }]);
    const ranged = (await get(user, `/telemetry/fetch_usage?from=2026-11-21T00:00:00Z&group_by=agent`)).json();
    expect(ranged.groups).toEqual([
      { agent_id: null, input_tokens: 0, output_tokens: 7, total_tokens: 7, span_count: 1 },
    ]);
    const trace1 = (await get(user, `/telemetry/fetch_traces?agent_id=ag`)).json().traces[0];
    expect(trace1).toMatchObject({ trace_id: t1, input_tokens: 30, output_tokens: 5 });
  });

  it('hides expired telemetry and the sweep deletes exactly it', async () => {
    const [user, token] = await setup();
    const old = at(NOW - 8 * DAY, 1000, { name: 'old' });
    const edge = at(NOW - 7 * DAY - 500, 1000, { name: 'ends inside the window' });
    const fresh = at(NOW - DAY, 1000, { name: 'fresh' });
    await postOtlpJson(t, 'traces', token, tracesRequest([old, edge, fresh]));
    const logs = [{ timeUnixNano: ns(NOW - 8 * DAY) }, { timeUnixNano: ns(NOW - DAY), body: { stringValue: 'kept' } }];
    await postOtlpJson(t, 'logs', token, { resourceLogs: [{ scopeLogs: [{ logRecords: logs }] }] });
    const names = async () =>
      (await get(user, '/telemetry/fetch_traces')).json().traces.map((x: { name: string }) => x.name);
    expect(await names()).toEqual(['fresh', 'ends inside the window']);
    expect((await get(user, `/telemetry/fetch_trace/${old.traceId}`)).statusCode).toBe(404);
    expect((await get(user, '/telemetry/fetch_logs')).json().logs).toHaveLength(1);

    const count = async () =>
      Promise.all([
        t.runtime.db.kysely
          .selectFrom('telemetry_spans')
          .select('name')
          .where('workspace_uuid', '=', user.uuid)
          .execute(),
        t.runtime.db.kysely
          .selectFrom('telemetry_logs')
          .select('uuid')
          .where('workspace_uuid', '=', user.uuid)
          .execute(),
      ]);
    expect((await count()).map((rows) => rows.length)).toEqual([3, 2]);
    await t.app.background.housekeep();
    const [spansLeft, logsLeft] = await count();
    expect(spansLeft.map((r) => r.name).sort()).toEqual(['ends inside the window', 'fresh']);
    expect(logsLeft).toHaveLength(1);
  });

  // Asked for the spans in start order, SQLite's planner walked every span of the user through
  // the start index instead of looking the trace up by its key: a trace's page grew with the
  // user's whole history. The spans are now sorted after reading, as the order test above checks.
  it.runIf(db.name === 'sqlite')("reads a trace's spans by its key, not by walking the user's spans", async () => {
    const [user, token] = await setup();
    const traceId = hexId(16);
    const spans = Array.from({ length: 3 }, (_, i) => at(NOW - 5000 + i, 10, { traceId, name: `s${i}` }));
    await postOtlpJson(t, 'traces', token, tracesRequest(spans));
    let res: Awaited<ReturnType<typeof get>> | undefined;
    const plans = await sqlitePlans(t, /from "telemetry_spans"/, async () => {
      res = await get(user, `/telemetry/fetch_trace/${traceId}`);
    });
    expect(res?.json().spans.map((x: { name: string }) => x.name)).toEqual(['s0', 's1', 's2']);
    const steps = plans.flatMap((p) => p.steps);
    expect(steps).toEqual([
      expect.stringMatching(
        /^SEARCH telemetry_spans USING INDEX sqlite_autoindex_telemetry_spans_1 \(workspace_uuid=\? AND trace_id=\?\)$/,
      ),
      // Only that trace's spans are sorted, to cut a huge trace at its first 10,000.
      'USE TEMP B-TREE FOR ORDER BY',
    ]);
  });
});
