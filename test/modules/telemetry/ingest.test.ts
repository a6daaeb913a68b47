import { gzipSync } from 'node:zlib';
import protobuf from 'protobufjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser, type TestUser } from '../../helpers/factories.js';
import { expectStandardHeaders } from '../../helpers/routes.js';
import { hexId, ingestToken, jsonSpan, postOtlpJson, tracesRequest } from './helpers.js';

const TRACES = '/telemetry/ingest_http/v1/traces';
const LOGS = '/telemetry/ingest_http/v1/logs';
const MAX = 64 * 1024;

/** A google.rpc.Status read back from protobuf, with protobufjs' reader rather than our encoder. */
function readStatus(body: Buffer) {
  const reader = protobuf.Reader.create(body);
  const out: { code?: number; message?: string } = {};
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    if (tag >>> 3 === 1) out.code = reader.int32();
    else if (tag >>> 3 === 2) out.message = reader.string();
    else reader.skipType(tag & 7);
  }
  return out;
}

/** An AnyValue nested `depth` arrays deep. */
function nested(depth: number): unknown {
  return depth === 0 ? { stringValue: 'bottom' } : { arrayValue: { values: [nested(depth - 1)] } };
}

describe.each(DATABASES)('OTLP ingest ($name)', (db) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp(db, { config: { telemetryMaxBodyBytes: MAX } });
  });
  afterAll(() => t.close());

  async function setup(): Promise<[TestUser, string]> {
    const user = await createUser(t);
    return [user, await ingestToken(t, user)];
  }

  const post = (url: string, headers: Record<string, string>, payload?: string | Buffer) =>
    t.app.inject({ method: 'POST', url, headers, payload });

  it('takes only ingest tokens, bare or as Bearer', async () => {
    const [user, token] = await setup();
    const body = JSON.stringify(tracesRequest([jsonSpan()]));
    const json = { 'content-type': 'application/json' };
    for (const auth of [token, `Bearer ${token}`, ` ${token} `]) {
      const res = await post(TRACES, { ...json, authorization: auth }, body);
      expect(res.statusCode).toBe(200);
      expectStandardHeaders(res);
    }
    const none = await post(TRACES, json, body);
    expect({ status: none.statusCode, body: none.json() }).toEqual({
      status: 401,
      body: { error: 'Authorization header is required' },
    });
    const kinds: Array<Record<string, string>> = [
      { authorization: `Bearer ${user.token}` },
      { authorization: `Bearer ${user.key}` },
      { 'x-api-key': user.key },
      { 'x-service-api-key': user.key },
      { authorization: 'nonsense' },
      { authorization: `${token.slice(0, -1)}${token.endsWith('0') ? '1' : '0'}` },
    ];
    for (const headers of kinds) {
      const res = await post(TRACES, { 'content-type': 'application/x-protobuf', ...headers }, body);
      expect({ status: res.statusCode, body: res.json() }).toEqual({
        status: 401,
        body: { error: 'Invalid or expired token' },
      });
    }
    const uuid = (await call(t.app, 'GET', '/auth/ingest_tokens', { token: user.token })).json().tokens[0].uuid;
    await call(t.app, 'DELETE', `/auth/ingest_tokens/${uuid}`, { token: user.token });
    expect((await post(TRACES, { ...json, authorization: token }, body)).statusCode).toBe(401);
  });

  it('records the token as used', async () => {
    const [user, token] = await setup();
    const before = (await call(t.app, 'GET', '/auth/ingest_tokens', { token: user.token })).json().tokens[0];
    expect(before.last_used_at).toBeNull();
    await postOtlpJson(t, 'traces', token, {});
    const after = (await call(t.app, 'GET', '/auth/ingest_tokens', { token: user.token })).json().tokens[0];
    expect(after.last_used_at).toEqual(expect.any(String));
  });

  it('refuses other content types and encodings with 415 and a JSON Status, after the credential', async () => {
    const [, token] = await setup();
    const refused: Array<Record<string, string>> = [
      { 'content-type': 'text/plain' },
      { 'content-type': 'application/protobuf' },
      {},
      { 'content-type': 'application/json', 'content-encoding': 'br' },
    ];
    for (const headers of refused) {
      const res = await post(TRACES, { authorization: token, ...headers }, '{}');
      expect({ status: res.statusCode, type: res.headers['content-type'] }).toEqual({
        status: 415,
        type: expect.stringContaining('application/json'),
      });
      expect(res.json()).toEqual({ code: 3, message: expect.any(String) });
    }
    expect((await post(TRACES, { 'content-type': 'text/plain' }, 'x')).statusCode).toBe(401);
    const charset = await post(
      TRACES,
      { authorization: token, 'content-type': 'application/json; charset=utf-8' },
      '{}',
    );
    expect(charset.statusCode).toBe(200);
  });

  it('answers 413 for bodies over the limit as sent or as inflated (a gzip bomb stops at the limit)', async () => {
    const [, token] = await setup();
    const big = JSON.stringify({ resourceSpans: [], pad: 'x'.repeat(MAX) });
    const sent = await post(TRACES, { authorization: token, 'content-type': 'application/json' }, big);
    expect({ status: sent.statusCode, body: sent.json() }).toEqual({
      status: 413,
      body: { code: 8, message: expect.any(String) },
    });
    const bomb = gzipSync(Buffer.alloc(40 * 1024 * 1024, 0x20));
    expect(bomb.length).toBeLessThan(MAX);
    const inflated = await post(
      TRACES,
      { authorization: token, 'content-type': 'application/x-protobuf', 'content-encoding': 'gzip' },
      bomb,
    );
    expect(inflated.statusCode).toBe(413);
    expect(inflated.headers['content-type']).toContain('application/x-protobuf');
    expect(readStatus(inflated.rawPayload)).toEqual({ code: 8, message: expect.stringContaining('larger') });
  });

  it('accepts gzip and answers 400 for broken gzip, JSON, protobuf and shapes', async () => {
    const [, token] = await setup();
    const gz = gzipSync(JSON.stringify(tracesRequest([jsonSpan()])));
    const ok = await post(
      TRACES,
      { authorization: token, 'content-type': 'application/json', 'content-encoding': 'gzip' },
      gz,
    );
    expect({ status: ok.statusCode, body: ok.body }).toEqual({ status: 200, body: '{}' });

    const bad: Array<[Record<string, string>, string | Buffer]> = [
      [{ 'content-encoding': 'gzip' }, 'not gzip at all'],
      [{}, '{"resourceSpans": ['],
      [{}, ''],
      [{}, '[]'],
      [{}, '{"resourceSpans": {}}'],
      [{}, JSON.stringify(tracesRequest([jsonSpan({ traceId: 12 })]))],
      [{}, JSON.stringify(tracesRequest([jsonSpan({ name: ['x'] })]))],
      [{}, JSON.stringify(tracesRequest([jsonSpan({ startTimeUnixNano: 'soon' })]))],
      [
        {},
        `{"resourceSpans":[{"scopeSpans":[{"spans":[{"attributes":[{"key":"k","value":${'{"arrayValue":{"values":['.repeat(2000)}`,
      ],
      [{}, JSON.stringify(tracesRequest([jsonSpan({ attributes: [{ key: 'deep', value: nested(100) }] })]))],
    ];
    for (const [headers, payload] of bad) {
      const res = await post(TRACES, { authorization: token, 'content-type': 'application/json', ...headers }, payload);
      expect({ payload: String(payload).slice(0, 40), status: res.statusCode }).toMatchObject({ status: 400 });
      expect(res.json()).toEqual({ code: 3, message: expect.any(String) });
    }
    const proto = await post(
      TRACES,
      { authorization: token, 'content-type': 'application/x-protobuf' },
      Buffer.from([0x0a, 0xff, 0x01]),
    );
    expect(proto.statusCode).toBe(400);
    expect(readStatus(proto.rawPayload).code).toBe(3);
  });

  it('an empty request is valid and stores nothing, in both encodings', async () => {
    const [user, token] = await setup();
    expect((await postOtlpJson(t, 'traces', token, {})).body).toBe('{}');
    expect((await postOtlpJson(t, 'logs', token, {})).body).toBe('{}');
    const proto = await post(LOGS, { authorization: token, 'content-type': 'application/x-protobuf' });
    expect({ status: proto.statusCode, length: proto.rawPayload.length }).toEqual({ status: 200, length: 0 });
    expect(proto.headers['content-type']).toContain('application/x-protobuf');
    const list = await call(t.app, 'GET', '/telemetry/fetch_traces', { token: user.token });
    expect(list.json().traces).toEqual([]);
  });

  it('stores the valid spans of a partly invalid batch and reports the rest', async () => {
    const [user, token] = await setup();
    const good = jsonSpan({ traceId: hexId(16).toUpperCase() });
    const bad = [
      jsonSpan({ traceId: '0'.repeat(32) }),
      jsonSpan({ traceId: 'abc' }),
      jsonSpan({ spanId: '0'.repeat(16) }),
      jsonSpan({ spanId: 'zz'.repeat(8) }),
      jsonSpan({ parentSpanId: 'abcd' }),
      jsonSpan({ startTimeUnixNano: '0' }),
      jsonSpan({ endTimeUnixNano: '1' }),
    ];
    const res = await postOtlpJson(t, 'traces', token, tracesRequest([good, ...bad]));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ partialSuccess: { rejectedSpans: 7, errorMessage: expect.stringMatching(/.+/) } });
    const trace = await call(t.app, 'GET', `/telemetry/fetch_trace/${good.traceId}`, { token: user.token });
    expect(trace.json().spans).toHaveLength(1);
    expect(trace.json().trace_id).toBe(good.traceId.toLowerCase());

    const allBad = await post(
      LOGS,
      { authorization: token, 'content-type': 'application/json' },
      JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ traceId: 'abcd' }, { spanId: '12' }] }] }] }),
    );
    expect(allBad.json()).toEqual({ partialSuccess: { rejectedLogRecords: 2, errorMessage: expect.any(String) } });
  });

  it('answers partial success in protobuf for protobuf requests', async () => {
    const [, token] = await setup();
    const root = new protobuf.Root();
    const Span = new protobuf.Type('Span').add(new protobuf.Field('traceId', 1, 'bytes'));
    const Scope = new protobuf.Type('ScopeSpans').add(new protobuf.Field('spans', 2, 'Span', 'repeated'));
    const Resource = new protobuf.Type('ResourceSpans').add(
      new protobuf.Field('scopeSpans', 2, 'ScopeSpans', 'repeated'),
    );
    const Req = new protobuf.Type('Req').add(new protobuf.Field('resourceSpans', 1, 'ResourceSpans', 'repeated'));
    // The answer, read with its own schema (ExportTraceServiceResponse.partial_success), not the service's.
    const Partial = new protobuf.Type('PartialSuccess')
      .add(new protobuf.Field('rejectedSpans', 1, 'int64'))
      .add(new protobuf.Field('errorMessage', 2, 'string'));
    const Res = new protobuf.Type('Res').add(new protobuf.Field('partialSuccess', 1, 'PartialSuccess'));
    root.add(Span).add(Scope).add(Resource).add(Req).add(Partial).add(Res);
    const body = Req.encode({
      resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: Buffer.from([1, 2]) }] }] }],
    }).finish();
    const res = await post(
      TRACES,
      { authorization: token, 'content-type': 'application/x-protobuf' },
      Buffer.from(body),
    );
    expect(res.statusCode).toBe(200);
    const decoded = Res.toObject(Res.decode(res.rawPayload), { longs: String });
    expect(decoded.partialSuccess).toEqual({ rejectedSpans: '1', errorMessage: expect.stringMatching(/trace id/) });
  });

  it('reads 64-bit numbers exactly, maps attribute values and lets the last repeated key win', async () => {
    const [user, token] = await setup();
    const span = jsonSpan({
      startTimeUnixNano: 1795361443211333262n,
      endTimeUnixNano: '1795361443211333263',
      attributes: [
        { key: 'big', value: { intValue: 9007199254740993n } },
        { key: 'small', value: { intValue: '-42' } },
        { key: 'nan', value: { doubleValue: 'NaN' } },
        { key: 'inf', value: { doubleValue: '-Infinity' } },
        { key: 'bytes', value: { bytesValue: 'AAEC' } },
        { key: 'empty', value: {} },
        { key: 'kv', value: { kvlistValue: { values: [{ key: 'a', value: { boolValue: false } }] } } },
        { key: 'dup', value: { stringValue: 'first' } },
        { key: 'dup', value: { stringValue: 'last' } },
        { key: 'gen_ai.usage.input_tokens', value: { doubleValue: 1.5 } },
        { key: 'gen_ai.request.model', value: { intValue: 3 } },
      ],
    });
    const text = JSON.stringify(tracesRequest([span]), (_k, v) => (typeof v === 'bigint' ? `@@${v}@@` : v)).replace(
      /"@@(\d+)@@"/g,
      '$1',
    );
    expect(text).toContain('"startTimeUnixNano":1795361443211333262');
    expect((await postOtlpJson(t, 'traces', token, text)).body).toBe('{}');
    const got = (await call(t.app, 'GET', `/telemetry/fetch_trace/${span.traceId}`, { token: user.token })).json();
    expect(got.spans[0]).toMatchObject({
      start_time_unix_nano: '1795361443211333262',
      end_time_unix_nano: '1795361443211333263',
      duration_ms: 0.000001,
      input_tokens: null,
      request_model: null,
      attributes: {
        big: '9007199254740993',
        small: -42,
        nan: 'NaN',
        inf: '-Infinity',
        bytes: 'AAEC',
        empty: null,
        kv: { a: false },
        dup: 'last',
        'gen_ai.usage.input_tokens': 1.5,
      },
    });
  });

  it('replaces a re-sent span instead of duplicating it; users with colliding ids stay apart', async () => {
    const [user, token] = await setup();
    const [other, otherToken] = await setup();
    const span = jsonSpan({ name: 'first' });
    await postOtlpJson(t, 'traces', token, tracesRequest([span]));
    await postOtlpJson(t, 'traces', token, tracesRequest([{ ...span, name: 'second' }]));
    await postOtlpJson(t, 'traces', otherToken, tracesRequest([{ ...span, name: 'theirs' }]));
    const mine = (await call(t.app, 'GET', `/telemetry/fetch_trace/${span.traceId}`, { token: user.token })).json();
    expect(mine.spans.map((s: { name: string }) => s.name)).toEqual(['second']);
    const theirs = (await call(t.app, 'GET', `/telemetry/fetch_trace/${span.traceId}`, { token: other.token })).json();
    expect(theirs.spans.map((s: { name: string }) => s.name)).toEqual(['theirs']);
  });

  it('is described in the OpenAPI document with the read endpoints', async () => {
    const doc = (await call(t.app, 'GET', '/openapi.json')).json();
    for (const path of ['/telemetry/ingest_http/v1/traces', '/telemetry/ingest_http/v1/logs']) {
      expect(doc.paths[path].post.description).toContain('OTLP/HTTP');
    }
    for (const path of ['/telemetry/fetch_traces', '/telemetry/fetch_trace/{traceId}', '/telemetry/fetch_logs']) {
      expect(doc.paths[path].get.responses['200']).toBeDefined();
    }
  });

  it('has no metrics endpoint', async () => {
    const [, token] = await setup();
    const res = await postOtlpJson(t, 'traces', token, {}).then(() =>
      post('/telemetry/ingest_http/v1/metrics', { authorization: token, 'content-type': 'application/json' }, '{}'),
    );
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('NOT_FOUND');
  });
});
