import type { Role } from '../../../src/lib/principal.js';
import { call, type TestApp } from '../../helpers/app.js';
import type { TestUser } from '../../helpers/factories.js';

export const WORKSPACE_HEADER = 'x-taskhook-workspace';

/** Every object the app logs (mail goes there without SMTP): installed on the app's logger. */
export function captureLog(t: TestApp): Array<Record<string, unknown>> {
  const logged: Array<Record<string, unknown>> = [];
  const original = t.runtime.logger.info.bind(t.runtime.logger);
  t.runtime.logger.info = ((obj: unknown, ...rest: unknown[]) => {
    if (obj && typeof obj === 'object') logged.push(obj as Record<string, unknown>);
    return (original as (...a: unknown[]) => void)(obj, ...rest);
  }) as typeof t.runtime.logger.info;
  return logged;
}

/** The invitation links mailed (logged) to `email`, oldest first. */
export function invitationLinks(logged: Array<Record<string, unknown>>, email: string): string[] {
  return logged
    .filter((l) => l.to === email && typeof l.invitation_link === 'string')
    .map((l) => String(l.invitation_link));
}

export const tokenOfLink = (link: string) => link.slice(link.lastIndexOf('/') + 1);

/** POST /workspaces as the user; throws unless 201. */
export async function createWorkspace(t: TestApp, owner: TestUser, name = 'Team'): Promise<{ uuid: string }> {
  const res = await call(t.app, 'POST', '/workspaces', { token: owner.token, body: { name } });
  if (res.statusCode !== 201) throw new Error(`workspace creation failed: ${res.body}`);
  return res.json();
}

/** Invites `email` with `role` as `by`; returns the token read from the mailed link. */
export async function invite(
  t: TestApp,
  logged: Array<Record<string, unknown>>,
  workspaceUuid: string,
  by: TestUser,
  email: string,
  role: Role,
): Promise<string> {
  const res = await call(t.app, 'POST', `/workspaces/${workspaceUuid}/invitations`, {
    token: by.token,
    body: { email, role },
  });
  if (res.statusCode !== 201) throw new Error(`invitation failed: ${res.body}`);
  const link = invitationLinks(logged, email).at(-1);
  if (!link) throw new Error('no invitation link logged');
  return tokenOfLink(link);
}

/** Invites and accepts: `user` joins the workspace with `role`. */
export async function join(
  t: TestApp,
  logged: Array<Record<string, unknown>>,
  workspaceUuid: string,
  owner: TestUser,
  user: TestUser,
  role: Role,
) {
  const token = await invite(t, logged, workspaceUuid, owner, user.email, role);
  const res = await call(t.app, 'POST', '/invitations/accept', { token: user.token, body: { token } });
  if (res.statusCode !== 200) throw new Error(`accept failed: ${res.body}`);
}

/** A platform key of `user` in the workspace (made with their session there); `user` with that key. */
export async function keyIn(t: TestApp, user: TestUser, workspaceUuid: string, role?: Role): Promise<TestUser> {
  const res = await call(t.app, 'POST', '/auth/platform_keys', {
    token: user.token,
    headers: { [WORKSPACE_HEADER]: workspaceUuid },
    body: { name: 'team key', ...(role ? { role } : {}) },
  });
  if (res.statusCode !== 201) throw new Error(`key creation failed: ${res.body}`);
  return { ...user, key: res.json().key, keyUuid: res.json().uuid };
}

/** The audit entries of a workspace, oldest first, read from the database. */
export async function auditOf(t: TestApp, workspaceUuid: string) {
  const rows = await t.runtime.db.kysely
    .selectFrom('audit_log')
    .selectAll()
    .where('workspace_uuid', '=', workspaceUuid)
    .orderBy('at')
    .orderBy('id')
    .execute();
  return rows.map((r) => ({
    action: r.action,
    actor: r.actor_uuid,
    target: { type: r.target_type, uuid: r.target_uuid },
    details: typeof r.details === 'string' ? JSON.parse(r.details) : r.details,
  }));
}
