import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Role } from '../../../src/lib/principal.js';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser } from '../../helpers/factories.js';

describe.each(DATABASES)('deleting a user who belongs to teams on $name', (database) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp(database);
  });
  afterAll(() => t.close());

  async function team(members: Array<[string, Role]>) {
    const uuid = randomUUID();
    const at = new Date().toISOString();
    const db = t.runtime.db.kysely;
    await db
      .insertInto('workspaces')
      .values({ uuid, name: 'Team', personal: 0, created_at: at, updated_at: at, deleted_at: null })
      .execute();
    for (const [user, role] of members) {
      await db
        .insertInto('workspace_members')
        .values({ workspace_uuid: uuid, user_uuid: user, role, joined_at: at })
        .execute();
    }
    return uuid;
  }

  it('is refused while they are the only owner of a team with other members', async () => {
    const [owner, member] = [await createUser(t), await createUser(t)];
    const shared = await team([
      [owner.uuid, 'owner'],
      [member.uuid, 'member'],
    ]);
    await expect(t.accounts.deleteByEmail(owner.email)).rejects.toMatchObject({ code: 'LAST_OWNER' });
    // Nothing changed: the owner still works in the team.
    const res = await call(t.app, 'GET', '/agent/list', {
      token: owner.token,
      headers: { 'x-taskhook-workspace': shared },
    });
    expect(res.statusCode).toBe(200);
  });

  it('marks their personal workspace and the teams only they were in deleted (for the purge), and leaves shared teams to the others', async () => {
    const [leaving, staying] = [await createUser(t), await createUser(t)];
    const solo = await team([[leaving.uuid, 'owner']]);
    const shared = await team([
      [leaving.uuid, 'admin'],
      [staying.uuid, 'owner'],
    ]);
    await t.accounts.deleteByEmail(leaving.email);
    const db = t.runtime.db.kysely;
    const rows = await db
      .selectFrom('workspaces')
      .select(['uuid', 'deleted_at'])
      .where('uuid', 'in', [leaving.uuid, solo, shared])
      .execute();
    const state = Object.fromEntries(rows.map((r) => [r.uuid, r.deleted_at === null ? 'live' : 'deleted']));
    // The personal workspace is marked deleted like a solo team: the background purge removes
    // everything of both by the same rule as any deleted workspace (workspace-walk.test.ts).
    expect(state).toEqual({ [leaving.uuid]: 'deleted', [solo]: 'deleted', [shared]: 'live' });
    const members = await db
      .selectFrom('workspace_members')
      .select('user_uuid')
      .where('workspace_uuid', '=', shared)
      .execute();
    expect(members.map((m) => m.user_uuid)).toEqual([staying.uuid]);
  });
});
