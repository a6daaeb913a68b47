import { ownedBy, type PurgeStep } from '../../db/purge.js';

/** The telemetry room's part of purging a deleted workspace: its spans and log records. */
export const telemetryPurge: ReadonlyArray<readonly [string, PurgeStep]> = [
  ['telemetry_spans', ownedBy('telemetry_spans', ['workspace_uuid', 'trace_id', 'span_id'])],
  ['telemetry_logs', ownedBy('telemetry_logs', ['uuid'])],
];
