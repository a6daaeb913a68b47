import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TRACE_PAGE } from '../../../src/modules/telemetry/telemetry-service.js';
import { SERIALIZE_CHUNK } from '../../../src/modules/telemetry/trace-body.js';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser } from '../../helpers/factories.js';
import { hexId, ingestToken, jsonSpan, postOtlpJson, tracesRequest } from './helpers.js';

const SPANS = 1_300;
const FIELDS = [
  'trace_id',
  'span_id',
  'parent_span_id',
  'name',
  'kind',
  'start_time_unix_nano',
  'end_time_unix_nano',
  'start_time',
  'end_time',
  'duration_ms',
  'status_code',
  'status_message',
  'service_name',
];

// A large trace is read a page at a time and written a chunk of spans at a time, with a turn of
// the event loop between them, so one workspace's trace read does not hold everyone's requests
// (it held /health for 2.5 s with 10,000 spans). Counted in turns, not timed.
describe.each(DATABASES)('fetch_trace of a large trace ($name)', (db) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp(db);
  });
  afterAll(() => t.close());

  it('lets the event loop turn between pages and chunks, and sends exactly the schema fields', async () => {
    const user = await createUser(t);
    const token = await ingestToken(t, user);
    const traceId = hexId(16);
    const root = hexId(8);
    const start = Date.now() - 60_000;
    for (let from = 0; from < SPANS; from += 650) {
      const spans = Array.from({ length: 650 }, (_, k) => {
        const i = from + k;
        return jsonSpan({
          traceId,
          spanId: i === 0 ? root : hexId(8),
          parentSpanId: i === 0 ? undefined : root,
          name: `op ${i}`,
          startTimeUnixNano: `${start + i}000000`,
          endTimeUnixNano: `${start + i + 5}000000`,
        });
      });
      expect((await postOtlpJson(t, 'traces', token, tracesRequest(spans))).statusCode).toBe(200);
    }

    let turns = 0;
    let counting = true;
    const tick = () => {
      if (!counting) return;
      turns++;
      setImmediate(tick);
    };
    setImmediate(tick);
    const res = await call(t.app, 'GET', `/telemetry/fetch_trace/${traceId}`, { token: user.token });
    counting = false;

    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    const body = res.json() as { trace_id: string; spans: Array<Record<string, unknown>>; truncated: boolean };
    expect(body.trace_id).toBe(traceId);
    expect(body.truncated).toBe(false);
    expect(body.spans).toHaveLength(SPANS);
    expect(body.spans.map((s) => s.name)).toEqual(Array.from({ length: SPANS }, (_, i) => `op ${i}`));
    // The schema's whitelist holds: stored columns that are not API fields never go out.
    for (const field of FIELDS) expect(body.spans[0]).toHaveProperty(field);
    for (const hidden of ['workspace_uuid', 'start_key', 'end_key']) expect(body.spans[7]).not.toHaveProperty(hidden);
    // A turn between every page read and every serialised chunk at least.
    const pages = Math.ceil(SPANS / TRACE_PAGE);
    const chunks = Math.ceil(SPANS / SERIALIZE_CHUNK);
    expect(turns).toBeGreaterThanOrEqual(pages - 1 + chunks - 1);

    // The body leaves in pieces, a chunk of spans each (on PostgreSQL the reads' I/O alone turns
    // the loop, so this is what shows the writing is chunked there too).
    const streamed = await t.app.inject({
      method: 'GET',
      url: `/telemetry/fetch_trace/${traceId}`,
      headers: { authorization: `Bearer ${user.token}` },
      payloadAsStream: true,
    });
    let parts = 0;
    let text = '';
    for await (const part of streamed.stream()) {
      parts++;
      text += String(part);
    }
    expect(parts).toBeGreaterThanOrEqual(chunks);
    expect(JSON.parse(text)).toEqual(body);
  });
});
