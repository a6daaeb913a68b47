import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser } from '../../helpers/factories.js';
import { captureLog, createWorkspace, invite, join, keyIn } from './workspace-helpers.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const CACHE_MS = 1000;

/** Polls until the key's request answers `status`; how long that took (ms), or -1 after `limitMs`. */
async function until(t: TestApp, key: string, status: number, limitMs: number): Promise<number> {
  const started = Date.now();
  while (Date.now() - started <= limitMs) {
    if ((await call(t.app, 'GET', '/agent/list', { headers: { 'x-api-key': key } })).statusCode === status) {
      return Date.now() - started;
    }
    await sleep(10);
  }
  return -1;
}

// Two instances sharing one database, as in a deployment with several servers: on PostgreSQL each
// listens for changes; on SQLite (one file) each watches for the other's writes.
describe.each(DATABASES)('workspaces across two instances on $name', (database) => {
  let a: TestApp;
  let b: TestApp;
  let logged: Array<Record<string, unknown>>;

  beforeAll(async () => {
    a = await buildTestApp(database, { config: { credentialCacheMs: CACHE_MS } });
    b = await buildTestApp(database, { config: { dataDir: a.config.dataDir, credentialCacheMs: CACHE_MS } });
    logged = captureLog(a);
    if (database.name === 'postgres') await sleep(200); // both listeners connected
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('a removal on one instance makes the other refuse the removed member’s key within the cache bound', async () => {
    const owner = await createUser(a);
    const member = await createUser(a);
    const ws = (await createWorkspace(a, owner)).uuid;
    await join(a, logged, ws, owner, member, 'admin');
    const teamKey = await keyIn(a, member, ws);
    // Both instances have the key cached.
    for (const t of [a, b]) {
      const r = await call(t.app, 'GET', '/agent/list', { headers: { 'x-api-key': teamKey.key } });
      expect(r.statusCode, r.body).toBe(200);
    }
    const removed = await call(a.app, 'DELETE', `/workspaces/${ws}/members/${member.uuid}`, { token: owner.token });
    expect(removed.statusCode).toBe(204);
    expect((await call(a.app, 'GET', '/agent/list', { headers: { 'x-api-key': teamKey.key } })).statusCode).toBe(401);
    expect(await until(b, teamKey.key, 401, CACHE_MS)).toBeGreaterThanOrEqual(0);
    expect((await call(b.app, 'GET', `/workspaces/${ws}`, { token: member.token })).statusCode).toBe(404);
  });

  it('the same invitation accepted on both instances at once succeeds exactly once', async () => {
    const owner = await createUser(a);
    const invitee = await createUser(a);
    for (let round = 0; round < 5; round++) {
      const ws = (await createWorkspace(a, owner, `Race ${round}`)).uuid;
      const token = await invite(a, logged, ws, owner, invitee.email, 'member');
      const answers = await Promise.all(
        [a, b, a, b].map((t) => call(t.app, 'POST', '/invitations/accept', { token: invitee.token, body: { token } })),
      );
      const statuses = answers.map((r) => r.statusCode);
      expect(statuses.filter((s) => s === 200)).toHaveLength(1);
      expect(statuses.filter((s) => s !== 200).every((s) => s === 400)).toBe(true);
      const members = (await call(b.app, 'GET', `/workspaces/${ws}/members`, { token: owner.token })).json().members;
      expect(members).toHaveLength(2);
      const accepts = await a.runtime.db.kysely
        .selectFrom('audit_log')
        .select('id')
        .where('workspace_uuid', '=', ws)
        .where('action', '=', 'invitation.accept')
        .execute();
      expect(accepts).toHaveLength(1);
    }
  });
});
