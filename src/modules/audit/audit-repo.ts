import type { Executor } from '../../db/connect.js';
import { withDbErrors } from '../../db/errors.js';
import { fromDbJson, toDbJson } from '../../db/json.js';
import { newId } from '../../lib/ids.js';
import type { Acting, AuditActor } from '../../lib/principal.js';
import { iso } from '../../lib/time.js';
import type { AuditAction } from './audit-actions.js';

/** Lone surrogates (a name sent as hostile input) become U+FFFD, as in text columns: jsonb refuses them. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const fix = (s: string) => s.replace(LONE_SURROGATE, '\uFFFD');
function wellFormed(value: unknown): unknown {
  if (typeof value === 'string') return fix(value);
  if (Array.isArray(value)) return value.map(wellFormed);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [fix(k), wellFormed(v)]));
  }
  return value;
}

/** One management action, as its service describes it. `details` never holds a secret. */
export interface AuditEntry {
  action: AuditAction;
  target: { type: string; uuid: string };
  details: Record<string, unknown>;
}

/**
 * Writes one audit entry, in the caller's transaction (so the entry exists exactly when the change
 * does). `workspaceUuid` overrides the acting workspace (a deleted workspace's entry goes to the
 * deleting owner's personal workspace).
 */
export function recordAudit(ex: Executor, acting: Acting, entry: AuditEntry, workspaceUuid = acting.workspaceUuid) {
  const { actor } = acting;
  return withDbErrors(
    ex
      .insertInto('audit_log')
      .values({
        id: newId(),
        workspace_uuid: workspaceUuid,
        at: iso(Date.now()),
        actor_type: actor.type,
        actor_uuid: actor.type === 'mcp_client' ? actor.client_id : actor.uuid,
        actor_name: actor.type === 'user' ? actor.email : actor.type === 'key' ? actor.name : (actor.client_name ?? ''),
        action: entry.action,
        target_type: entry.target.type,
        target_uuid: entry.target.uuid,
        details: toDbJson(wellFormed(entry.details)),
        ip: acting.ip,
        request_id: acting.requestId,
        client_request_id: acting.clientRequestId,
      })
      .execute(),
  );
}

/** An entry as stored, read back for `GET /workspaces/:id/audit_log`. */
export interface AuditRow {
  id: string;
  at: string;
  actor: AuditActor;
  action: AuditAction;
  target: { type: string; uuid: string };
  details: Record<string, unknown>;
  ip: string | null;
  request_id: string | null;
  client_request_id: string | null;
}

function actorOfRow(r: { actor_type: string; actor_uuid: string; actor_name: string }): AuditActor {
  if (r.actor_type === 'key') return { type: 'key', uuid: r.actor_uuid, name: r.actor_name };
  if (r.actor_type === 'mcp_client') {
    return { type: 'mcp_client', client_id: r.actor_uuid, client_name: r.actor_name === '' ? null : r.actor_name };
  }
  return { type: 'user', uuid: r.actor_uuid, email: r.actor_name };
}

/** The reads and deletes of the audit log; entries are written with `recordAudit`. */
export const auditRepo = {
  /**
   * Up to `limit` entries of the workspace at or after `notBefore`, newest first (by `at`, then
   * `id`), strictly after the position `after` when given (keyset paging: entries written since
   * the previous page sort before it and do not shift it).
   */
  async list(
    ex: Executor,
    workspaceUuid: string,
    q: { notBefore: string; limit: number; action?: string; after?: { at: string; id: string } },
  ): Promise<AuditRow[]> {
    let query = ex
      .selectFrom('audit_log')
      .selectAll()
      .where('workspace_uuid', '=', workspaceUuid)
      .where('at', '>=', q.notBefore);
    if (q.action !== undefined) query = query.where('action', '=', q.action);
    const after = q.after;
    if (after) {
      query = query.where((eb) =>
        eb.or([eb('at', '<', after.at), eb.and([eb('at', '=', after.at), eb('id', '<', after.id)])]),
      );
    }
    const rows = await withDbErrors(query.orderBy('at', 'desc').orderBy('id', 'desc').limit(q.limit).execute());
    return rows.map((r) => ({
      id: r.id,
      at: r.at,
      actor: actorOfRow(r),
      action: r.action as AuditAction,
      target: { type: r.target_type, uuid: r.target_uuid },
      details: fromDbJson<Record<string, unknown>>(r.details),
      ip: r.ip,
      request_id: r.request_id,
      client_request_id: r.client_request_id,
    }));
  },

  /** Housekeeping: deletes up to `limit` entries written before `before` (any workspace). */
  async deleteExpired(ex: Executor, before: string, limit: number): Promise<number> {
    const result = await ex
      .deleteFrom('audit_log')
      .where('id', 'in', (q) => q.selectFrom('audit_log').select('id').where('at', '<', before).limit(limit))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  },

  /** Housekeeping: deletes up to `limit` entries of a deleted workspace. */
  async purgeWorkspace(ex: Executor, workspaceUuid: string, limit: number): Promise<number> {
    const result = await ex
      .deleteFrom('audit_log')
      .where('id', 'in', (q) =>
        q.selectFrom('audit_log').select('id').where('workspace_uuid', '=', workspaceUuid).limit(limit),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  },
};
