import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { telemetryRepo } from '../../../src/modules/telemetry/telemetry-repo.js';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser } from '../../helpers/factories.js';
import { hexId, ingestToken, jsonSpan, postOtlpJson, tracesRequest } from './helpers.js';

const logsRequest = (records: unknown[]) => ({
  resourceLogs: [{ resource: { attributes: [] }, scopeLogs: [{ scope: { name: 's' }, logRecords: records }] }],
});
const logRecord = (i: number, severityText = 'INFO') => ({
  timeUnixNano: String(1795361443211333262n + BigInt(i)),
  severityNumber: 9,
  severityText,
  body: { stringValue: `line ${i}` },
});

/** Counts a user's stored log records through the API, paging to the end. */
async function countLogs(t: TestApp, token: string): Promise<number> {
  let n = 0;
  let cursor: string | null = null;
  do {
    const q: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
    const page = (await call(t.app, 'GET', `/telemetry/fetch_logs?limit=100${q}`, { token })).json();
    n += page.logs.length;
    cursor = page.next_cursor;
  } while (cursor);
  return n;
}

describe.each(DATABASES)('telemetry bounds ($name)', (database) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp(database, { config: { telemetryMaxRecords: 1000, telemetryMaxBodyBytes: 8 * 1024 * 1024 } });
  });
  afterAll(() => t.close());

  it('stores a log export once when it is retried after a later chunk failed', async () => {
    const user = await createUser(t);
    const token = await ingestToken(t, user);
    const marker = `boom-${hexId(4)}`;
    const records = Array.from({ length: 120 }, (_, i) => logRecord(i, i === 110 ? marker : 'INFO'));
    // A real failure of the database on the third chunk of 50: the first two are committed by then.
    const k = t.runtime.db.kysely;
    if (database.name === 'sqlite') {
      await sql`create trigger fail_logs before insert on telemetry_logs when new.severity_text = ${sql.lit(marker)}
        begin select raise(abort, 'injected failure'); end`.execute(k);
    } else {
      await sql`create function fail_logs() returns trigger language plpgsql as $$
        begin raise exception 'injected failure'; end $$`.execute(k);
      await sql`create trigger fail_logs before insert on telemetry_logs for each row
        when (new.severity_text = ${sql.lit(marker)}) execute function fail_logs()`.execute(k);
    }
    const failed = await postOtlpJson(t, 'logs', token, logsRequest(records));
    expect(failed.statusCode).toBe(500);
    if (database.name === 'sqlite') await sql`drop trigger fail_logs`.execute(k);
    else {
      await sql`drop trigger fail_logs on telemetry_logs`.execute(k);
      await sql`drop function fail_logs()`.execute(k);
    }
    const retried = await postOtlpJson(t, 'logs', token, logsRequest(records));
    expect(retried.statusCode).toBe(200);
    expect(await countLogs(t, user.token)).toBe(120);
  });

  it('refuses an export whole, with partial success naming the setting, once the account would pass its quota', async () => {
    const user = await createUser(t);
    const token = await ingestToken(t, user);
    const fill = await postOtlpJson(t, 'logs', token, logsRequest(Array.from({ length: 990 }, (_, i) => logRecord(i))));
    expect(fill.json()).toEqual({});
    const spans = Array.from({ length: 20 }, () => jsonSpan());
    const refused = await postOtlpJson(t, 'traces', token, tracesRequest(spans));
    expect(refused.statusCode).toBe(200);
    expect(refused.json().partialSuccess).toMatchObject({
      rejectedSpans: 20,
      errorMessage: expect.stringContaining('TASKHOOK_TELEMETRY_MAX_RECORDS'),
    });
    const traces = (await call(t.app, 'GET', '/telemetry/fetch_traces', { token: user.token })).json();
    expect(traces.traces).toEqual([]);
    // Up to the quota exactly is still taken; another account is not affected.
    const last = await postOtlpJson(
      t,
      'logs',
      token,
      logsRequest(Array.from({ length: 10 }, (_, i) => logRecord(1000 + i))),
    );
    expect(last.json()).toEqual({});
    expect(await countLogs(t, user.token)).toBe(1000);
    const other = await createUser(t);
    const theirs = await postOtlpJson(t, 'traces', await ingestToken(t, other), tracesRequest(spans));
    expect(theirs.json()).toEqual({});
  });

  it('returns the first 10,000 spans of a larger trace, flagged truncated', async () => {
    const big = await buildTestApp(database, { config: { telemetryMaxBodyBytes: 8 * 1024 * 1024 } });
    try {
      const user = await createUser(big);
      const token = await ingestToken(big, user);
      const traceId = hexId(16);
      const spans = Array.from({ length: 10_001 }, (_, i) =>
        jsonSpan({
          traceId,
          startTimeUnixNano: String(1795361443211333262n + BigInt(i)),
          endTimeUnixNano: String(1795361443711333262n + BigInt(i)),
        }),
      );
      const res = await postOtlpJson(big, 'traces', token, tracesRequest(spans));
      expect(res.json()).toEqual({});
      const got = (await call(big.app, 'GET', `/telemetry/fetch_trace/${traceId}`, { token: user.token })).json();
      expect(got.truncated).toBe(true);
      expect(got.spans).toHaveLength(10_000);
      expect(got.spans.at(-1).start_time_unix_nano).toBe(String(1795361443211333262n + 9999n));
      const small = hexId(16);
      await postOtlpJson(big, 'traces', token, tracesRequest([jsonSpan({ traceId: small })]));
      const one = (await call(big.app, 'GET', `/telemetry/fetch_trace/${small}`, { token: user.token })).json();
      expect(one).toMatchObject({ trace_id: small, truncated: false });
    } finally {
      await big.close();
    }
    // Ten thousand spans take a while to store on a loaded machine; nothing here measures time.
  }, 180_000);

  it('sums usage in the database: one row per group leaves it, not one per span', async () => {
    const user = await createUser(t);
    const token = await ingestToken(t, user);
    const usage = [
      { key: 'gen_ai.request.model', value: { stringValue: 'm' } },
      { key: 'gen_ai.usage.input_tokens', value: { intValue: '3' } },
    ];
    const spans = Array.from({ length: 200 }, () => jsonSpan({ attributes: usage }));
    expect((await postOtlpJson(t, 'traces', token, tracesRequest(spans))).json()).toEqual({});
    const rows = await telemetryRepo.usageGroups(t.runtime.db.kysely, user.uuid, { cutoff: '' }, new Set(['model']));
    expect(rows).toEqual([
      { day: null, model: 'm', agent_id: null, input_tokens: 600, output_tokens: 0, span_count: 200 },
    ]);
    const answer = (await call(t.app, 'GET', '/telemetry/fetch_usage?group_by=model', { token: user.token })).json();
    expect(answer.totals).toEqual({ input_tokens: 600, output_tokens: 0, total_tokens: 600, span_count: 200 });
  });

  it('gives PostgreSQL request queries a statement timeout by default', async () => {
    if (database.name !== 'postgres') return;
    const row = await sql<{ statement_timeout: string }>`show statement_timeout`.execute(t.runtime.db.kysely);
    expect(row.rows[0]?.statement_timeout).toBe('10s');
  });
});
