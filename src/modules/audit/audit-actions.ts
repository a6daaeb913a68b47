// No imports: the dashboard's audit page imports this list too (a browser bundle), so the filter
// it offers is always the list the server records and validates.

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
  'route.create',
  'route.update',
  'route.delete',
  'signing_secret.rotate',
  'schedule.create',
  'schedule.update',
  'schedule.delete',
  'budget.update',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];
