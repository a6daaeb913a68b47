import type { Executor } from '../../db/connect.js';
import type { TelemetryLogsTable } from '../../db/database.js';
import { withDbErrors } from '../../db/errors.js';
import { fromDbJson, toDbJson } from '../../db/json.js';
import type { Attributes, JsonValue } from './otlp-values-fns.js';
import type { LogRow } from './telemetry-fns.js';

/** Filters of the log list; every time bound is a zero-padded nanosecond key. */
export interface LogFilter {
  cutoff: string;
  fromKey?: string | undefined;
  toKey?: string | undefined;
  service?: string | undefined;
  traceId?: string | undefined;
  spanId?: string | undefined;
  taskId?: string | undefined;
  severityMin?: number | undefined;
  after?: { key: string; uuid: string } | undefined;
  limit: number;
}

export type StoredLog = LogRow & { uuid: string };

/** The SQL of the telemetry log records. */
export const telemetryLogsRepo = {
  /** Inserts log records; one whose id is already stored (a retried request) is skipped. */
  async insertLogs(ex: Executor, workspaceUuid: string, receivedAt: string, logs: StoredLog[]) {
    if (logs.length === 0) return;
    const values: TelemetryLogsTable[] = logs.map((l) => ({
      ...l,
      workspace_uuid: workspaceUuid,
      received_at: receivedAt,
      body: toDbJson(l.body),
      attributes: toDbJson(l.attributes),
      resource_attributes: toDbJson(l.resource_attributes),
    }));
    await withDbErrors(
      ex
        .insertInto('telemetry_logs')
        .values(values)
        .onConflict((oc) => oc.column('uuid').doNothing())
        .execute(),
    );
  },

  async listLogs(ex: Executor, workspaceUuid: string, f: LogFilter): Promise<StoredLog[]> {
    let q = ex
      .selectFrom('telemetry_logs')
      .selectAll()
      .where('workspace_uuid', '=', workspaceUuid)
      .where('time', '>=', f.cutoff);
    if (f.fromKey) q = q.where('time_key', '>=', f.fromKey);
    if (f.toKey) q = q.where('time_key', '<', f.toKey);
    if (f.service !== undefined) q = q.where('service_name', '=', f.service);
    if (f.traceId !== undefined) q = q.where('trace_id', '=', f.traceId);
    if (f.spanId !== undefined) q = q.where('span_id', '=', f.spanId);
    if (f.taskId !== undefined) q = q.where('task_id', '=', f.taskId);
    if (f.severityMin !== undefined) q = q.where('severity_number', '>=', f.severityMin);
    if (f.after) {
      const { key, uuid } = f.after;
      q = q.where((eb) => eb.or([eb('time_key', '<', key), eb.and([eb('time_key', '=', key), eb('uuid', '<', uuid)])]));
    }
    const rows = await withDbErrors(q.orderBy('time_key', 'desc').orderBy('uuid', 'desc').limit(f.limit).execute());
    return rows.map(({ workspace_uuid: _, received_at: __, ...r }) => ({
      ...r,
      body: JSON.parse(r.body) as JsonValue,
      attributes: fromDbJson<Attributes>(r.attributes),
      resource_attributes: fromDbJson<Attributes>(r.resource_attributes),
    }));
  },

  /** Deletes at most `batch` log records older than `cutoff`; returns how many. */
  async deleteExpiredLogs(ex: Executor, cutoff: string, batch: number): Promise<number> {
    const doomed = ex.selectFrom('telemetry_logs').select('uuid').where('time', '<', cutoff).limit(batch);
    const res = await withDbErrors(ex.deleteFrom('telemetry_logs').where('uuid', 'in', doomed).executeTakeFirst());
    return Number(res.numDeletedRows);
  },
};
