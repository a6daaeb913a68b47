import type { Executor } from '../../db/connect.js';
import { withDbErrors } from '../../db/errors.js';
import { toDbJson } from '../../db/json.js';
import { newId } from '../../lib/ids.js';
import type { Acting } from '../../lib/principal.js';
import { iso } from '../../lib/time.js';

/** Every action the audit log records (docs/workspaces.md lists each one's target and details). */
export const AUDIT_ACTIONS = [
  'workspace.create',
  'workspace.rename',
  'workspace.delete',
  'invitation.create',
  'invitation.revoke',
  'invitation.accept',
  'member.role_change',
  'member.remove',
  'member.leave',
  'agent.create',
  'agent.update',
  'agent.delete',
  'trigger.create',
  'trigger.update',
  'trigger.delete',
  'trigger.rotate_secret',
  'key.create',
  'key.revoke',
  'ingest_token.create',
  'ingest_token.revoke',
  'provider_credential.create',
  'provider_credential.update',
  'provider_credential.delete',
  'signing_secret.rotate',
  'schedule.create',
  'schedule.update',
  'schedule.delete',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

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
        actor_uuid: actor.uuid,
        actor_name: actor.type === 'user' ? actor.email : actor.name,
        action: entry.action,
        target_type: entry.target.type,
        target_uuid: entry.target.uuid,
        details: toDbJson(entry.details),
        ip: acting.ip,
        request_id: acting.requestId,
      })
      .execute(),
  );
}
